import { type ActPayload, actPayloadSchema, Conversation, fenceUntrusted, UnrecoverableError } from '@assistant/sdk';
import type { EmailContext } from './email-settings.ts';
import { withImap } from './imap-session.ts';

/**
 * `email.inbox.act`: performs the platform actions of one rule on one message, on the IMAP server, in one
 * connection: archive and move (the note follows the message to its new folder), flags, read state, and
 * `draft_reply` (the LLM writes a reply, saved to the drafts folder; nothing is sent). Each action done is a line in
 * the human log.
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
  await withImap(settings, context.signal, async (client) => {
    const lock = await client.getMailboxLock(mailbox);
    try {
      for (const action of payload.actions) {
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
            const raw = composeReply(settings.username ?? '', note.data, drafts.get(action.key) ?? '');
            await client.append(settings.drafts_folder, raw, ['\\Draft', '\\Seen']);
            break;
          }
          default:
            throw new UnrecoverableError(`the email integration cannot ${action.name} yet`);
        }
        done.push(action.name === 'move' ? `moved to ${String(action.argument)}` : action.name.replace('_', ' '));
      }
    } finally {
      lock.release();
    }
  });
  await context.log.human(`${done.join(', ')}: "${subject}"`, {
    reason: `rule "${payload.rule}" (${payload.provenance})${payload.approval ? `, approved (${payload.approval})` : ''}`,
    link: payload.item,
  });
  return { done };
}

async function writeReply(context: EmailContext<ActPayload>, data: Record<string, unknown>): Promise<string> {
  const fenced = fenceUntrusted(
    { from: String(data.from ?? ''), subject: String(data.subject ?? ''), body: String(data.body_excerpt ?? '') },
    { maxCharsByField: { body: 6_000 } },
  );
  const conversation = new Conversation(context.llm(), {
    system: `You draft short, friendly email replies for the owner, in the language of the message. Write only the reply text, no subject line. ${fenced.instruction}`,
  });
  return conversation.ask(`Draft a reply to this message:\n\n${fenced.text}`, { signal: context.signal });
}

/** A plain-text reply as RFC 5322, threaded under the original (In-Reply-To, References). */
function composeReply(from: string, original: Record<string, unknown>, text: string): string {
  const subject = String(original.subject ?? '');
  const messageId = String(original.message_id ?? '');
  const headers = [
    `From: ${from}`,
    `To: ${String(original.from ?? '')}`,
    `Subject: ${encodeHeader(/^re:/i.test(subject) ? subject : `Re: ${subject}`)}`,
    `Date: ${new Date().toUTCString()}`,
    ...(messageId ? [`In-Reply-To: ${messageId}`, `References: ${messageId}`] : []),
    'MIME-Version: 1.0',
    'Content-Type: text/plain; charset=utf-8',
    'Content-Transfer-Encoding: 8bit',
  ];
  return `${headers.join('\r\n')}\r\n\r\n${text.replace(/\r?\n/g, '\r\n')}\r\n`;
}

function encodeHeader(value: string): string {
  return /^[\x20-\x7e]*$/.test(value) ? value : `=?UTF-8?B?${Buffer.from(value, 'utf8').toString('base64')}?=`;
}
