import { type ActPayload, actPayloadSchema, UnrecoverableError } from '@assistant/sdk';
import { composeReply, replyRecipient } from './compose-reply.ts';
import type { EmailContext } from './email-settings.ts';
import { withImap } from './imap-session.ts';
import { deliver, findMessage, folderPath, moveMessage, resolveMaildir, setFlags } from './maildir.ts';
import { writeReply } from './reply-text.ts';
import { sendReply } from './send-reply.ts';
import { smtpIdentity } from './smtp-transport.ts';
import { planUnsubscribe, unsubscribe } from './unsubscribe.ts';

/**
 * `email.inbox.act`: performs the platform actions of one rule on one message, on the IMAP server, in one
 * connection: archive and move (the note follows the message to its new folder), flags, read state, and
 * `draft_reply` (the LLM writes a reply, saved to the drafts folder; nothing is sent). `send_reply` sends exactly the
 * text the action carries (written when the message was evaluated and shown in the approval), never a new one. Each
 * action done is a line in the human log.
 */
export async function act(context: EmailContext<ActPayload>) {
  const payload = actPayloadSchema.parse(context.payload);
  const settings = context.instance.settings;
  const note = await context.notes.read(payload.item);
  if (!note) throw new UnrecoverableError(`no note ${payload.item}`);
  const uid = Number(note.data.uid);
  const mailbox = String(note.data.mailbox ?? settings.mailbox);
  const subject = String(note.data.subject ?? '');
  // The reply is written before connecting: an LLM call can take a while, and the connection should not idle.
  const drafts = new Map<string, string>();
  for (const action of payload.actions) {
    if (action.name === 'draft_reply') drafts.set(action.key, await writeReply(context, note.data));
  }
  const done: string[] = [];
  // What cannot be undone goes first and is recorded on the note at once: a retry after a later failure (the IMAP
  // part) must not send the same reply or unsubscribe twice.
  // `actOnce` checks and records each under the note's lock as it starts, so an action listed twice, or in two tasks,
  // runs once.
  const once = { notePath: payload.item };
  for (const action of payload.actions) {
    if (action.name === 'send_reply') {
      if (note.data.replied_at) continue;
      // Checked before `actOnce` records it as started: a reply that cannot be sent (no smtp:, no plain sender
      // address) is refused, not taken for one that may have happened.
      smtpIdentity(settings);
      replyRecipient(note.data);
      const text = replyToSend(payload, action);
      const sent = await context.actOnce({ ...once, key: action.key }, async () => {
        await sendReply(context, note.data, text);
        // What was sent, on the note: the act task has it too, but tasks are pruned and notes are kept.
        await context.notes.update(payload.item, { set: { replied_at: new Date().toISOString(), reply_text: text } });
      });
      if (sent.ran) done.push(`sent a reply (${quoted(text)})`);
    } else if (action.name === 'unsubscribe') {
      if (note.data.unsubscribed_at) continue;
      const plan = await planUnsubscribe(context, note.data);
      const left = await context.actOnce({ ...once, key: action.key }, async () => {
        const how = await unsubscribe(context, plan);
        await context.notes.update(payload.item, {
          set: { unsubscribed_at: new Date().toISOString(), unsubscribed_by: how },
        });
        return how;
      });
      if (left.ran) done.push(`unsubscribed (${left.value})`);
    }
  }
  const mailboxActions = payload.actions.filter(
    (action) => action.name !== 'send_reply' && action.name !== 'unsubscribe',
  );
  if (mailboxActions.length > 0 && settings.maildir) {
    done.push(...(await actOnMaildir(context, payload, note.data, mailboxActions, drafts)));
  } else if (mailboxActions.length > 0) {
    await withImap(settings, context.signal, async (client) => {
      const lock = await client.getMailboxLock(mailbox);
      try {
        for (const action of mailboxActions) {
          switch (action.name) {
            case 'archive':
            case 'move': {
              const target = action.name === 'archive' ? settings.archive_folder : String(action.argument);
              const moved = await client.messageMove(String(uid), target, { uid: true });
              const newUid = moved ? moved.uidMap?.get(uid) : undefined;
              await context.notes.update(payload.item, {
                set: { mailbox: target, synced: 'moved', ...(newUid === undefined ? {} : { uid_in_folder: newUid }) },
              });
              break;
            }
            case 'flag':
              await client.messageFlagsAdd(String(uid), ['\\Flagged'], { uid: true });
              break;
            case 'unflag':
              await client.messageFlagsRemove(String(uid), ['\\Flagged'], { uid: true });
              break;
            case 'mark_read':
              await client.messageFlagsAdd(String(uid), ['\\Seen'], { uid: true });
              break;
            case 'mark_unread':
              await client.messageFlagsRemove(String(uid), ['\\Seen'], { uid: true });
              break;
            case 'draft_reply': {
              const raw = await composeReply({
                from: settings.username ?? '',
                original: note.data,
                text: drafts.get(action.key) ?? '',
              });
              await client.append(settings.drafts_folder, raw, ['\\Draft', '\\Seen']);
              break;
            }
            default:
              throw new UnrecoverableError(`the email integration cannot ${action.name} yet`);
          }
          done.push(action.name === 'move' ? `moved to ${String(action.argument)}` : pastTense(action.name));
        }
      } finally {
        lock.release();
      }
    });
  }
  if (done.length === 0) return { done };
  // `done:` sets the line apart from the `decided:` one written when the rule chose the actions.
  await context.log.human(`done: ${done.join(', ')}: "${subject}"`, {
    reason: `rule "${payload.rule}" (${payload.provenance})${payload.approval ? `, approved (${payload.approval})` : ''}`,
    link: payload.item,
  });
  return { done };
}

/**
 * The reply a `send_reply` sends: the text it carries, exactly. Without one (a request made before replies were
 * written ahead, a person's `assistant act`, a chat's proposal) nothing is sent: writing it now would send words no
 * person saw, which a sender could steer.
 */
function replyToSend(payload: ActPayload, action: ActPayload['actions'][number]): string {
  if (action.text !== undefined && action.text.trim() !== '') return action.text;
  const how = payload.approval ? `approval ${payload.approval}` : `rule "${payload.rule}"`;
  throw new UnrecoverableError(
    `send_reply: ${how} carries no reply text, so there is no text a person saw to send; nothing was sent. The reply is written when the message is evaluated and shown in its approval request: to be asked again, remove send_reply from the note's actions_taken and delete the old request under approvals/; the next evaluation of the message asks with the text. By hand, give the words: assistant act … send_reply --text "…"`,
  );
}

/** A text's start as the human log quotes it: one line, at most 80 characters. */
function quoted(text: string): string {
  const line = text.replace(/\s+/g, ' ').trim();
  return JSON.stringify(line.length > 80 ? `${line.slice(0, 79)}…` : line);
}

/** The same actions on a local Maildir: moves are renames into the folder, flags are letters in the file name. */
async function actOnMaildir(
  context: EmailContext<ActPayload>,
  payload: ActPayload,
  data: Record<string, unknown>,
  actions: ActPayload['actions'],
  drafts: Map<string, string>,
): Promise<string[]> {
  const settings = context.instance.settings;
  const root = resolveMaildir(settings.maildir ?? '', context.configDir);
  const folder = await folderPath(root, String(data.mailbox ?? settings.mailbox));
  let message = await findMessage(folder, String(data.uid));
  if (!message) throw new UnrecoverableError(`message ${String(data.uid)} is no longer in ${folder}`);
  const done: string[] = [];
  for (const action of actions) {
    const flags = new Set(message.flags);
    switch (action.name) {
      case 'archive':
      case 'move': {
        const target = action.name === 'archive' ? settings.archive_folder : String(action.argument);
        await moveMessage(message, await folderPath(root, target));
        await context.notes.update(payload.item, { set: { mailbox: target, synced: 'moved' } });
        done.push(action.name === 'move' ? `moved to ${target}` : pastTense(action.name));
        // The message is in another folder now: later actions of this rule would not find it here.
        return done;
      }
      case 'flag':
      case 'unflag':
      case 'mark_read':
      case 'mark_unread': {
        const flag = action.name.endsWith('flag') ? '\\Flagged' : '\\Seen';
        if (action.name === 'flag' || action.name === 'mark_read') flags.add(flag);
        else flags.delete(flag);
        message = await setFlags(message, [...flags].sort());
        break;
      }
      case 'draft_reply':
        await deliver(
          await folderPath(root, settings.drafts_folder),
          await composeReply({ from: settings.username ?? '', original: data, text: drafts.get(action.key) ?? '' }),
          ['\\Draft', '\\Seen'],
        );
        break;
      default:
        throw new UnrecoverableError(`the email integration cannot ${action.name} yet`);
    }
    done.push(pastTense(action.name));
  }
  return done;
}

/**
 * An action as the human log's `done:` line says it happened (`archived`), so it reads apart from the `decided:` line
 * written when the rule chose it (`archive`).
 */
function pastTense(name: string): string {
  const said: Record<string, string> = {
    archive: 'archived',
    flag: 'flagged',
    unflag: 'unflagged',
    mark_read: 'marked read',
    mark_unread: 'marked unread',
    draft_reply: 'saved a draft reply',
  };
  return said[name] ?? name.replace('_', ' ');
}
