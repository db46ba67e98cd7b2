import type { HandlerContext } from '@assistant/sdk';
import type {
  GithubIssuesPlatformSettings,
  GithubPullRequestsPlatformSettings,
  GithubSettings,
} from './settings.generated.ts';

// The settings types are generated from manifest.yaml (`npm run generate:settings`), the one place they are declared.
export type { GithubIssuesPlatformSettings, GithubPullRequestsPlatformSettings, GithubSettings };

export type GithubContext<Payload = unknown> = HandlerContext<Payload, GithubSettings>;

/** The two platforms: pull requests and issues. */
export type GithubPlatform = 'pull_requests' | 'issues';

/** One pull request or issue: what a collect payload, a webhook and a note path name. */
export interface ItemRef {
  owner: string;
  repo: string;
  number: number;
}

/** The folder of an item kind in the notes: GitHub's own word for each (`/pulls/7`, `/issues/7`). */
export function kindFolder(platform: GithubPlatform): 'pulls' | 'issues' {
  return platform === 'pull_requests' ? 'pulls' : 'issues';
}

/** A path segment as it may appear in a note path: GitHub's names are already safe; anything else becomes `_`. */
function safe(value: string): string {
  return value.replace(/[^A-Za-z0-9._-]/g, '_').replace(/^\.+/, '_');
}

/** The folder of an instance's notes: `github/<instance>`. */
export function instanceFolder(instance: string): string {
  return `github/${safe(instance)}`;
}

/**
 * Where an item's note lives: `github/<instance>/<owner>/<repo>/{pulls|issues}/<number>.md`. Owner and repository
 * are lower-cased (GitHub's names are case-insensitive), so a webhook and a search that spell them differently name
 * one note.
 */
export function itemNotePath(instance: string, platform: GithubPlatform, item: ItemRef): string {
  return `${instanceFolder(instance)}/${safe(item.owner.toLowerCase())}/${safe(item.repo.toLowerCase())}/${kindFolder(platform)}/${Math.trunc(item.number)}.md`;
}

/** The item a note path names, or undefined for a path that is not an item note of this layout. */
export function parseItemNotePath(
  notePath: string,
): { instance: string; platform: GithubPlatform; item: ItemRef } | undefined {
  const match = /^github\/([^/]+)\/([^/]+)\/([^/]+)\/(pulls|issues)\/(\d+)\.md$/.exec(notePath);
  if (!match) return undefined;
  const [, instance = '', owner = '', repo = '', kind, number = '0'] = match;
  return {
    instance,
    platform: kind === 'pulls' ? 'pull_requests' : 'issues',
    item: { owner, repo, number: Number(number) },
  };
}

/** `owner/name` from a repository API URL (`https://api.github.com/repos/octo/hello`) or undefined. */
export function repoFromApiUrl(url: string): { owner: string; repo: string } | undefined {
  const match = /\/repos\/([^/]+)\/([^/]+?)(?:\/|$)/.exec(url);
  return match?.[1] && match[2] ? { owner: match[1], repo: match[2] } : undefined;
}
