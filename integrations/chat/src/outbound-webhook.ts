import { OutboundError, type OutboundPolicy, publicWebOnly, safeFetch, webhookHeaders } from '@assistant/outbound';
import { type HandlerContext, outageDelay, RetryableError, UnrecoverableError } from '@assistant/sdk';
import * as z from 'zod';
import type { ChatSettings } from './settings.generated.ts';

const payloadSchema = z.strictObject({
  /** The endpoint's `name` in `webhooks.outbound`: its URL and secret are read from the settings at each attempt. */
  endpoint: z.string().min(1).max(100),
  /** The `webhook-id`: the same on every attempt, so the receiver drops a repeat. */
  id: z.string().regex(/^[A-Za-z0-9_.:-]{1,200}$/),
  /** What is sent, as JSON: `{type, timestamp, data}` as the specification recommends. */
  event: z.strictObject({
    type: z.string().min(1).max(100),
    timestamp: z.string(),
    data: z.record(z.string(), z.json()),
  }),
});

/** An owner-configured endpoint on this machine or the local network (`private_network: true`). */
const anyAddress: OutboundPolicy = { protocols: ['https:', 'http:'], allowsAddress: () => true };

/** How long one attempt may take, connection and answer. */
const attemptTimeoutMs = 15_000;

/**
 * `chat.webhook`: one delivery of the outbox. POSTs the event as JSON to the endpoint named in the payload, signed
 * with its secret by the Standard Webhooks scheme (`webhook-id` the payload's id on every attempt, `webhook-timestamp`
 * the attempt's time, `webhook-signature` `v1,…`). A 2xx answer completes the task; any other answer, or a
 * connection that failed, is retried with the queue's backoff (`queue.types."chat.webhook"`) until its attempts are
 * spent, then the task is in `failed/`. The secret never enters the task file: it is read from the settings.
 */
export async function deliverWebhook(context: HandlerContext<unknown, ChatSettings>) {
  const checked = payloadSchema.safeParse(context.payload);
  if (!checked.success) {
    const issue = checked.error.issues[0];
    throw new UnrecoverableError(
      `chat.webhook expects {"endpoint", "id", "event": {type, timestamp, data}}; ${issue?.path.join('.') || 'payload'}: ${issue?.message}`,
    );
  }
  const { endpoint: name, id, event } = checked.data;
  const endpoint = context.instance.settings.webhooks?.outbound.find((candidate) => candidate.name === name);
  if (!endpoint) {
    throw new UnrecoverableError(
      `no endpoint \`${name}\` under \`webhooks.outbound\` of chat instance \`${context.instance.name}\` any more`,
    );
  }
  const body = JSON.stringify(event);
  let headers: Record<string, string>;
  try {
    headers = webhookHeaders({ secret: endpoint.secret.reveal(), id, body });
  } catch (error) {
    throw new UnrecoverableError(`endpoint \`${name}\`: ${(error as Error).message}`);
  }
  let status: number;
  try {
    const answer = await safeFetch({
      url: endpoint.url,
      method: 'POST',
      body,
      headers: { 'content-type': 'application/json', ...headers },
      policy: endpoint.private_network ? anyAddress : publicWebOnly,
      // A redirect would carry the signed body to a place the owner did not name: refused, not followed.
      maxRedirects: 0,
      timeoutMs: attemptTimeoutMs,
      // The answer is not read beyond its status.
      maxBytes: 65_536,
      oversize: 'truncate',
      what: `webhook endpoint \`${name}\``,
      signal: context.signal,
    });
    status = answer.status;
  } catch (error) {
    if (error instanceof OutboundError && error.code === 'OUTBOUND_REFUSED') {
      throw new UnrecoverableError(`endpoint \`${name}\`: ${error.message}`);
    }
    throw unreachable(context, `endpoint \`${name}\`: ${(error as Error).message}`);
  }
  if (status < 200 || status > 299) {
    throw unreachable(context, `endpoint \`${name}\` answered ${status} to ${event.type} ${id}`);
  }
  context.log.info(`webhook ${event.type} ${id} delivered to ${name}`, { status, attempts: context.task.attempts });
  return { endpoint: name, id, type: event.type, status };
}

/**
 * The endpoint did not take the delivery: retried with the queue's backoff while attempts remain; on the last one, an
 * endpoint that is down waits as an outage (a minute at a time, no attempt spent, for up to a day after the event),
 * so a receiver down for an afternoon still gets every event, in the end, instead of the delivery failing for good.
 */
function unreachable(
  context: { task: { attempts: number; maxAttempts?: number; createdAt?: string } },
  message: string,
): Error {
  const { task } = context;
  if (task.maxAttempts === undefined || task.createdAt === undefined || task.attempts < task.maxAttempts) {
    return new RetryableError(message);
  }
  return (
    outageDelay({ createdAt: task.createdAt }, Date.now() + 60_000, `${message}; waiting for the endpoint`) ??
    new RetryableError(message)
  );
}
