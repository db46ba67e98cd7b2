import type { InboundEnqueueOutcome, QueueEnqueue } from '@assistant/integration-host';
import type { TaskQueue } from '@assistant/queue';

/**
 * The one place listeners and webhooks touch the queue: their tasks are `automation` tasks of their instance, so
 * dedup and rate limits apply (a redelivered webhook or a re-polled message is not a second task). Answers in ids.
 */
export async function queueEnqueue(
  queue: Pick<TaskQueue, 'enqueue'>,
  request: Parameters<QueueEnqueue>[0],
): Promise<InboundEnqueueOutcome> {
  const outcome = await queue.enqueue({ ...request, source: 'automation' });
  if (outcome.status === 'enqueued') return { status: 'enqueued', id: outcome.task.id };
  if (outcome.status === 'duplicate') return { status: 'duplicate', reason: outcome.reason };
  return { status: 'rate_limited', reason: outcome.reason, retryAtMs: outcome.retryAtMs };
}
