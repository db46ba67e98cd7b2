import { UnrecoverableError } from '@assistant/sdk';
import { commentText } from './comment-text.ts';
import { fieldNames } from './facts.ts';
import type { GithubContext, GithubPlatform } from './github-settings.ts';

/**
 * `github.{pull_requests,issues}.evaluate` (`{note}`): runs the instance's automations over the item's facts and
 * classifications and takes their actions, each once per item (recorded on the note); irreversible ones become
 * approval requests unless the rule may act alone. The text of a `comment` is written here (its template rendered, or
 * an LLM call), so a model outage makes this task wait, not the approval.
 */
export async function evaluate(context: GithubContext<{ note: string }>) {
  const notePath = context.payload?.note;
  if (typeof notePath !== 'string') throw new UnrecoverableError('a github evaluate payload is {note}');
  const note = await context.notes.read(notePath);
  if (!note) throw new UnrecoverableError(`no note ${notePath}`);
  const platform = (context.platform?.name ?? 'issues') as GithubPlatform;
  const fields = Object.fromEntries((fieldNames[platform] ?? []).map((name) => [name, note.data[name]]));
  const matches = context.automations.evaluate({
    classifications: (note.data.classifications ?? {}) as Record<string, unknown>,
    fields,
  });
  const result = await context.enqueueActions({
    notePath,
    matches,
    title: `${String(note.data.repo)}#${String(note.data.number)} "${String(note.data.title ?? '')}"`,
    // A comment is written now, before the owner is asked: the approval shows it and the act posts exactly it.
    writeText: commentText(context, note.data),
  });
  return {
    matched: matches.map((match) => match.rule),
    enqueued: result.enqueued.map((entry) => entry.key),
    skipped: result.skipped.map((entry) => entry.key),
    approvals: result.approvals.map((entry) => entry.id),
  };
}
