import type { TaskEvent, TaskEventKind, TaskEvents, TaskState } from '@assistant/queue';
import type { Redis } from 'ioredis';
import * as z from 'zod';

const eventSchema = z.object({
  kind: z.enum(['added', 'claimed', 'completed', 'failed', 'requeued', 'removed']),
  id: z.string(),
  type: z.string(),
  state: z.enum(['pending', 'active', 'done', 'failed']).optional(),
});

/** How many events the stream keeps: enough for a reader that falls a few seconds behind on a busy queue. */
const streamMaxLength = 10_000;

/** Appends a state change to the prefix's event stream (trimmed, roughly, to the last {@link streamMaxLength}). */
export async function publishTaskEvent(
  client: Redis,
  streamKey: string,
  event: { kind: TaskEventKind; id: string; type: string; state: TaskState | undefined },
): Promise<void> {
  await client.xadd(streamKey, 'MAXLEN', '~', streamMaxLength, '*', 'event', JSON.stringify(event));
}

/**
 * Every state change of the queue, whichever process made it, read from one Redis stream per prefix that every
 * transition appends to. One stream rather than BullMQ's QueueEvents: those are per queue (per task type here), each
 * with a blocking connection of its own, while one stream costs one connection per reader however many types there
 * are. A stream rather than pub/sub: reading starts from the time of the first subscribe, so an event published
 * while the reader's connection was still opening is not lost.
 */
export class RedisTaskEvents implements TaskEvents {
  readonly #listeners = new Set<(event: TaskEvent) => void>();
  readonly #connect: () => Redis;
  readonly #streamKey: string;
  readonly #onError: (error: Error) => void;
  #reader: Redis | undefined;
  #loop: Promise<void> | undefined;
  #closed = false;

  constructor(options: { connect: () => Redis; streamKey: string; onError: (error: Error) => void }) {
    this.#connect = options.connect;
    this.#streamKey = options.streamKey;
    this.#onError = options.onError;
  }

  subscribe(listener: (event: TaskEvent) => void): () => void {
    this.#listeners.add(listener);
    if (!this.#loop && !this.#closed) this.#loop = this.#read(`${Date.now()}-0`);
    return () => {
      this.#listeners.delete(listener);
    };
  }

  async #read(startId: string): Promise<void> {
    const reader = this.#connect();
    this.#reader = reader;
    let lastId = startId;
    while (!this.#closed) {
      let answer: [string, [string, string[]][]][] | null;
      try {
        answer = (await reader.xread('COUNT', 500, 'BLOCK', 5_000, 'STREAMS', this.#streamKey, lastId)) as
          | [string, [string, string[]][]][]
          | null;
      } catch (error) {
        if (this.#closed) return;
        this.#onError(error as Error);
        await new Promise((resolve) => setTimeout(resolve, 1_000));
        continue;
      }
      for (const [, entries] of answer ?? []) {
        for (const [id, fields] of entries) {
          lastId = id;
          const event = parseEvent(fields[1]);
          if (!event) continue;
          for (const listener of [...this.#listeners]) listener(event);
        }
      }
    }
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#listeners.clear();
    // disconnect, not quit: a blocked XREAD would hold quit's answer back for up to its block time.
    this.#reader?.disconnect();
    await this.#loop;
  }
}

function parseEvent(text: string | undefined): TaskEvent | undefined {
  if (text === undefined) return undefined;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return undefined;
  }
  const checked = eventSchema.safeParse(value);
  if (!checked.success) return undefined;
  return { kind: checked.data.kind, id: checked.data.id, type: checked.data.type, state: checked.data.state };
}
