import { UnrecoverableError } from '@assistant/sdk';
import { callGithubPatiently } from './client.ts';
import type { GithubContext } from './github-settings.ts';

interface CreateIssueInputs {
  repo?: unknown;
  title?: unknown;
  body?: unknown;
}

/** The hidden line that ties an issue to the task that opened it, so a retried task finds it instead of opening another. */
function taskMarker(taskId: string): string {
  return `<!-- assistant-task: ${taskId} -->`;
}

/**
 * `service.github.create_issue` (`{inputs: {repo: owner/name, title, body}}`): opens an issue. Irreversible
 * (everyone watching the repository is notified), so the worker runs it only for a rule that may act alone or an
 * approval. It happens once: the issue's body ends with a hidden marker naming the task, and a retry (after a
 * timeout or a 5xx, when the first request may have gone through) looks for that marker among the repository's
 * newest issues before opening one.
 */
export async function createIssue(context: GithubContext<{ inputs?: CreateIssueInputs }>) {
  const inputs = context.payload?.inputs ?? {};
  const repo = typeof inputs.repo === 'string' ? inputs.repo.trim() : '';
  const match = /^([A-Za-z0-9-]+)\/([A-Za-z0-9._-]+)$/.exec(repo);
  if (!match?.[1] || !match[2])
    throw new UnrecoverableError(`create_issue: \`repo\` must be owner/name, not ${JSON.stringify(inputs.repo)}`);
  const title = typeof inputs.title === 'string' ? inputs.title.trim() : '';
  if (!title) throw new UnrecoverableError('create_issue: `title` is required');
  if (title.length > 256)
    throw new UnrecoverableError('create_issue: `title` is longer than GitHub allows (256 characters)');
  const text = typeof inputs.body === 'string' ? inputs.body : inputs.body === undefined ? '' : String(inputs.body);
  const [owner, name] = [match[1], match[2]];
  const marker = taskMarker(context.task.id);
  const what = `create_issue in ${owner}/${name}`;
  const request = { signal: context.signal };
  const found = (issue: { html_url: string; number: number }) => ({
    url: issue.html_url,
    number: issue.number,
    repo: `${owner}/${name}`,
    title,
  });
  if (context.task.attempts > 1) {
    const earlier = await callGithubPatiently(context, what, async (octokit) =>
      octokit.rest.issues.listForRepo({
        owner,
        repo: name,
        state: 'all',
        sort: 'created',
        direction: 'desc',
        since: new Date(Date.parse(context.task.createdAt) - 60_000).toISOString(),
        per_page: 100,
        request,
      }),
    );
    const mine = earlier.data.find((issue) => issue.body?.includes(marker));
    if (mine) return { ...found(mine), reused: true };
  }
  // While GitHub is down the task waits without spending attempts (a retry finds an issue the first try opened by its
  // marker); what GitHub refuses (no such repository, issues disabled, no permission) fails it at once.
  const created = await callGithubPatiently(context, what, async (octokit) =>
    octokit.rest.issues.create({
      owner,
      repo: name,
      title,
      body: `${text.trimEnd()}\n\n${marker}\n`,
      request: { ...request, retries: 0 },
    }),
  );
  return found(created.data);
}
