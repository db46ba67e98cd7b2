import path from 'node:path';
import { needsClassification, UnrecoverableError } from '@assistant/sdk';
import { callGithub, isStatus, ownerLogin } from './client.ts';
import {
  type GithubContext,
  type GithubPlatform,
  type ItemRef,
  instanceFolder,
  itemNotePath,
  parseItemNotePath,
  repoFromApiUrl,
} from './github-settings.ts';
import { readStateFile, writeStateFile } from './state-file.ts';

/** One item a search found. */
interface Listed extends ItemRef {
  updated_at: string;
}

/** What check keeps between runs, per instance and platform: the last search's ETag and what it listed. */
interface SearchState {
  query: string;
  etag?: string;
  items: Listed[];
  /** Whether the listing held every item the search found (not cut at `limit`): only then are the others gone. */
  complete: boolean;
  checked_at: string;
}

const qualifiers: Record<string, string> = {
  review_requested: 'review-requested',
  assigned: 'assignee',
  authored: 'author',
  mentioned: 'mentions',
};

/** A pull request whose checks were still running is read again this long after it was last collected. */
const pendingChecksRefreshMs = 5 * 60_000;

/**
 * The search for the open items that involve `login`: `is:pr is:open archived:false (review-requested:me OR
 * assignee:me …) (org:acme OR repo:me/dotfiles)`, in GitHub's advanced search syntax.
 */
export function searchQuery(options: {
  platform: GithubPlatform;
  login: string;
  involves: readonly string[];
  orgs: readonly string[];
  repos: readonly string[];
}): string {
  const group = (terms: string[]) => (terms.length > 1 ? `(${terms.join(' OR ')})` : (terms[0] ?? ''));
  const involves = options.involves.flatMap((name) =>
    qualifiers[name] ? [`${qualifiers[name]}:${options.login}`] : [],
  );
  if (involves.length === 0)
    throw new UnrecoverableError(`platform ${options.platform}: \`involves\` lists nothing to search for`);
  const scope = [...options.orgs.map((org) => `org:${org}`), ...options.repos.map((repo) => `repo:${repo}`)];
  return [
    options.platform === 'pull_requests' ? 'is:pr' : 'is:issue',
    'is:open',
    'archived:false',
    group(involves),
    group(scope),
  ]
    .filter(Boolean)
    .join(' ');
}

function stateFile(context: GithubContext, platform: GithubPlatform): string {
  return path.join(context.dataDir, instanceFolder(context.instance.name), `search-${platform}.json`);
}

interface SearchItem {
  number: number;
  updated_at: string;
  repository_url: string;
}

/**
 * Runs the search: the first page with the last ETag (an unchanged result is a 304, which GitHub does not count
 * against the rate limit), then the following pages up to `limit`. Undefined when nothing changed.
 */
async function search(
  context: GithubContext,
  query: string,
  etag: string | undefined,
): Promise<{ items: Listed[]; etag?: string; complete: boolean } | undefined> {
  const { limit } = context.instance.settings;
  const perPage = Math.min(100, limit);
  return callGithub(context, async (octokit) => {
    const items: Listed[] = [];
    let newEtag: string | undefined;
    let total = 0;
    let incomplete = false;
    for (let page = 1; items.length < limit; page += 1) {
      let response: {
        data: { total_count: number; incomplete_results: boolean; items: SearchItem[] };
        headers: { etag?: string };
      };
      try {
        response = await octokit.request('GET /search/issues', {
          q: query,
          sort: 'updated',
          order: 'desc',
          per_page: perPage,
          page,
          advanced_search: 'true',
          headers: page === 1 && etag ? { 'if-none-match': etag } : {},
          request: { signal: context.signal },
        });
      } catch (error) {
        if (page === 1 && isStatus(error, 304)) return undefined;
        throw error;
      }
      if (page === 1) newEtag = response.headers.etag;
      total = response.data.total_count;
      incomplete ||= response.data.incomplete_results;
      for (const item of response.data.items) {
        const repo = repoFromApiUrl(item.repository_url);
        if (repo && items.length < limit) items.push({ ...repo, number: item.number, updated_at: item.updated_at });
      }
      // GitHub's search returns at most 1,000 results.
      if (response.data.items.length < perPage || page * perPage >= Math.min(total, 1_000)) break;
    }
    return { items, ...(newEtag ? { etag: newEtag } : {}), complete: !incomplete && items.length >= total };
  });
}

/**
 * `github.{pull_requests,issues}.check`: one search for the open items that need the owner (review requested,
 * assigned, authored, mentioned: the platform's `involves`), scoped by `orgs` and `repos`. Enqueues collect for an
 * item without a note, one updated since it was collected, one that is back, and a pull request whose checks were
 * running when it was last read; classify for one whose classification is missing or stale. Items the search no
 * longer finds are marked `synced: gone`, never deleted.
 */
export async function check(context: GithubContext) {
  const platform = context.platform?.name as GithubPlatform | undefined;
  if (platform !== 'pull_requests' && platform !== 'issues') {
    throw new UnrecoverableError(`github check runs as a stage of pull_requests or issues, not ${String(platform)}`);
  }
  const { settings, name } = context.instance;
  const login = await ownerLogin(context.instance, context.signal);
  const query = searchQuery({
    platform,
    login,
    involves: (context.platform?.settings.involves as string[] | undefined) ?? [],
    orgs: settings.orgs,
    repos: settings.repos,
  });
  const file = stateFile(context, platform);
  const previous = await readStateFile<SearchState>(file);
  const sameQuery = previous?.query === query;
  const found = await search(context, query, sameQuery ? previous?.etag : undefined);
  const state: SearchState =
    found === undefined && previous && sameQuery
      ? { ...previous, checked_at: new Date().toISOString() }
      : {
          query,
          ...(found?.etag ? { etag: found.etag } : {}),
          items: found?.items ?? [],
          complete: found?.complete ?? false,
          checked_at: new Date().toISOString(),
        };

  let collect = 0;
  let classify = 0;
  const listed = new Set<string>();
  for (const item of state.items) {
    const notePath = itemNotePath(name, platform, item);
    listed.add(notePath);
    let note: Awaited<ReturnType<typeof context.notes.read>>;
    try {
      note = await context.notes.read(notePath);
    } catch (error) {
      // A note a person broke is reported and left alone, never overwritten by a collect.
      context.log.warn(`skipping ${notePath}: ${(error as Error).message}`);
      continue;
    }
    const collectedAt = Date.parse(String(note?.data.collected_at ?? ''));
    const stale =
      !note ||
      note.data.updated_at !== item.updated_at ||
      note.data.synced === 'gone' ||
      (note.data.checks === 'pending' && !(Date.now() - collectedAt < pendingChecksRefreshMs));
    if (stale) {
      const outcome = await context.enqueue({
        stage: 'collect',
        payload: { owner: item.owner, repo: item.repo, number: item.number },
      });
      if (outcome.status === 'enqueued') collect += 1;
    } else if (note && needsClassification(note.data)) {
      // Collected, but its classification failed or never ran (the model was down): ask again.
      const outcome = await context.enqueue({ stage: 'classify', payload: { note: notePath } });
      if (outcome.status === 'enqueued') classify += 1;
    }
  }

  let gone = 0;
  if (state.complete) {
    const folder = instanceFolder(name);
    for (const notePath of await context.notes.list(folder)) {
      if (listed.has(notePath) || parseItemNotePath(notePath)?.platform !== platform) continue;
      const note = await context.notes.read(notePath).catch(() => undefined);
      if (note?.data.synced !== 'present') continue;
      await context.notes.update(notePath, { set: { synced: 'gone', gone_at: new Date().toISOString() } });
      gone += 1;
    }
  }
  await writeStateFile(file, state);
  const what = platform === 'pull_requests' ? 'pull requests' : 'issues';
  if (collect + gone > 0) {
    await context.log.human(`${collect} ${what} to read${gone > 0 ? `, ${gone} no longer need you` : ''} (${name})`, {
      reason: `searched GitHub for open ${what} that involve @${login}: ${state.items.length} found`,
    });
  }
  return {
    query,
    listed: state.items.length,
    unchanged: found === undefined,
    collect,
    classify,
    gone,
  };
}
