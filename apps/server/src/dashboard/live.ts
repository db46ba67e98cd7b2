import { stat } from 'node:fs/promises';
import { parsePublishedModels } from '@assistant/metrics';
import type { FileHumanLog } from '@assistant/notes';
import type { TaskEvents, TaskQueue } from '@assistant/queue';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { openEventStream } from '../routes/event-stream.ts';

/** The events every page may listen to, shared by all clients: one source each, however many tabs are open. */
const broadcastEvents = ['queue', 'log', 'approvals', 'models'] as const;
export type BroadcastEvent = (typeof broadcastEvents)[number];

/** Sends one server-sent event to one client: `data` is text (JSON, or HTML for `sse-swap`). */
export type LiveSend = (event: string, data: string) => void;

/**
 * A per-client topic with a parameter (`task=<id>`, `chat=<id>`): streams that one thing's events to one client until
 * `signal` aborts. Pages register theirs; the hub runs it for each client that asks.
 */
export type LiveTopic = (options: { param: string; send: LiveSend; signal: AbortSignal }) => Promise<void>;

export interface LiveHubOptions {
  queue: () => TaskQueue;
  humanLog: FileHumanLog;
  /** `notes/approvals`: a change there is an `approvals` event. */
  approvalsDirectory: string;
  /** How often the log file and the approvals folder are looked at (once for all clients). @default 500 */
  pollMs?: number;
  /**
   * How often the workers' published model figures are read: a breaker that opens or a backlog held back changes
   * no task file, so the queue's events would not tell of it. @default 2_000 (workers publish every 2 s)
   */
  modelsPollMs?: number;
  /** Between keep-alive comments, so proxies and browsers keep an idle stream open. @default 20_000 */
  keepAliveMs?: number;
}

/**
 * The dashboard's live updates. One subscription to the queue's events, one look at the human log and the
 * approvals folder every `pollMs` and one at the workers' model figures every `modelsPollMs` feed every open page:
 * clients never poll files themselves. Started by the first client and stopped when the last one leaves.
 */
export class LiveHub {
  readonly #options: LiveHubOptions;
  readonly #listeners = new Set<LiveSend>();
  readonly #topics = new Map<string, LiveTopic>();
  #events: TaskEvents | undefined;
  #unsubscribe: (() => void) | undefined;
  #timer: NodeJS.Timeout | undefined;
  #modelsTimer: NodeJS.Timeout | undefined;
  #lastModels = '';
  #lastLog = '';
  #lastApprovals = '';

  constructor(options: LiveHubOptions) {
    this.#options = options;
  }

  /** Registers a per-client topic (`task`, `chat`): `/live?task=<id>` runs it for that client. */
  registerTopic(name: string, topic: LiveTopic): void {
    if (this.#topics.has(name)) throw new Error(`live topic ${name} is registered twice`);
    this.#topics.set(name, topic);
  }

  /** Calls `listener` for every broadcast event until the returned function is called. */
  subscribe(listener: LiveSend): () => void {
    this.#listeners.add(listener);
    if (this.#listeners.size === 1) this.#start();
    return () => {
      this.#listeners.delete(listener);
      if (this.#listeners.size === 0) void this.#stop();
    };
  }

  /** Serves `GET /live` for one client: the broadcast events it asked for, and the per-client topics it named. */
  async serve(request: FastifyRequest, reply: FastifyReply, signal: AbortSignal): Promise<void> {
    const query = request.query as Record<string, string | undefined>;
    const wanted = new Set(
      (query.topics ?? broadcastEvents.join(','))
        .split(',')
        .map((name) => name.trim())
        .filter((name) => name !== ''),
    );
    const raw = openEventStream(reply);
    const closed = new AbortController();
    const stop = AbortSignal.any([closed.signal, signal]);
    raw.on('close', () => closed.abort());
    const send: LiveSend = (event, data) => {
      if (stop.aborted) return;
      const lines = data.split(/\r\n|\r|\n/).map((line) => `data: ${line}`);
      raw.write(`event: ${event}\n${lines.join('\n')}\n\n`);
    };
    raw.write(': assistant live\n\n');
    const unsubscribe = this.subscribe((event, data) => {
      if (wanted.has(event)) send(event, data);
    });
    const keepAlive = setInterval(() => raw.write(': keep-alive\n\n'), this.#options.keepAliveMs ?? 20_000);
    const topics = [...this.#topics].flatMap(([name, topic]) => {
      const param = query[name];
      if (param === undefined || param === '') return [];
      return [
        topic({ param, send, signal: stop }).catch((error: unknown) =>
          send('problem', `live ${name} stopped: ${error instanceof Error ? error.message : String(error)}`),
        ),
      ];
    });
    try {
      await new Promise<void>((resolve) => {
        if (stop.aborted) resolve();
        stop.addEventListener('abort', () => resolve(), { once: true });
      });
      await Promise.all(topics);
    } finally {
      clearInterval(keepAlive);
      unsubscribe();
      raw.end();
    }
  }

  #broadcast(event: BroadcastEvent, data: string): void {
    for (const listener of this.#listeners) listener(event, data);
  }

  #start(): void {
    const events = this.#options.queue().events();
    this.#events = events;
    this.#unsubscribe = events.subscribe((event) => this.#broadcast('queue', JSON.stringify(event)));
    const look = async () => {
      const today = this.#options.humanLog.fileFor(new Date());
      const log = await stat(today).catch(() => undefined);
      const logKey = log ? `${today}:${log.size}:${log.mtimeMs}` : today;
      if (logKey !== this.#lastLog) {
        const first = this.#lastLog === '';
        this.#lastLog = logKey;
        if (!first) this.#broadcast('log', JSON.stringify({ file: today, size: log?.size ?? 0 }));
      }
      const approvals = await stat(this.#options.approvalsDirectory).catch(() => undefined);
      const approvalsKey = approvals ? String(approvals.mtimeMs) : 'none';
      if (approvalsKey !== this.#lastApprovals) {
        const first = this.#lastApprovals === '';
        this.#lastApprovals = approvalsKey;
        if (!first) this.#broadcast('approvals', '{}');
      }
    };
    void look().catch(() => {});
    this.#timer = setInterval(() => void look().catch(() => {}), this.#options.pollMs ?? 500);
    const lookAtModels = async () => {
      const published = parsePublishedModels(await this.#options.queue().workers.readMetrics());
      const key = JSON.stringify(published.map(({ worker, models, lanes }) => [worker, models, lanes]));
      if (key !== this.#lastModels) {
        const first = this.#lastModels === '';
        this.#lastModels = key;
        if (!first) this.#broadcast('models', '{}');
      }
    };
    void lookAtModels().catch(() => {});
    this.#modelsTimer = setInterval(() => void lookAtModels().catch(() => {}), this.#options.modelsPollMs ?? 2_000);
  }

  async #stop(): Promise<void> {
    clearInterval(this.#timer);
    this.#timer = undefined;
    clearInterval(this.#modelsTimer);
    this.#modelsTimer = undefined;
    this.#lastModels = '';
    this.#lastLog = '';
    this.#lastApprovals = '';
    this.#unsubscribe?.();
    this.#unsubscribe = undefined;
    const events = this.#events;
    this.#events = undefined;
    await events?.close();
  }

  /** Stops the shared sources (the server is closing). */
  async close(): Promise<void> {
    this.#listeners.clear();
    await this.#stop();
  }
}
