import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { EventLedger } from '@assistant/events';
import type { IntegrationRegistry } from '@assistant/integration-host';
import type { JsonValue, TaskQueue } from '@assistant/queue';
import type { Logger } from 'pino';
import * as z from 'zod';

/** The builtin chat instance whose `webhooks.outbound` endpoints are read. */
const chatInstance = 'chat';

/** What is read of an endpoint; the chat integration's settings schema checked the rest at load. */
const endpointsSchema = z.array(z.object({ name: z.string(), ledger_events: z.array(z.string()).optional() }).loose());

const stateSchema = z.strictObject({ cursor: z.string().min(1) });

/** The endpoints that take ledger events, and which types each takes. */
export function ledgerEventEndpoints(registry: IntegrationRegistry | undefined): Map<string, ReadonlySet<string>> {
  const selected = new Map<string, ReadonlySet<string>>();
  const instance = registry?.instance(chatInstance);
  if (!instance?.enabled) return selected;
  const endpoints = endpointsSchema.safeParse(
    (instance.settings.webhooks as { outbound?: unknown } | undefined)?.outbound ?? [],
  );
  if (!endpoints.success) return selected;
  for (const endpoint of endpoints.data) {
    if (endpoint.ledger_events && endpoint.ledger_events.length > 0) {
      selected.set(endpoint.name, new Set(endpoint.ledger_events));
    }
  }
  return selected;
}

export interface WebhookLedgerEventsOptions {
  ledger: Pick<EventLedger, 'list' | 'end'>;
  /** Endpoint name → the ledger event types it takes (`webhooks.outbound[].ledger_events`). */
  endpoints: ReadonlyMap<string, ReadonlySet<string>>;
  queue: Pick<TaskQueue, 'enqueue'>;
  /** `data/chat/webhook-events.json`: the ledger cursor read up to. */
  stateFile: string;
  logger: Pick<Logger, 'warn'>;
  /** @default 2_000 */
  pollMs?: number;
}

/**
 * Sends the ledger events an outbound endpoint chose by type (`ledger_events: [task.failed, chat.webhook_event]`) to
 * it, signed, through the same outbox as notifications: one `chat.webhook` task per event and endpoint, the event's id
 * as `webhook-id`, enqueued before the cursor is saved (a crash in between enqueues the same payload again, which
 * the queue's dedup or the receiver's `webhook-id` drops). The first look ever starts at the ledger's end: events
 * from before the endpoint was configured are not sent. Events with a `problem` (not of their type's schema) are not
 * sent, and neither are the ledger's reports of the deliveries themselves (`task.done` / `task.failed` of
 * `chat.webhook`), which would otherwise make a delivery for each delivery, for ever.
 */
export class WebhookLedgerEvents {
  readonly #options: WebhookLedgerEventsOptions;
  #timer: NodeJS.Timeout | undefined;
  #running: Promise<void> = Promise.resolve();
  #closed = false;

  constructor(options: WebhookLedgerEventsOptions) {
    this.#options = options;
  }

  start(): void {
    const tick = () => {
      this.#running = this.#running
        .then(async () => {
          await this.scan();
        })
        .catch((error: unknown) => this.#options.logger.warn({ err: error }, 'webhook ledger events: could not look'));
      if (!this.#closed) this.#timer = setTimeout(tick, this.#options.pollMs ?? 2_000);
      this.#timer?.unref();
    };
    tick();
  }

  async close(): Promise<void> {
    this.#closed = true;
    if (this.#timer) clearTimeout(this.#timer);
    await this.#running;
  }

  /** One look at the ledger's new events; how many deliveries were enqueued. */
  async scan(): Promise<{ enqueued: number }> {
    const state = await this.#read();
    if (state === undefined) {
      await this.#write({ cursor: await this.#options.ledger.end() });
      return { enqueued: 0 };
    }
    let enqueued = 0;
    let cursor = state.cursor;
    for (;;) {
      const page = await this.#options.ledger.list({ after: cursor, limit: 500 });
      for (const event of page.events) {
        if (!event.problem && !isDeliveryReport(event.data)) {
          for (const [endpoint, types] of this.#options.endpoints) {
            if (!types.has(event.type)) continue;
            const payload: JsonValue = {
              endpoint,
              id: event.id,
              event: {
                type: event.type,
                timestamp: event.at,
                data: {
                  id: event.id,
                  source: event.source,
                  ...(event.caused_by ? { caused_by: event.caused_by } : {}),
                  data: event.data as Record<string, JsonValue>,
                },
              },
            };
            const outcome = await this.#options.queue.enqueue({
              type: 'chat.webhook',
              payload,
              priority: 2,
              source: 'automation',
              integration: chatInstance,
            });
            // Not dropped: the cursor stays before this event, which is looked at again next time.
            if (outcome.status === 'rate_limited') {
              throw new Error(`webhook delivery of ${event.id} to ${endpoint}: ${outcome.reason}`);
            }
            if (outcome.status === 'enqueued') enqueued += 1;
          }
        }
        cursor = event.cursor;
      }
      if (cursor !== state.cursor) await this.#write({ cursor });
      if (!page.next) return { enqueued };
    }
  }

  async #read(): Promise<z.infer<typeof stateSchema> | undefined> {
    let text: string;
    try {
      text = await readFile(this.#options.stateFile, 'utf8');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw error;
    }
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      json = undefined;
    }
    const parsed = stateSchema.safeParse(json);
    // Damaged: said in the log at each look until fixed, rather than sending every event of the ledger again.
    if (!parsed.success) throw new Error(`${this.#options.stateFile} is not {"cursor": "…"}; fix or remove it`);
    return parsed.data;
  }

  async #write(state: z.infer<typeof stateSchema>): Promise<void> {
    await mkdir(path.dirname(this.#options.stateFile), { recursive: true });
    const temporary = `${this.#options.stateFile}.${process.pid}.tmp`;
    await writeFile(temporary, `${JSON.stringify(state)}\n`);
    await rename(temporary, this.#options.stateFile);
  }
}

/** The queue's report of a webhook delivery itself (`task.done`, `task.failed` of a `chat.webhook` task). */
function isDeliveryReport(data: Record<string, unknown>): boolean {
  return data.task_type === 'chat.webhook';
}
