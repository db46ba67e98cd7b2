import { createHash } from 'node:crypto';
import type { ChatService } from '@assistant/chat';
import { isAssistantError } from '@assistant/errors';
import type { WebhookContext, WebhookReply } from '@assistant/sdk';
import * as z from 'zod';
import type { ChatSettings } from './settings.generated.ts';

/** The channel of conversations started by signed webhooks: one per peer, never the owner's. */
export const webhookChannel = 'webhook';

/** The peer of a message that names none. */
const defaultPeer = 'webhook';

/** Who sent it, as the sender names them: one conversation per peer. Never `owner`. */
const peerSchema = z
  .string()
  .regex(/^[A-Za-z0-9_.@:+-]{1,100}$/, {
    error: 'Expected `peer` to be 1-100 letters, digits or _ . @ : + -',
  })
  .refine((peer) => peer.toLowerCase() !== 'owner', {
    error: '`peer` cannot be `owner`: a webhook speaks for another system, never for the owner',
  })
  .optional();

const bodySchema = z.strictObject({
  text: z.string().min(1, { error: 'Expected `text` to be a non-empty string' }),
  /** A conversation of the webhook channel, by the id an earlier answer gave. */
  conversation: z.string().min(1).max(100).optional(),
  peer: peerSchema,
});

/** The most characters of an event's `data`, as JSON: it is a ledger line, not a document. */
const eventDataMaxChars = 16_384;

/** A body that fires a ledger event (`chat.webhook_event`) instead of a chat message and its turn. */
const eventBodySchema = z.strictObject({
  event: z.string().regex(/^[a-z0-9][a-z0-9_.-]{0,63}$/, {
    error: 'Expected `event` to be 1-64 lowercase letters, digits or _ . - (a name hooks test: `when: {name: …}`)',
  }),
  data: z.record(z.string(), z.json()).optional(),
  peer: peerSchema,
});

/** One queue per peer: finding or creating its conversation and storing the message happen together. */
const locks = new Map<string, Promise<unknown>>();
function serialized<T>(key: string, run: () => Promise<T>): Promise<T> {
  const previous = locks.get(key) ?? Promise.resolve();
  const next = previous.then(run, run);
  const settled = next.catch(() => undefined);
  locks.set(key, settled);
  void settled.then(() => {
    if (locks.get(key) === settled) locks.delete(key);
  });
  return next;
}

function badRequest(message: string): WebhookReply {
  return { status: 400, body: { error: { code: 'CHAT_INPUT_INVALID', message } } };
}

/**
 * `POST /api/integrations/<chat instance>/hooks/signed`: a chat message from another system, its Standard Webhooks
 * signature and timestamp already checked by the server against `webhooks.secret`. The message is stored in the
 * inbox (durably) before the answer, with a client id derived from `webhook-id`, so a sender's retry of the same
 * message stores nothing new and is answered once; then its turn is enqueued, as for a REST message. The peer is
 * never the owner: the turn runs with a stranger's rights (no approvals, no owner-only tools).
 */
export async function receiveSigned(context: WebhookContext<ChatSettings>): Promise<WebhookReply> {
  const chat = context.chat;
  const signed = context.signed;
  if (!chat || !signed) {
    // The server gives both to the builtin chat integration's standard-webhooks hook; anything else is a wiring bug.
    throw new Error('the signed chat webhook needs the chat service and a verified webhook-id');
  }
  // It is kept (the ledger's native id, the logs): a sender's id is short (`msg_…`), a long one is refused.
  if (signed.id.length > 256)
    return badRequest(`Expected webhook-id to be at most 256 characters, got ${signed.id.length}`);
  let json: unknown;
  try {
    json = JSON.parse(context.request.body.toString('utf8'));
  } catch {
    return badRequest('Expected a JSON object body {"text": "…", "conversation"?: "…", "peer"?: "…"}');
  }
  if (typeof json === 'object' && json !== null && 'event' in json) return fireEvent(context, signed.id, json);
  const parsed = bodySchema.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const where = issue?.path.length ? ` at \`${issue.path.join('.')}\`` : '';
    return badRequest(`${issue?.message ?? 'invalid body'}${where}`);
  }
  const peer = parsed.data.peer ?? defaultPeer;
  // The same webhook-id always maps to the same client id: the inbox keeps one message for it.
  const clientId = `wh-${createHash('sha256').update(signed.id).digest('hex').slice(0, 40)}`;
  try {
    return await serialized(parsed.data.conversation ?? `peer:${peer}`, async () => {
      const conversation = parsed.data.conversation ?? (await peerConversation(chat, peer));
      if (parsed.data.conversation !== undefined) {
        const found = await chat.get(parsed.data.conversation);
        if (found.channel !== webhookChannel) {
          return {
            status: 404,
            body: {
              error: { code: 'CHAT_NOT_FOUND', message: `No webhook conversation ${parsed.data.conversation}` },
            },
          };
        }
      }
      const posted = await chat.post(conversation, { text: parsed.data.text, clientId });
      // In the ledger before the answer, once per webhook-id (its native id): hooks may react to it
      // (`on: chat.webhook_received`), and a retry of the same message reports nothing new.
      await context.events?.emit({
        type: 'chat.webhook_received',
        source: `chat:${context.instance.name}`,
        nativeId: signed.id,
        data: {
          instance: context.instance.name,
          webhook_id: signed.id,
          peer,
          conversation,
          message: posted.id,
          text: parsed.data.text.slice(0, 500),
        },
      });
      context.logger.info(
        { conversation, message: posted.id, duplicate: posted.duplicate, webhookId: signed.id },
        'chat webhook: message accepted',
      );
      return {
        status: 202,
        body: { conversation, message: posted.id, delivery: posted.delivery, duplicate: posted.duplicate },
      };
    });
  } catch (error) {
    const status = isAssistantError(error) ? refusalStatus[error.code] : undefined;
    if (isAssistantError(error) && status !== undefined) {
      return { status, body: { error: { code: error.code, message: error.message } } };
    }
    throw error;
  }
}

/**
 * A signed body `{"event": "<name>", "data"?: {…}, "peer"?: "…"}`: reported to the event ledger as
 * `chat.webhook_event` (native id: the `webhook-id`, so once however often it comes) for hooks to react to, and
 * answered 202 once it is in the ledger. No conversation, no message, no turn. Every field but `instance` is the
 * sender's, so untrusted (manifest `events.webhook_event`).
 */
async function fireEvent(context: WebhookContext<ChatSettings>, webhookId: string, json: object) {
  const parsed = eventBodySchema.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const where = issue?.path.length ? ` at \`${issue.path.join('.')}\`` : '';
    return badRequest(`${issue?.message ?? 'invalid body'}${where}`);
  }
  const data = JSON.stringify(parsed.data.data ?? {});
  if (data.length > eventDataMaxChars) {
    return {
      status: 413,
      body: {
        error: {
          code: 'CHAT_MESSAGE_TOO_LARGE',
          message: `Expected \`data\` to be at most ${eventDataMaxChars} characters as JSON, got ${data.length}`,
        },
      },
    };
  }
  if (!context.events) throw new Error('the signed chat webhook needs the event ledger to fire an event');
  const peer = parsed.data.peer ?? defaultPeer;
  const { event, duplicate } = await context.events.emit({
    type: 'chat.webhook_event',
    source: `chat:${context.instance.name}`,
    nativeId: webhookId,
    data: { instance: context.instance.name, webhook_id: webhookId, peer, name: parsed.data.event, data },
  });
  context.logger.info(
    { event: event.id, name: parsed.data.event, duplicate, webhookId },
    'chat webhook: event reported',
  );
  return { status: 202, body: { event: event.id, duplicate } };
}

/** The chat errors that are the sender's to fix, and their status; anything else is a 500 with the log. */
const refusalStatus: Partial<Record<string, number>> = {
  CHAT_NOT_FOUND: 404,
  CHAT_INPUT_INVALID: 400,
  CHAT_MESSAGE_TOO_LARGE: 413,
  CHAT_PENDING_FULL: 429,
};

function peerConversation(chat: ChatService, peer: string): Promise<string> {
  return chat.conversationFor({ channel: webhookChannel, peer, title: `Webhook: ${peer}` });
}
