import type { IntegrationRegistry } from '@assistant/integration-host';
import type { JsonValue, TaskQueue } from '@assistant/queue';
import * as z from 'zod';

/** The builtin chat instance whose `webhooks.outbound` endpoints the owner's notifications go to. */
const chatInstance = 'chat';

/** A notification as the outbox sends it: the chat notifier's message id, kind and text, and what it is about. */
interface OutboxNotification {
  /** The notification's message id (`n-…`), derived from what it is about: the `webhook-id` of its deliveries. */
  id: string;
  kind: string;
  text: string;
  /** ISO time the notification was made. */
  at: string;
  details: Readonly<Record<string, string>>;
  /** For a failure: the type of the task that failed. */
  taskType?: string;
}

export type WebhookOutbox = (notification: OutboxNotification) => Promise<{ enqueued: number }>;

/** What the outbox needs of an endpoint; the chat integration's settings schema checked the rest at load. */
const endpointsSchema = z.array(z.object({ name: z.string(), events: z.array(z.string()) }).loose());

/**
 * The durable outbox of signed webhooks: each notification becomes one `chat.webhook` task per endpoint of the chat
 * instance's `webhooks.outbound` that takes its kind, in `data/queue/pending/` before the notification is posted
 * anywhere else. The worker delivers and retries them with backoff; a task whose attempts are spent is in `failed/`.
 * The payload holds the endpoint's name, never its URL's secret; the same notification gives the same payload, so
 * the queue's dedup drops a second enqueue while the first waits.
 */
/** Whether an endpoint of the chat instance's `webhooks.outbound` takes notifications of this kind. */
export function outboundTakes(registry: IntegrationRegistry | undefined, kind: string): boolean {
  const instance = registry?.instance(chatInstance);
  if (!instance?.enabled) return false;
  const endpoints = endpointsSchema.safeParse(
    (instance.settings.webhooks as { outbound?: unknown } | undefined)?.outbound ?? [],
  );
  return endpoints.success && endpoints.data.some((endpoint) => endpoint.events.includes(kind));
}

export function webhookOutbox(options: {
  registry: IntegrationRegistry | undefined;
  queue: Pick<TaskQueue, 'enqueue'>;
}): WebhookOutbox {
  return async (notification) => {
    const instance = options.registry?.instance(chatInstance);
    if (!instance?.enabled) return { enqueued: 0 };
    const webhooks = instance.settings.webhooks as { outbound?: unknown } | undefined;
    const endpoints = endpointsSchema.safeParse(webhooks?.outbound ?? []);
    if (!endpoints.success) return { enqueued: 0 };
    // A delivery that failed for good is told in the notifications conversation, not sent as a webhook: an endpoint
    // that is down would otherwise get a new delivery (that fails in turn) for each one that failed.
    if (notification.taskType === 'chat.webhook') return { enqueued: 0 };
    let enqueued = 0;
    for (const endpoint of endpoints.data) {
      if (!endpoint.events.includes(notification.kind)) continue;
      const payload: JsonValue = {
        endpoint: endpoint.name,
        id: notification.id,
        event: {
          // A reply is the chat's answer to another system, not something the owner is told.
          type: notification.kind === 'reply' ? 'chat.reply' : `notification.${notification.kind}`,
          timestamp: notification.at,
          data: { id: notification.id, kind: notification.kind, text: notification.text, ...notification.details },
        },
      };
      const outcome = await options.queue.enqueue({
        type: 'chat.webhook',
        payload,
        priority: 2,
        source: 'automation',
        integration: instance.name,
      });
      if (outcome.status === 'enqueued') enqueued += 1;
      // Not dropped: the notifier tells it again at its next look, and enqueues then.
      if (outcome.status === 'rate_limited') throw new Error(`webhook delivery to ${endpoint.name}: ${outcome.reason}`);
    }
    return { enqueued };
  };
}
