import type { ChatService } from '@assistant/chat';
import { scrubSecrets } from '@assistant/errors';
import type { EventSink } from '@assistant/events';
import {
  domainEnqueue,
  type IntegrationRegistry,
  importInboundHandler,
  type ListenerApprovals,
  type ListenerCondition,
  type ListenerContext,
  type ListenerFunction,
  type ListenerSpec,
  listenerSpecs,
  type QueueEnqueue,
} from '@assistant/integration-host';
import type { Logger } from 'pino';

type ListenerState = 'starting' | 'running' | 'restarting' | 'stopped';

/** What /health shows of one listener. */
export interface ListenerStatus {
  /** `instance/listener`. */
  id: string;
  instance: string;
  listener: string;
  state: ListenerState;
  /** How often it crashed (threw or returned) since the server started. */
  restarts: number;
  /**
   * The last crash's message, kept while it runs again so a flapping listener is visible: on one line, without
   * secret values, paths relative to the data directory (it is shown by `/health`).
   */
  lastError?: string;
  lastErrorAt?: string;
  /** While restarting: when it starts again. */
  restartAt?: string;
  /**
   * How its source is doing, as the listener last reported it (`ListenerContext.condition`): absent until it reports.
   * `detail` is scrubbed like `lastError`.
   */
  condition?: { state: ListenerCondition['state']; since: string; detail?: string };
}

export interface ListenerBackoff {
  /** The wait after the first crash; it doubles with each crash in a row. @default 1000 */
  initialMs: number;
  /** @default 60000 */
  maxMs: number;
  /** A listener that ran at least this long before crashing starts over at `initialMs`. @default 60000 */
  resetAfterMs: number;
}

export interface ListenerSupervisorOptions {
  registry: IntegrationRegistry;
  /** The one queue call listeners get, wrapped per instance so they enqueue only their domain's task types. */
  enqueue: QueueEnqueue;
  logger: Logger;
  configDir: string;
  /** The data directory, handed to every listener for its own state. */
  dataDir: string;
  /** The event ledger listeners report what they take in to. @default none */
  events?: EventSink;
  /** Chat and approvals, handed only to the builtin chat integration's listeners (the Telegram bot). */
  chat?: ChatService;
  approvals?: ListenerApprovals;
  /** Makes paths in an error relative to the data directory, as in every API answer. @default leaves them */
  scrubPaths?: (text: string) => string;
  backoff?: Partial<ListenerBackoff>;
  /** @default every listener of every enabled instance in `registry` */
  listeners?: readonly ListenerSpec[];
}

/** The longest `lastError` kept: a listener's error is a status line, not a report. */
const maxErrorLength = 500;

const defaultBackoff: ListenerBackoff = { initialMs: 1_000, maxMs: 60_000, resetAfterMs: 60_000 };

interface RunningListener {
  status: ListenerStatus;
  done: Promise<void>;
}

/**
 * Runs the manifests' listeners for the server's lifetime. A listener that throws or returns is logged and started
 * again after an exponential backoff, never taking the server down; `close` aborts them all and waits a bounded
 * grace for them to return.
 */
export class ListenerSupervisor {
  readonly #options: ListenerSupervisorOptions;
  readonly #backoff: ListenerBackoff;
  readonly #controller = new AbortController();
  readonly #running: RunningListener[] = [];
  #closing: Promise<void> | undefined;

  constructor(options: ListenerSupervisorOptions) {
    this.#options = options;
    this.#backoff = { ...defaultBackoff, ...options.backoff };
  }

  /** Starts every listener; resolves at once (they run in the background). */
  start(): void {
    for (const spec of this.#options.listeners ?? listenerSpecs(this.#options.registry)) {
      const status: ListenerStatus = {
        id: spec.id,
        instance: spec.instance.name,
        listener: spec.name,
        state: 'starting',
        restarts: 0,
      };
      this.#running.push({ status, done: this.#supervise(spec, status) });
    }
    if (this.#running.length > 0)
      this.#options.logger.info(
        `${this.#running.length} listeners: ${this.#running.map((one) => one.status.id).join(', ')}`,
      );
  }

  status(): ListenerStatus[] {
    return this.#running.map((one) => ({
      ...one.status,
      ...(one.status.condition ? { condition: { ...one.status.condition } } : {}),
    }));
  }

  /** Aborts every listener and waits up to `graceMs` for them to return. Idempotent. */
  close(options: { graceMs: number }): Promise<void> {
    this.#closing ??= this.#close(options.graceMs);
    return this.#closing;
  }

  async #close(graceMs: number): Promise<void> {
    this.#controller.abort(new Error('the server is shutting down'));
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<'timeout'>((resolve) => {
      timer = setTimeout(() => resolve('timeout'), graceMs);
    });
    try {
      const outcome = await Promise.race([Promise.all(this.#running.map((one) => one.done)), timedOut]);
      if (outcome === 'timeout') {
        const late = this.#running.filter((one) => one.status.state !== 'stopped').map((one) => one.status.id);
        this.#options.logger.warn(
          `listeners ${late.join(', ')} did not stop within ${graceMs} ms of the shutdown signal; leaving them behind`,
        );
      }
    } finally {
      clearTimeout(timer);
    }
  }

  async #supervise(spec: ListenerSpec, status: ListenerStatus): Promise<void> {
    const signal = this.#controller.signal;
    const logger = this.#options.logger.child({ listener: spec.id });
    const builtinChat = spec.integration.origin === 'builtin' && spec.instance.domain === 'chat';
    const context: ListenerContext = {
      instance: { name: spec.instance.name, domain: spec.instance.domain, settings: spec.instance.settings },
      listener: spec.name,
      logger,
      enqueue: domainEnqueue({
        registry: this.#options.registry,
        instance: spec.instance,
        enqueue: this.#options.enqueue,
      }),
      signal,
      configDir: this.#options.configDir,
      dataDir: this.#options.dataDir,
      ...(this.#options.events ? { events: this.#options.events } : {}),
      ...(builtinChat && this.#options.chat ? { chat: this.#options.chat } : {}),
      ...(builtinChat && this.#options.approvals ? { approvals: this.#options.approvals } : {}),
      condition: (condition) => {
        status.condition = shownCondition(condition, status.condition, this.#options.scrubPaths);
      },
    };
    let crashesInARow = 0;
    while (!signal.aborted) {
      const startedMs = Date.now();
      let problem: string;
      try {
        const listen = await importInboundHandler<ListenerFunction>(this.#options.registry, {
          domain: spec.instance.domain,
          kind: 'listener',
          name: spec.name,
        });
        status.state = 'running';
        delete status.restartAt;
        logger.info(`listener ${spec.id} running`);
        await listen(context);
        if (signal.aborted) break;
        problem = 'returned before the server stopped it';
      } catch (error) {
        if (signal.aborted) break;
        problem = error instanceof Error ? error.message : String(error);
      }
      if (Date.now() - startedMs >= this.#backoff.resetAfterMs) crashesInARow = 0;
      crashesInARow += 1;
      const waitMs = Math.min(this.#backoff.maxMs, this.#backoff.initialMs * 2 ** (crashesInARow - 1));
      status.state = 'restarting';
      // What it reported of its source was of the run that ended: the next run reports afresh.
      delete status.condition;
      status.restarts += 1;
      status.lastError = shownError(problem, this.#options.scrubPaths);
      status.lastErrorAt = new Date().toISOString();
      status.restartAt = new Date(Date.now() + waitMs).toISOString();
      logger.warn(`listener ${spec.id} stopped unexpectedly (${scrubSecrets(problem)}); restarting in ${waitMs} ms`);
      await abortableDelay(waitMs, signal);
    }
    status.state = 'stopped';
    delete status.restartAt;
    logger.info(`listener ${spec.id} stopped`);
  }
}

/** A reported condition as `/health` shows it: the same state keeps its `since`; the detail scrubbed like an error. */
function shownCondition(
  condition: ListenerCondition,
  previous: ListenerStatus['condition'],
  scrubPaths: ((text: string) => string) | undefined,
): NonNullable<ListenerStatus['condition']> {
  const reported = condition.since && !Number.isNaN(condition.since.getTime()) ? condition.since : undefined;
  const since =
    reported?.toISOString() ?? (previous?.state === condition.state ? previous.since : new Date().toISOString());
  const detail = condition.detail === undefined ? undefined : shownError(condition.detail, scrubPaths);
  return { state: condition.state, since, ...(detail ? { detail } : {}) };
}

/** An error as `/health` may show it: on one line, without secret values or absolute data paths, bounded. */
function shownError(message: string, scrubPaths: ((text: string) => string) | undefined): string {
  const scrubbed = scrubSecrets(message);
  const line = (scrubPaths ? scrubPaths(scrubbed) : scrubbed).replace(/\s+/g, ' ').trim();
  return line.length <= maxErrorLength ? line : `${line.slice(0, maxErrorLength - 1)}…`;
}

/** Resolves after `ms`, or at once when `signal` aborts. */
function abortableDelay(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
  });
}
