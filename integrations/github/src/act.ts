import { type ActPayload, actPayloadSchema, UnrecoverableError } from '@assistant/sdk';
import {
  assertNotRateLimited,
  callGithubPatiently,
  type GithubClient,
  githubClient,
  isStatus,
  notTakenError,
  ownerLogin,
} from './client.ts';
import type { GithubContext, ItemRef } from './github-settings.ts';
import { parseItemNotePath } from './github-settings.ts';

const mergeMethods = ['merge', 'squash', 'rebase'] as const;

/** The argument of an action as text, or undefined when it has none. */
function argumentText(action: ActPayload['actions'][number]): string | undefined {
  return typeof action.argument === 'string' && action.argument.trim() !== '' ? action.argument : undefined;
}

/**
 * The comment a `comment` action posts: the text it carries, exactly (written when the item was evaluated, from the
 * template or by the LLM, and shown in the approval). Without one (a request made before comments were written
 * ahead, a person's `assistant act`, a chat's proposal) nothing is posted: writing it now would post words no person
 * saw, which anyone who can write in the thread could steer.
 */
function commentToPost(payload: ActPayload, action: ActPayload['actions'][number]): string {
  if (action.text !== undefined && action.text.trim() !== '') return action.text;
  const how = payload.approval ? `approval ${payload.approval}` : `rule "${payload.rule}"`;
  throw new UnrecoverableError(
    `comment: ${how} carries no comment text, so there is no text a person saw to post; nothing was posted. The comment is written when the item is evaluated and shown in its approval request: to be asked again, remove ${action.key} from the note's actions_taken and delete the old request under approvals/; the next evaluation of the item asks with the text. By hand, give the words: assistant act … comment --text "…"`,
  );
}

/** A text's start as the human log quotes it: one line, at most 80 characters. */
function quoted(text: string): string {
  const line = text.replace(/\s+/g, ' ').trim();
  return JSON.stringify(line.length > 80 ? `${line.slice(0, 79)}…` : line);
}

type PullReply = Awaited<ReturnType<GithubClient['rest']['pulls']['get']>>;

/**
 * Checks on GitHub, before an approval or merge is recorded as started, that the pull request is still open and at
 * the commit the note (and so the approval) shows: a branch that moved on is someone else's code, not what was
 * approved. (The merge itself is pinned to that commit as well: GitHub refuses it when the head moved in between.)
 */
async function assertHeadUnchanged(
  ref: ItemRef,
  headSha: string,
  what: string,
  signal: AbortSignal,
  read: (call: (octokit: GithubClient) => Promise<PullReply>) => Promise<PullReply>,
): Promise<void> {
  if (!/^[0-9a-f]{40}$/i.test(headSha)) {
    throw new UnrecoverableError(
      `${what}: the note has no head_sha to pin it to; let collect read the pull request first`,
    );
  }
  const pull = await read((octokit) =>
    octokit.rest.pulls.get({ owner: ref.owner, repo: ref.repo, pull_number: ref.number, request: { signal } }),
  );
  if (pull.data.merged || pull.data.state !== 'open') {
    throw new UnrecoverableError(
      `${what}: ${ref.owner}/${ref.repo}#${ref.number} is ${pull.data.merged ? 'merged' : pull.data.state} already`,
    );
  }
  if (pull.data.head.sha !== headSha) {
    throw new UnrecoverableError(
      `${what}: ${ref.owner}/${ref.repo}#${ref.number} has moved on to ${pull.data.head.sha.slice(0, 12)} since ${headSha.slice(0, 12)} was approved; nothing was done (review the new commits, then remove \`${what}\` from the note's actions_started and actions_taken to ask again)`,
    );
  }
}

/**
 * `github.{pull_requests,issues}.act`: performs one rule's actions on one item, on GitHub. Labels, assignees, review
 * requests, closing and reopening can be undone and are simply done (each is idempotent). A comment, an approving
 * review and a merge cannot: each runs at most once per item (`actOnce` records it on the note before the request,
 * which is sent without automatic retries), and approvals and merges only at the commit the note shows.
 */
export async function act(context: GithubContext<ActPayload>) {
  const payload = actPayloadSchema.parse(context.payload);
  const note = await context.notes.read(payload.item);
  if (!note) throw new UnrecoverableError(`no note ${payload.item}`);
  const parsed = parseItemNotePath(payload.item);
  if (!parsed) throw new UnrecoverableError(`${payload.item} is not a GitHub item's note`);
  const ref = parsed.item;
  const base = { owner: ref.owner, repo: ref.repo, issue_number: ref.number };
  const request = { signal: context.signal };
  const title = `${ref.owner}/${ref.repo}#${ref.number} "${String(note.data.title ?? '')}"`;
  const headSha = String(note.data.head_sha ?? '');
  const done: string[] = [];
  const started = new Set(
    (Array.isArray(note.data.actions_started) ? note.data.actions_started : []).map(
      (entry) => (entry as { action?: unknown } | null)?.action,
    ),
  );

  /**
   * A request that can be repeated safely: during an outage the task waits for GitHub instead of failing; what GitHub
   * refuses (no permission, an invalid label) fails the task at once, saying so.
   */
  const soft = <T>(call: (octokit: GithubClient) => Promise<T>): Promise<T> =>
    callGithubPatiently(context, title, call);

  /** An irreversible write: once per item, never retried by the client, refused (not recorded) while rate limited. */
  const once = async <T>(key: string, run: (octokit: GithubClient) => Promise<T>) => {
    assertNotRateLimited(context.instance);
    return context.actOnce({ notePath: payload.item, key }, async () => {
      try {
        return await run(githubClient(context.instance));
      } catch (error) {
        throw notTakenError(context.instance, error) ?? error;
      }
    });
  };

  for (const action of payload.actions) {
    const argument = argumentText(action);
    switch (action.name) {
      case 'label':
      case 'unlabel':
      case 'request_review':
        if (!argument) throw new UnrecoverableError(`\`${action.name}\` needs an argument`);
        break;
      default:
    }
    switch (action.name) {
      case 'label':
        await soft((octokit) => octokit.rest.issues.addLabels({ ...base, labels: [argument ?? ''], request }));
        done.push(`labelled ${argument}`);
        break;
      case 'unlabel':
        await soft(async (octokit) => {
          try {
            await octokit.rest.issues.removeLabel({ ...base, name: argument ?? '', request });
          } catch (error) {
            // Not there (any more): what unlabel wants.
            if (!isStatus(error, 404)) throw error;
          }
        });
        done.push(`unlabelled ${argument}`);
        break;
      case 'assign': {
        const login = argument ?? (await soft(() => ownerLogin(context.instance, context.signal)));
        await soft((octokit) => octokit.rest.issues.addAssignees({ ...base, assignees: [login], request }));
        done.push(`assigned @${login}`);
        break;
      }
      case 'request_review':
        await soft((octokit) =>
          octokit.rest.pulls.requestReviewers({
            owner: ref.owner,
            repo: ref.repo,
            pull_number: ref.number,
            reviewers: [argument ?? ''],
            request,
          }),
        );
        done.push(`asked @${argument} for a review`);
        break;
      case 'close':
      case 'reopen':
        await soft((octokit) =>
          octokit.rest.issues.update({ ...base, state: action.name === 'close' ? 'closed' : 'open', request }),
        );
        done.push(action.name === 'close' ? 'closed' : 'reopened');
        break;
      case 'comment': {
        // Taken before (this task's earlier attempt, or another task): do not have the model write it again.
        if (started.has(action.key)) break;
        const text = commentToPost(payload, action);
        const posted = await once(action.key, async (octokit) => {
          const comment = await octokit.rest.issues.createComment({
            ...base,
            body: text,
            request: { ...request, retries: 0 },
          });
          await context.notes.update(payload.item, {
            // What was posted, on the note: the act task has it too, but tasks are pruned and notes are kept.
            set: { commented_at: new Date().toISOString(), comment_url: comment.data.html_url, comment_text: text },
          });
          return comment.data.html_url;
        });
        if (posted.ran) done.push(`commented (${posted.value}: ${quoted(text)})`);
        break;
      }
      case 'approve_review': {
        await assertHeadUnchanged(ref, headSha, action.key, context.signal, soft);
        const approved = await once(action.key, async (octokit) => {
          await octokit.rest.pulls.createReview({
            owner: ref.owner,
            repo: ref.repo,
            pull_number: ref.number,
            commit_id: headSha,
            event: 'APPROVE',
            request: { ...request, retries: 0 },
          });
          await context.notes.update(payload.item, {
            set: { approved_at: new Date().toISOString(), approved_sha: headSha },
          });
        });
        if (approved.ran) done.push(`approved ${headSha.slice(0, 12)}`);
        break;
      }
      case 'merge': {
        const method = (argument ?? 'merge') as (typeof mergeMethods)[number];
        if (!mergeMethods.includes(method)) {
          throw new UnrecoverableError(`\`merge\` takes merge, squash or rebase, not ${JSON.stringify(argument)}`);
        }
        await assertHeadUnchanged(ref, headSha, action.key, context.signal, soft);
        const merged = await once(action.key, async (octokit) => {
          const reply = await octokit.rest.pulls.merge({
            owner: ref.owner,
            repo: ref.repo,
            pull_number: ref.number,
            sha: headSha,
            merge_method: method,
            request: { ...request, retries: 0 },
          });
          await context.notes.update(payload.item, {
            set: {
              merged_at: new Date().toISOString(),
              merged_sha: headSha,
              merge_commit: reply.data.sha,
              state: 'merged',
            },
          });
          return reply.data.sha;
        });
        if (merged.ran) done.push(`merged ${headSha.slice(0, 12)} (${method})`);
        break;
      }
      default:
        throw new UnrecoverableError(`the github integration has no action \`${action.name}\``);
    }
  }
  if (done.length === 0) return { done };
  // `done:` sets the line apart from the `decided:` one written when the rule chose the actions.
  await context.log.human(`done: ${done.join(', ')}: ${title}`, {
    reason: `rule "${payload.rule}" (${payload.provenance})${payload.approval ? `, approved (${payload.approval})` : ''}`,
    link: payload.item,
  });
  return { done };
}
