import { AssistantError } from '@assistant/errors';
import type { QueueLogger } from '@assistant/queue';
import type { Redis } from 'ioredis';

/** Error codes of a connection that failed or broke, which ioredis retries by itself. */
const connectionCodes = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
]);

/** Whether `error` is about the connection to Redis rather than a command: what an outage repeats on every retry. */
export function isConnectionError(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  const code = (error as NodeJS.ErrnoException).code;
  return (
    (code !== undefined && connectionCodes.has(code)) || /^Connection is closed|connect ETIMEDOUT/.test(error.message)
  );
}

/** An outage that ended: when this process lost the connection, and when it had it back. */
export interface PastOutage {
  downSinceMs: number;
  backAtMs: number;
}

/**
 * Watches the shared connection so that an outage is said twice, not once per reconnect attempt: a warning when the
 * connection is lost and one when it is back. ioredis reconnects every ~2 s and reports each refusal, and
 * BullMQ repeats every one of them per task type, which over an hour's outage buried everything else in the log.
 * Meanwhile commands wait in ioredis's queue (maxRetriesPerRequest null) and run once Redis answers again, so the
 * work itself waits rather than fails.
 */
export class RedisOutage {
  readonly #displayUrl: string;
  readonly #logger: QueueLogger;
  #downSinceMs: number | undefined;
  #last: PastOutage | undefined;
  #reason = 'the connection closed';

  constructor(options: { client: Redis; displayUrl: string; logger: QueueLogger }) {
    this.#displayUrl = options.displayUrl;
    this.#logger = options.logger;
    const { client } = options;
    client.on('error', (error: Error) => {
      if (isConnectionError(error)) this.#lost(error.message);
    });
    // Emitted only when ioredis will try again: a deliberate quit or disconnect never starts an outage.
    client.on('reconnecting', () => this.#lost(this.#reason));
    client.on('ready', () => this.#back());
  }

  /** True between a lost connection and its return. */
  get down(): boolean {
    return this.#downSinceMs !== undefined;
  }

  /** The most recent outage that ended, as this process saw it; undefined before the first. */
  get last(): PastOutage | undefined {
    return this.#last;
  }

  /** An error for a caller that must answer now rather than wait (a health check), or undefined while Redis answers. */
  unavailableError(): AssistantError | undefined {
    if (this.#downSinceMs === undefined) return undefined;
    return new AssistantError(
      'QUEUE_UNAVAILABLE',
      `Redis at ${this.#displayUrl} is unreachable since ${new Date(this.#downSinceMs).toISOString()} (${this.#reason}); tasks wait in it and workers carry on when it is back`,
      { hint: 'start redis-server (or Valkey) there again; nothing needs restarting here' },
    );
  }

  #lost(reason: string): void {
    this.#reason = reason;
    if (this.#downSinceMs !== undefined) return;
    this.#downSinceMs = Date.now();
    this.#logger.warn(
      `Redis at ${this.#displayUrl} is unreachable (${reason}); tasks wait in it and work resumes when it is back`,
    );
  }

  #back(): void {
    if (this.#downSinceMs === undefined) return;
    const backAtMs = Date.now();
    const seconds = ((backAtMs - this.#downSinceMs) / 1_000).toFixed(1);
    this.#last = { downSinceMs: this.#downSinceMs, backAtMs };
    this.#downSinceMs = undefined;
    this.#reason = 'the connection closed';
    // A warning like the outage's start: whoever reads only warnings (the server logs the queue's info lines at debug)
    // learns that it ended, too.
    this.#logger.warn(`Redis at ${this.#displayUrl} is reachable again after ${seconds} s; work resumes`);
  }
}
