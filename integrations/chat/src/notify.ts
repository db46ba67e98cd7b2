import { isAssistantError } from '@assistant/errors';
import { type HandlerContext, UnrecoverableError } from '@assistant/sdk';
import * as z from 'zod';
import type { ChatSettings } from './settings.generated.ts';

/** The owner's notifications conversation (the server's notifier and hooks' `notify:` post there). */
const notificationsConversation = 'notifications';

const payloadSchema = z.strictObject({
  conversation: z.string().min(1),
  text: z.string().min(1).max(20_000),
  /** The message's id: the same task run twice (a retry, a crash) posts one message. */
  message: z.string().regex(/^[a-z0-9-]{1,80}$/),
  /** The hook and the event it came from, shown on the event stream (hooks' `notify:` and `chat:`). */
  hook: z.string().optional(),
  event: z.string().optional(),
  /** The workflow run whose answer this is (a run started from chat), shown on the event stream. */
  run: z.string().optional(),
});

/**
 * `chat.notify`: posts a message from Assistant into a conversation, by default the owner's `notifications` (which
 * Telegram forwards when it is set up): `{conversation, text, message, hook?, event?, run?}`. Hooks' `notify:` and
 * `chat:` enqueue it, and so does a workflow run started from chat (`run`) to post its answer, with a due time for `after:`/`at:` written into the task, so a reminder survives a restart. No model is
 * asked; the text is posted as it is.
 */
export async function runChatNotify(context: HandlerContext) {
  const checked = payloadSchema.safeParse(context.payload);
  if (!checked.success) {
    const issue = checked.error.issues[0];
    throw new UnrecoverableError(
      `chat.notify expects {"conversation", "text", "message"}; ${issue?.path.join('.') || 'payload'}: ${issue?.message}`,
    );
  }
  const { conversation, text, message, hook, event, run } = checked.data;
  const chat = context.chat;
  if (!chat) throw new UnrecoverableError('chat.notify runs only in the builtin chat integration');
  try {
    await chat.conversations.get(conversation);
  } catch (error) {
    if (!isAssistantError(error) || error.code !== 'CHAT_NOT_FOUND') throw error;
    if (conversation !== notificationsConversation) {
      throw new UnrecoverableError(`there is no conversation \`${conversation}\` to post to`);
    }
    await chat.conversations
      .create({ id: notificationsConversation, title: 'Notifications', channel: 'notifications', peer: 'owner' })
      .catch(async (created: unknown) => {
        // Created by the server's notifier meanwhile: fine.
        await chat.conversations.get(notificationsConversation).catch(() => {
          throw created;
        });
      });
  }
  const at = new Date().toISOString();
  if (conversation === notificationsConversation && run === undefined) {
    await enqueueHookDeliveries(context, { message, text, hook, event });
  }
  // The event first, then the transcript, as the server's notifier does: a crash in between posts it again under
  // the same id, which readers drop and the transcript refuses.
  await chat.events.append(conversation, {
    type: 'message',
    message: { id: message, role: 'assistant', text, at, status: 'complete' },
    notification:
      run === undefined
        ? { kind: 'hook', ...(hook === undefined ? {} : { hook }), ...(event === undefined ? {} : { event }) }
        : { kind: 'workflow', run },
  });
  const { appended } = await chat.conversations.appendMessage(conversation, {
    id: message,
    role: 'assistant',
    text,
    at,
    status: 'complete',
  });
  if (appended) {
    await context.log.human(`told the owner: ${text.slice(0, 120)}`, {
      ...(hook ? { reason: `hook ${hook}` } : run ? { reason: `workflow run ${run}` } : {}),
    });
  }
  return { conversation, message, appended };
}

/**
 * A hook's notification goes to the `webhooks.outbound` endpoints that take `hook`, as `chat.webhook` tasks enqueued
 * before it is posted (the outbox, docs/webhooks.md). The event's timestamp is the task's creation, so a retry of
 * this task enqueues the same payload, which the queue's dedup drops while the first delivery waits.
 */
async function enqueueHookDeliveries(
  context: HandlerContext,
  notification: { message: string; text: string; hook: string | undefined; event: string | undefined },
): Promise<void> {
  const endpoints = (context.instance?.settings as Partial<ChatSettings> | undefined)?.webhooks?.outbound ?? [];
  for (const endpoint of endpoints) {
    if (!endpoint.events.includes('hook')) continue;
    await context.enqueue({
      type: 'chat.webhook',
      priority: 2,
      payload: {
        endpoint: endpoint.name,
        id: notification.message,
        event: {
          type: 'notification.hook',
          timestamp: context.task.createdAt,
          data: {
            id: notification.message,
            kind: 'hook',
            text: notification.text,
            ...(notification.hook === undefined ? {} : { hook: notification.hook }),
            ...(notification.event === undefined ? {} : { event: notification.event }),
          },
        },
      },
    });
  }
}
