import { enqueueClassifyAfterCollect, UnrecoverableError } from '@assistant/sdk';
import { callGithub, type GithubClient, isStatus, ownerLogin } from './client.ts';
import {
  type Collected,
  type GithubComment,
  type GithubIssueData,
  type GithubPullData,
  itemFacts,
  itemNoteBody,
} from './facts.ts';
import { type GithubContext, type GithubPlatform, type ItemRef, itemNotePath } from './github-settings.ts';

/** The latest `count` comments of an item that has `total` (GitHub lists them oldest first, 100 a page at most). */
async function latestComments(
  octokit: GithubClient,
  ref: ItemRef,
  total: number,
  count: number,
  signal: AbortSignal,
): Promise<GithubComment[]> {
  if (count === 0 || total === 0) return [];
  const perPage = 100;
  const last = Math.max(1, Math.ceil(total / perPage));
  const pages = last > 1 && total % perPage < count && total % perPage !== 0 ? [last - 1, last] : [last];
  const comments: GithubComment[] = [];
  for (const page of pages) {
    const response = await octokit.rest.issues.listComments({
      owner: ref.owner,
      repo: ref.repo,
      issue_number: ref.number,
      per_page: perPage,
      page,
      request: { signal },
    });
    comments.push(...(response.data as GithubComment[]));
  }
  return comments.slice(-count);
}

/** Reads one item from GitHub: the issue or pull request, its latest comments, and a pull request's reviews and checks. */
export async function readItem(
  context: GithubContext,
  platform: GithubPlatform,
  ref: ItemRef,
): Promise<Collected | undefined> {
  const { signal } = context;
  const count = context.instance.settings.comments;
  return callGithub(context, async (octokit) => {
    try {
      const request = { signal };
      const base = { owner: ref.owner, repo: ref.repo };
      if (platform === 'issues') {
        const issue = (await octokit.rest.issues.get({ ...base, issue_number: ref.number, request }))
          .data as GithubIssueData;
        const comments = await latestComments(octokit, ref, issue.comments ?? 0, count, signal);
        return { platform, ref, issue, comments };
      }
      const pull = (await octokit.rest.pulls.get({ ...base, pull_number: ref.number, request })).data as GithubPullData;
      const [comments, reviews, checkRuns, status] = await Promise.all([
        latestComments(octokit, ref, pull.comments ?? 0, count, signal),
        octokit.rest.pulls.listReviews({ ...base, pull_number: ref.number, per_page: 100, request }),
        octokit.rest.checks.listForRef({ ...base, ref: pull.head.sha, per_page: 100, request }),
        octokit.rest.repos.getCombinedStatusForRef({ ...base, ref: pull.head.sha, per_page: 100, request }),
      ]);
      return {
        platform,
        ref,
        issue: pull,
        pull,
        comments,
        reviews: reviews.data,
        checkRuns: checkRuns.data.check_runs,
        statuses: status.data.statuses,
      };
    } catch (error) {
      // Deleted, transferred, or no longer visible to these credentials.
      if (isStatus(error, 404) || isStatus(error, 410)) return undefined;
      throw error;
    }
  });
}

/**
 * `github.{pull_requests,issues}.collect` (`{owner, repo, number}`): reads one item (for a pull request also its
 * reviews, check runs and commit statuses) and writes its note with the facts automations test and a fenced excerpt
 * of the description and latest comments. Then classify, which asks the model only when the text changed. An item
 * that is gone (deleted, or no longer visible) is marked `synced: gone` on its note.
 */
export async function collect(context: GithubContext<ItemRef>) {
  const platform = context.platform?.name as GithubPlatform | undefined;
  if (platform !== 'pull_requests' && platform !== 'issues') {
    throw new UnrecoverableError(`github collect runs as a stage of pull_requests or issues, not ${String(platform)}`);
  }
  const { owner, repo, number } = context.payload ?? ({} as ItemRef);
  if (typeof owner !== 'string' || typeof repo !== 'string' || !Number.isInteger(number) || number < 1) {
    throw new UnrecoverableError('a github collect payload is {owner, repo, number}');
  }
  const ref = { owner, repo, number };
  const notePath = itemNotePath(context.instance.name, platform, ref);
  const login = await ownerLogin(context.instance, context.signal);
  const collected = await readItem(context, platform, ref);
  const existing = await context.notes.read(notePath);
  if (!collected) {
    if (existing && existing.data.synced !== 'gone') {
      await context.notes.update(notePath, { set: { synced: 'gone' } });
      await context.log.human(`${owner}/${repo}#${number} is gone (deleted, transferred or no longer visible)`, {
        link: notePath,
      });
    }
    return { note: notePath, gone: true };
  }
  const facts = itemFacts(collected, login);
  const data = { ...facts, synced: 'present', collected_at: new Date().toISOString() };
  const body = itemNoteBody(facts);
  if (existing) await context.notes.update(notePath, { set: data as never, body });
  else {
    // A webhook's collect and a check's may race for a new item: the second one updates the first one's note.
    await context.notes.create(notePath, { data: data as never, body }).catch(async (error: unknown) => {
      if (!(await context.notes.read(notePath))) throw error;
      await context.notes.update(notePath, { set: data as never, body });
    });
  }
  await enqueueClassifyAfterCollect(context, notePath);
  return { note: notePath, title: facts.title, updated_at: facts.updated_at };
}
