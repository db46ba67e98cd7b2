import { type FSWatcher, watch } from 'node:fs';
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { ChatService } from '@assistant/chat';
import type { Logger } from 'pino';
import * as z from 'zod';
import type { WebhookOutbox } from './webhook-outbox.ts';

/** The channel of conversations that signed webhooks start (integrations/chat/src/signed-webhook.ts). */
const webhookChannel = 'webhook';

const stateSchema = z.object({ offsets: z.record(z.string(), z.int().min(0)) });

export interface WebhookRepliesOptions {
  chat: ChatService;
  outbox: WebhookOutbox;
  /** `data/chat/webhook-replies.json`: how far each webhook conversation's events were read. */
  stateFile: string;
  logger: Pick<Logger, 'warn'>;
  /** @default 2_000 */
  pollMs?: number;
}

/**
 * Sends the replies of conversations that signed webhooks started to the outbound endpoints that take `reply`: each
 * assistant message of such a conversation, once it is on the conversation's event log, is handed to the outbox (one
 * `chat.webhook` task per endpoint, the reply's message id as `webhook-id`). How far each log was read is kept in
 * `stateFile`, written after the outbox took the replies, so a restart sends nothing twice except what a crash cut
 * between the two (the same webhook-id, which receivers drop).
 */
export class WebhookReplies {
  readonly #options: WebhookRepliesOptions;
  #timer: NodeJS.Timeout | undefined;
  #running: Promise<void> = Promise.resolve();
  #closed = false;
  #watcher: FSWatcher | undefined;
  /** What the last full look learnt of each conversation: whether it is a webhook one, and its peer. */
  readonly #known = new Map<string, { webhook: boolean; peer: string }>();
  /** Looks queued and not started yet (a conversation's id, or `''` for a full look): each is queued once. */
  readonly #queued = new Set<string>();

  constructor(options: WebhookRepliesOptions) {
    this.#options = options;
  }

  /**
   * Looks every `pollMs`, and at once when a conversation's event log changes (a watch on the logs' folder): a reply
   * goes out as soon as it is written, not at the next poll. A change to a webhook conversation's log looks at that
   * log only; to an unknown one, at all of them; to another channel's (a turn streaming elsewhere), at nothing.
   */
  start(): void {
    const tick = () => {
      this.#look('');
      if (!this.#closed) this.#timer = setTimeout(tick, this.#options.pollMs ?? 2_000);
      this.#timer?.unref();
    };
    tick();
    this.#watch().catch((error: unknown) =>
      this.#options.logger.warn(
        { err: error },
        'webhook replies: cannot watch the event logs; looking every poll only',
      ),
    );
  }

  async #watch(): Promise<void> {
    const directory = this.#options.chat.events.directory;
    await mkdir(directory, { recursive: true, mode: 0o700 });
    if (this.#closed) return;
    this.#watcher = watch(directory, (_event, fileName) => {
      const name = typeof fileName === 'string' ? path.basename(fileName) : '';
      if (!name.endsWith('.jsonl')) return;
      const conversation = name.slice(0, -'.jsonl'.length);
      const known = this.#known.get(conversation);
      if (known === undefined) this.#look('');
      else if (known.webhook) this.#look(conversation);
    });
    // A watcher that fails leaves the poll, which still finds every reply.
    this.#watcher.on('error', () => {});
  }

  /** Queues a look (`''`: all conversations), once while it has not started. */
  #look(conversation: string): void {
    if (this.#closed || this.#queued.has(conversation)) return;
    this.#queued.add(conversation);
    this.#running = this.#running
      .then(async () => {
        this.#queued.delete(conversation);
        await this.scan(conversation === '' ? undefined : conversation);
      })
      .catch((error: unknown) => this.#options.logger.warn({ err: error }, 'webhook replies: could not look'));
  }

  async close(): Promise<void> {
    this.#closed = true;
    if (this.#timer) clearTimeout(this.#timer);
    this.#watcher?.close();
    await this.#running;
  }

  /**
   * One look at every webhook conversation's new events. The first look ever (no state file) only notes where each
   * log ends: replies written before `reply` was configured are not sent.
   */
  async scan(only?: string): Promise<{ handed: number }> {
    const { chat } = this.#options;
    const read = await this.#read();
    const state = read ?? { offsets: {} };
    const known = only === undefined ? undefined : this.#known.get(only);
    if (read !== undefined && known?.webhook) {
      return { handed: await this.#conversation(state, { id: only as string, peer: known.peer }) };
    }
    let handed = 0;
    let cursor: string | undefined;
    do {
      const page = await chat.page({ limit: 500, ...(cursor === undefined ? {} : { cursor }) });
      for (const conversation of page.chats) {
        this.#known.set(conversation.id, { webhook: conversation.channel === webhookChannel, peer: conversation.peer });
        if (conversation.channel !== webhookChannel) continue;
        if (read === undefined) {
          state.offsets[conversation.id] = await chat.events.end(conversation.id);
          continue;
        }
        handed += await this.#conversation(state, conversation);
      }
      cursor = page.nextCursor ?? undefined;
    } while (cursor !== undefined);
    if (read === undefined) await this.#write(state);
    return { handed };
  }

  /**
   * Hands a webhook conversation's new replies to the outbox, saving how far its log was read after each piece (a read
   * returns at most 4 MiB: it reads on until the log's end).
   */
  async #conversation(state: z.infer<typeof stateSchema>, conversation: { id: string; peer: string }): Promise<number> {
    const seen = new Set<string>();
    let handed = 0;
    for (;;) {
      const from = state.offsets[conversation.id] ?? 0;
      const { entries, next } = await this.#options.chat.events.read(conversation.id, from);
      for (const { event } of entries) {
        const message = event.type === 'message' ? (event.message as Record<string, unknown> | undefined) : undefined;
        if (message?.role !== 'assistant' || typeof message.id !== 'string' || seen.has(message.id)) continue;
        seen.add(message.id);
        await this.#options.outbox({
          id: message.id,
          kind: 'reply',
          text: typeof message.text === 'string' ? message.text : '',
          at: typeof message.at === 'string' ? message.at : new Date().toISOString(),
          details: { conversation: conversation.id, peer: conversation.peer },
        });
        handed += 1;
      }
      // Nothing more (or a log shorter than the offset, which `read` starts again at 0: taken next time).
      if (next === from || entries.length === 0) {
        if (next !== from) {
          state.offsets[conversation.id] = next;
          await this.#write(state);
        }
        return handed;
      }
      state.offsets[conversation.id] = next;
      await this.#write(state);
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
    const parsed = stateSchema.safeParse(JSON.parse(text));
    if (!parsed.success) {
      // Damaged: said in the log at each look until fixed, rather than sending every past reply again.
      throw new Error(`${this.#options.stateFile} is not {"offsets": {conversation: offset}}; fix or remove it`);
    }
    return parsed.data;
  }

  async #write(state: z.infer<typeof stateSchema>): Promise<void> {
    await mkdir(path.dirname(this.#options.stateFile), { recursive: true });
    const temporary = `${this.#options.stateFile}.${process.pid}.tmp`;
    await writeFile(temporary, `${JSON.stringify(state)}\n`);
    await rename(temporary, this.#options.stateFile);
  }
}
