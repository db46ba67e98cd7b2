import { UnrecoverableError } from '@assistant/sdk';
import type { EmailContext } from './email-settings.ts';
import { sendReplyText } from './reply-text.ts';

/** The note fields automations may test, as the manifest declares them. */
const fieldNames = [
  'from_address',
  'from_domain',
  'subject',
  'date',
  'is_noreply',
  'is_calendar_event',
  'has_attachments',
  'has_list_unsubscribe',
  'authentication',
  'is_reply',
  'flags',
  'size',
];

/**
 * `email.inbox.evaluate` (`{note}`): runs the automations over the message and takes their actions, once each; the
 * text of a `send_reply` is written here (an LLM call), so a model outage makes this task wait, not the approval.
 */
export async function evaluate(context: EmailContext<{ note: string }>) {
  const notePath = context.payload.note;
  const note = await context.notes.read(notePath);
  if (!note) throw new UnrecoverableError(`no note ${notePath}`);
  const fields = Object.fromEntries(fieldNames.map((name) => [name, note.data[name]]));
  const matches = context.automations.evaluate({
    classifications: (note.data.classifications ?? {}) as Record<string, unknown>,
    fields,
  });
  // A reply to send is written now, before the owner is asked: the approval shows it and the act sends exactly it.
  const result = await context.enqueueActions({
    notePath,
    matches,
    title: `"${String(note.data.subject ?? '')}"`,
    writeText: sendReplyText(context, note.data),
  });
  return {
    matched: matches.map((match) => match.rule),
    enqueued: result.enqueued.map((entry) => entry.key),
    skipped: result.skipped.map((entry) => entry.key),
    approvals: result.approvals.map((entry) => entry.id),
  };
}
