import { scrubSecretsDeep } from '@assistant/errors';
import * as z from 'zod';
import type {
  NewSteeringRequest,
  PendingSteeringRequest,
  SteeringChannel,
  WatchedRequests,
} from './steering-channel.ts';
import {
  type ControlEvent,
  type SteeringOutcome,
  type SteeringRequest,
  type SteeringSettlement,
  steeringOutcomeSchema,
  steeringRequestIdPattern,
  steeringRequestSchema,
} from './steering-request.ts';

export interface HttpSteeringChannelOptions {
  /** The server's base URL, e.g. `http://server.lan:8787` (a path prefix behind a proxy is kept). */
  serverUrl: string;
  /** The API token (`data/api-token` or `server.token` of the server). Sent as a bearer token, never logged. */
  token?: string;
  taskId: string;
  /** @default the global fetch */
  fetch?: typeof fetch;
  /**
   * How long one long poll for requests (or an outcome) waits on the server before answering empty; the server
   * caps it at 25 s. @default 25_000
   */
  longPollMs?: number;
}

/** The most the server holds a long poll; a longer wait is several polls. */
const maxLongPollMs = 25_000;
/** Room beyond a call's own wait before it counts as lost (a half-open connection answers nothing, ever). */
const callMarginMs = 30_000;
/** How long the watch waits before polling again after a failed poll, growing to the maximum while it fails. */
const retryMs = { first: 500, max: 10_000 };

const pendingBody = z.object({
  requests: z.array(
    z.object({
      id: z.string().regex(steeringRequestIdPattern),
      request: steeringRequestSchema.optional(),
      problem: z.string().optional(),
    }),
  ),
});
const existsBody = z.object({ exists: z.boolean() });
const requestBody = z.object({ request: steeringRequestSchema });
const outcomeBody = z.object({ outcome: steeringOutcomeSchema.nullable() });
const errorBody = z.object({ error: z.object({ code: z.string(), message: z.string() }) });

/**
 * A task's steering channel through the server's API (`/api/store/steering/:id/…`, docs/api.md), for a worker on
 * another machine: the server keeps the channel in its `data/control/`, exactly as for its own worker, so a person
 * steering through the REST API, CLI or dashboard sees no difference.
 *
 * New requests arrive by long poll: one request waits on the server until a request is made (the server watches
 * the folder) or 25 s pass, so a pause reaches the loop within a round trip while an idle task costs one request
 * per 25 s. A short poll would have to choose between that latency and a request every few hundred milliseconds per
 * running loop; the long poll has both.
 */
export class HttpSteeringChannel implements SteeringChannel {
  readonly taskId: string;
  /**
   * The long poll wakes applySteering at once; this look only catches what it misses (a request whose name sorts
   * before one it has seen, made by a second writer in the same millisecond; a poll that failed).
   */
  readonly pollMs = 5_000;
  readonly #base: string;
  readonly #token: string | undefined;
  readonly #fetch: typeof fetch;
  readonly #longPollMs: number;

  constructor(options: HttpSteeringChannelOptions) {
    if (!/^[0-9a-z]{26}$/.test(options.taskId)) throw new Error(`not a task id: ${options.taskId}`);
    const url = new URL(options.serverUrl);
    if (url.protocol !== 'http:' && url.protocol !== 'https:') {
      throw new Error(`expected an http(s) server URL, got ${url.protocol}`);
    }
    this.taskId = options.taskId;
    this.#base = `${url.origin}${url.pathname.replace(/\/+$/, '')}/api/store/steering/${options.taskId}`;
    this.#token = options.token;
    this.#fetch = options.fetch ?? fetch;
    this.#longPollMs = Math.min(Math.max(options.longPollMs ?? maxLongPollMs, 0), maxLongPollMs);
  }

  async pending(): Promise<PendingSteeringRequest[]> {
    return (await this.#pending({ waitMs: 0 })).requests;
  }

  async settle(requestId: string, outcome: SteeringSettlement): Promise<void> {
    if (!steeringRequestIdPattern.test(requestId)) throw new Error(`not a steering request id: ${requestId}`);
    // Scrubbed here, with this worker's secrets: the server knows only its own.
    await this.#call('POST', `/requests/${requestId}/outcome`, { body: scrubSecretsDeep(outcome) });
  }

  async event(event: Omit<ControlEvent, 'at'> & { at?: string }): Promise<void> {
    // Stamped here, when it happened; scrubbed here, since an LLM error may echo this worker's token.
    await this.#call('POST', '/events', { body: scrubSecretsDeep({ at: new Date().toISOString(), ...event }) });
  }

  async exists(): Promise<boolean> {
    return existsBody.parse(await this.#call('GET', '')).exists;
  }

  async request(request: NewSteeringRequest): Promise<SteeringRequest> {
    return requestBody.parse(await this.#call('POST', '/requests', { body: scrubSecretsDeep(request) })).request;
  }

  async waitForOutcome(
    requestId: string,
    options: { timeoutMs: number; signal?: AbortSignal },
  ): Promise<SteeringOutcome | undefined> {
    if (!steeringRequestIdPattern.test(requestId)) throw new Error(`not a steering request id: ${requestId}`);
    const deadline = Date.now() + options.timeoutMs;
    // Like ControlFiles: an aborted wait answers "no outcome yet" rather than throwing.
    while (!options.signal?.aborted) {
      const waitMs = Math.min(Math.max(deadline - Date.now(), 0), this.#longPollMs);
      let answer: unknown;
      try {
        answer = await this.#call('GET', `/outcomes/${requestId}`, {
          query: { wait_ms: String(waitMs) },
          waitMs,
          ...(options.signal ? { signal: options.signal } : {}),
        });
      } catch (error) {
        if (options.signal?.aborted) return undefined;
        throw error;
      }
      const { outcome } = outcomeBody.parse(answer);
      if (outcome) return outcome;
      if (Date.now() >= deadline) return undefined;
    }
    return undefined;
  }

  /** Long polls for requests newer than the last one seen, one poll at a time, until `close()`. */
  watchRequests(onRequest: () => void, options: { logger?: { warn(message: string): void } } = {}): WatchedRequests {
    const stop = new AbortController();
    const loop = (async () => {
      let after: string | undefined;
      let delayMs = retryMs.first;
      let failing = false;
      while (!stop.signal.aborted) {
        try {
          const { requests } = await this.#pending({
            waitMs: this.#longPollMs,
            ...(after === undefined ? {} : { after }),
            signal: stop.signal,
          });
          if (failing) options.logger?.warn(`steering of task ${this.taskId} reaches the server again`);
          failing = false;
          delayMs = retryMs.first;
          const newest = requests
            .map((entry) => entry.id)
            .sort()
            .at(-1);
          if (newest !== undefined && (after === undefined || newest > after)) {
            after = newest;
            onRequest();
          }
        } catch (error) {
          if (stop.signal.aborted) return;
          // Said once per outage, not once per retry: the server restarting must not flood the worker's log.
          if (!failing) {
            options.logger?.warn(
              `cannot reach the server for steering of task ${this.taskId}: ${(error as Error).message}; retrying`,
            );
          }
          failing = true;
          await sleep(delayMs, stop.signal);
          delayMs = Math.min(delayMs * 2, retryMs.max);
        }
      }
    })();
    return {
      ready: Promise.resolve(),
      close: async () => {
        stop.abort();
        await loop;
      },
    };
  }

  async #pending(options: {
    waitMs: number;
    after?: string;
    signal?: AbortSignal;
  }): Promise<z.infer<typeof pendingBody>> {
    const query: Record<string, string> = { wait_ms: String(options.waitMs) };
    if (options.after !== undefined) query.after = options.after;
    return pendingBody.parse(
      await this.#call('GET', '/requests', {
        query,
        waitMs: options.waitMs,
        ...(options.signal ? { signal: options.signal } : {}),
      }),
    );
  }

  async #call(
    method: 'GET' | 'POST',
    route: string,
    options: { query?: Record<string, string>; body?: unknown; waitMs?: number; signal?: AbortSignal } = {},
  ): Promise<unknown> {
    const url = `${this.#base}${route}${options.query ? `?${new URLSearchParams(options.query)}` : ''}`;
    const timeout = AbortSignal.timeout((options.waitMs ?? 0) + callMarginMs);
    const response = await this.#fetch(url, {
      method,
      headers: {
        accept: 'application/json',
        ...(options.body === undefined ? {} : { 'content-type': 'application/json' }),
        ...(this.#token === undefined ? {} : { authorization: `Bearer ${this.#token}` }),
      },
      ...(options.body === undefined ? {} : { body: JSON.stringify(options.body) }),
      signal: options.signal ? AbortSignal.any([options.signal, timeout]) : timeout,
    });
    const text = await response.text();
    let parsed: unknown;
    try {
      parsed = text === '' ? undefined : JSON.parse(text);
    } catch {
      parsed = undefined;
    }
    if (!response.ok) {
      const error = errorBody.safeParse(parsed);
      // The path, never the URL with a query or the headers: the message ends up in the worker's log.
      throw new Error(
        `${method} /api/store/steering/${this.taskId}${route} answered ${response.status}${
          error.success ? ` ${error.data.error.code}: ${error.data.error.message}` : ''
        }`,
      );
    }
    return parsed;
  }
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
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
