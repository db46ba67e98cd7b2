import { AssistantError, scrubSecrets } from '@assistant/errors';
import { AdaptiveLimit, defaultAdaptiveCeiling, type LimitTicket } from './adaptive-limit.ts';
import type { ChatRequest, TokenUsage } from './chat-types.ts';
import { LlmAbortedError } from './llm-errors.ts';

/**
 * A profile's breaker. `closed`: calls go out. `open`: the endpoint failed (refused, 429, 5xx, timed out) and no call
 * is sent before `retryAt`. `half_open`: one trial call is out; its outcome closes or reopens the breaker.
 */
export type ModelBreakerState = 'closed' | 'open' | 'half_open';

/** A profile's limit on requests at once: what the worker's claims need of its status. */
export type ModelProfileLimits = Pick<ModelProfileStatus, 'profile' | 'maxInFlight' | 'adaptive'>;

/** What one LLM profile is doing in this process: for the worker's claims, /health, /metrics and the dashboard. */
export interface ModelProfileStatus {
  profile: string;
  model: string;
  /** The most requests sent to the endpoint at once now: `max_in_flight` when set, else the adaptive limit. */
  maxInFlight: number;
  /** Present when `max_in_flight` is not set: the limit is found from the endpoint's latency, up to `ceiling`. */
  adaptive?: { ceiling: number };
  /** Requests sent and not yet answered. */
  inFlight: number;
  /** Calls waiting for a slot, for the per-minute budget, or for the breaker's trial. */
  waiting: number;
  /** Requests answered since the process started. */
  requests: number;
  /** Requests that failed because the endpoint was unavailable, since the process started. */
  failures: number;
  requestsLastMinute: number;
  /** Prompt and completion tokens of the requests answered in the last minute (server-reported, else estimated). */
  tokensLastMinute: number;
  /** The median time to answer of the last 50 answered requests; null before the first. */
  latencyMs: number | null;
  breaker: {
    state: ModelBreakerState;
    consecutiveFailures: number;
    /** ISO time from which the next trial call may be sent (open, half_open). */
    retryAt?: string;
    lastError?: string;
  };
}

/**
 * The profile's endpoint is unavailable (connection refused, 429, 5xx, timeouts) and its breaker is open: nothing was
 * sent. Not a failure of the task: the worker puts the task back until `retryAtMs` without spending an attempt.
 */
export class ModelUnavailableError extends AssistantError {
  readonly profile: string;
  readonly retryAtMs: number;

  constructor(profile: string, retryAtMs: number, message: string, options: { cause?: unknown } = {}) {
    super('LLM_UNAVAILABLE', message, {
      ...(options.cause === undefined ? {} : { cause: options.cause }),
      hint: 'the task waits for the model and resumes by itself; `assistant doctor` checks the profile',
    });
    this.profile = profile;
    this.retryAtMs = retryAtMs;
  }
}

/** The first ModelUnavailableError in an error's `cause` chain (handlers may wrap it). */
export function findModelUnavailable(error: unknown): ModelUnavailableError | undefined {
  let current: unknown = error;
  for (let depth = 0; depth < 10 && current instanceof Error; depth++) {
    if (current instanceof ModelUnavailableError) return current;
    current = current.cause;
  }
  return undefined;
}

/** What the gate needs of a request to estimate its tokens before the server reports them. */
type EstimatedRequest = Pick<ChatRequest, 'messages' | 'tools' | 'responseFormat'>;

/**
 * A request's tokens before the server counts them: a quarter of the characters of its messages, tools and schema.
 * Rough on purpose: it only has to keep a tokens-per-minute budget from being overrun before the usage comes back.
 */
export function estimateTokens(request: EstimatedRequest): number {
  const characters =
    JSON.stringify(request.messages).length +
    (request.tools ? JSON.stringify(request.tools).length : 0) +
    (request.responseFormat ? JSON.stringify(request.responseFormat).length : 0);
  return Math.ceil(characters / 4);
}

export interface ModelGateOptions {
  profile: string;
  model: string;
  /** The endpoint, named in {@link ModelUnavailableError}'s message. */
  baseUrl: string;
  /**
   * Requests sent to the endpoint at once (`max_in_flight`). Unset: the gate finds how many the endpoint serves at
   * once from its latency and its 429/5xx answers ({@link AdaptiveLimit}), from 1 up to `adaptiveCeiling`.
   */
  maxInFlight?: number | undefined;
  /** The most the adaptive limit may reach. @default 64 */
  adaptiveCeiling?: number;
  /** At most this many requests sent in any 60 s. @default unlimited */
  requestsPerMinute?: number | undefined;
  /** At most this many tokens (estimated, then as reported) in any 60 s. @default unlimited */
  tokensPerMinute?: number | undefined;
  /**
   * A call that meets an open breaker waits for the trial when it is due within this long; later, it throws
   * {@link ModelUnavailableError} at once so the worker can put its task aside. @default 5_000
   */
  inlineWaitMs?: number;
  /** The breaker stays open this long after the first failure, doubling with each failure in a row. @default 1_000 */
  backoffBaseMs?: number;
  /** The longest the breaker stays open on its own backoff (a `retry-after` may say longer). @default 60_000 */
  backoffMaxMs?: number;
  /** The clock, in epoch milliseconds. @default Date.now */
  now?: () => number;
  /** Called whenever the in-flight or waiting count, the adaptive limit or the breaker changes. */
  onChange?: () => void;
}

/** The right to send one request, from {@link ModelGate.acquire}; exactly one of its methods reports the outcome. */
export interface GatePermit {
  /** This request is the breaker's trial: its outcome closes or reopens the breaker. */
  readonly trial: boolean;
  succeeded(usage?: TokenUsage): void;
  /**
   * The request failed. `unavailable`: the endpoint is down, overloaded or timing out (opens the breaker);
   * otherwise the server did answer (a 400, a 401, a body that is not JSON), which says the endpoint is up.
   */
  failed(outcome: { error: unknown; unavailable: boolean; retryAfterMs?: number | undefined }): void;
  /** The caller aborted: not the endpoint's failure. */
  cancelled(): void;
}

interface Waiter {
  estimate: number;
  admit: (permit: GatePermit) => void;
  refuse: (error: Error) => void;
}

/** A `retry-after` longer than this is taken as this: a server that says "come back tomorrow" is asked sooner. */
const maxRetryAfterMs = 10 * 60_000;
/** The sliding window of the per-minute budgets and figures. */
const windowMs = 60_000;
const latencySamples = 50;
const maxLastErrorLength = 300;

/**
 * One profile's gate in this process: a FIFO semaphore of `maxInFlight` (or of a limit it finds itself when that is
 * not set, see {@link AdaptiveLimit}), the per-minute budgets, and a breaker.
 * Every request a profile's model sends first takes a permit here and then reports its outcome on it, so N tasks
 * sharing a profile keep the endpoint exactly as busy as configured, and an outage is backed off once for all of
 * them instead of each task retrying at its own pace.
 */
export class ModelGate {
  readonly #options: ModelGateOptions;
  readonly #now: () => number;
  readonly #inlineWaitMs: number;
  readonly #backoffBaseMs: number;
  readonly #backoffMaxMs: number;
  // FIFO: only the head is ever admitted, so a small request never overtakes a large one waiting on the budget.
  readonly #queue: Waiter[] = [];
  // Requests sent in the last minute, oldest first: when, and their tokens (estimated until the usage comes back).
  readonly #sent: { atMs: number; tokens: number }[] = [];
  readonly #latenciesMs: number[] = [];
  #inFlight = 0;
  #requests = 0;
  #failures = 0;
  #state: ModelBreakerState = 'closed';
  #consecutiveFailures = 0;
  #retryAtMs: number | undefined;
  #lastError: string | undefined;
  // Bumped whenever the breaker opens or closes: a request sent before that reports on a state that has passed.
  #epoch = 0;
  #timer: NodeJS.Timeout | undefined;
  #timerAtMs: number | undefined;
  readonly #adaptive: AdaptiveLimit | undefined;

  constructor(options: ModelGateOptions) {
    this.#options = options;
    this.#now = options.now ?? Date.now;
    this.#inlineWaitMs = options.inlineWaitMs ?? 5_000;
    this.#backoffBaseMs = options.backoffBaseMs ?? 1_000;
    this.#backoffMaxMs = options.backoffMaxMs ?? 60_000;
    this.#adaptive =
      options.maxInFlight === undefined
        ? new AdaptiveLimit({ maxLimit: options.adaptiveCeiling ?? defaultAdaptiveCeiling })
        : undefined;
  }

  // Requests that may be out at once now.
  #limit(): number {
    return this.#adaptive?.limit ?? this.#options.maxInFlight ?? 1;
  }

  /**
   * Waits until the request may be sent: a free slot, room in the budgets, and a breaker that is closed (or due for
   * its trial, which this request then is). Throws {@link ModelUnavailableError} when the breaker is open for longer
   * than `inlineWaitMs`, and LlmAbortedError when `signal` aborts first (leaving the queue).
   */
  acquire(options: { request: EstimatedRequest; signal?: AbortSignal | undefined }): Promise<GatePermit> {
    const { signal } = options;
    if (signal?.aborted) return Promise.reject(this.#aborted(signal));
    const refusal = this.#refusal(this.#now());
    if (refusal) return Promise.reject(refusal);
    return new Promise<GatePermit>((resolve, reject) => {
      const onAbort = (): void => {
        const position = this.#queue.indexOf(waiter);
        if (position < 0) return;
        this.#queue.splice(position, 1);
        reject(this.#aborted(signal));
        // The head may have changed, and with it what the budget allows.
        this.#pump();
        this.#changed();
      };
      const waiter: Waiter = {
        estimate: estimateTokens(options.request),
        admit: (permit) => {
          signal?.removeEventListener('abort', onAbort);
          resolve(permit);
        },
        refuse: (error) => {
          signal?.removeEventListener('abort', onAbort);
          reject(error);
        },
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.#queue.push(waiter);
      this.#pump();
      this.#changed();
    });
  }

  /**
   * Whether a call would be sent now (or wait only for a slot or the budget). Not while the breaker is open before
   * its retry time, nor while its trial is out: then `retryAtMs` is the earliest another trial could go.
   */
  availability(nowMs = this.#now()): { available: true } | { available: false; retryAtMs: number } {
    if (this.#state === 'open' && this.#retryAtMs !== undefined && this.#retryAtMs > nowMs) {
      return { available: false, retryAtMs: this.#retryAtMs };
    }
    if (this.#state === 'half_open') {
      return { available: false, retryAtMs: nowMs + this.#backoffMs(this.#consecutiveFailures + 1) };
    }
    return { available: true };
  }

  /**
   * The error for a call that gives up because the endpoint stayed unavailable through its retries, or met an open
   * breaker: nothing more was sent, and the breaker says when to come back.
   */
  unavailableError(cause?: unknown): ModelUnavailableError {
    const now = this.#now();
    const retryAtMs =
      this.#state === 'closed' || this.#retryAtMs === undefined
        ? now + this.#backoffBaseMs
        : this.#state === 'half_open'
          ? now + this.#backoffMs(this.#consecutiveFailures + 1)
          : Math.max(this.#retryAtMs, now);
    const { profile, model, baseUrl } = this.#options;
    return new ModelUnavailableError(
      profile,
      retryAtMs,
      `LLM profile ${profile} (${model} at ${baseUrl}) is unavailable: ${this.#lastError ?? 'no answer'}; the next try is at ${new Date(retryAtMs).toISOString()}`,
      cause === undefined ? {} : { cause },
    );
  }

  /** What `status` says of the limit alone, without the figures it works out (the worker asks at every pass). */
  limits(): ModelProfileLimits {
    return {
      profile: this.#options.profile,
      maxInFlight: this.#limit(),
      ...(this.#adaptive ? { adaptive: { ceiling: this.#adaptive.maxLimit } } : {}),
    };
  }

  status(nowMs = this.#now()): ModelProfileStatus {
    this.#prune(nowMs);
    const latencies = [...this.#latenciesMs].sort((left, right) => left - right);
    return {
      profile: this.#options.profile,
      model: this.#options.model,
      maxInFlight: this.#limit(),
      ...(this.#adaptive ? { adaptive: { ceiling: this.#adaptive.maxLimit } } : {}),
      inFlight: this.#inFlight,
      waiting: this.#queue.length,
      requests: this.#requests,
      failures: this.#failures,
      requestsLastMinute: this.#sent.length,
      tokensLastMinute: this.#sent.reduce((sum, entry) => sum + entry.tokens, 0),
      latencyMs: median(latencies),
      breaker: {
        state: this.#state,
        consecutiveFailures: this.#consecutiveFailures,
        ...(this.#state !== 'closed' && this.#retryAtMs !== undefined
          ? { retryAt: new Date(this.#retryAtMs).toISOString() }
          : {}),
        ...(this.#lastError === undefined ? {} : { lastError: this.#lastError }),
      },
    };
  }

  // An open breaker whose trial is further off than a caller should wait inline.
  #refusal(nowMs: number): ModelUnavailableError | undefined {
    if (this.#state !== 'open' || this.#retryAtMs === undefined) return undefined;
    return this.#retryAtMs - nowMs > this.#inlineWaitMs ? this.unavailableError() : undefined;
  }

  #aborted(signal: AbortSignal | undefined): LlmAbortedError {
    return new LlmAbortedError(`${this.#options.profile}: cancelled`, { cause: signal?.reason });
  }

  // Admits waiters from the head while the breaker, a slot and the budgets allow; otherwise arms a timer for the
  // moment the breaker or the budget will (a freed slot or a trial's outcome calls this again). With nobody waiting,
  // an open breaker still gets a timer at its retry time, so subscribers hear that a trial may go.
  #pump(): void {
    const now = this.#now();
    let wakeAtMs: number | undefined;
    while (this.#queue.length > 0) {
      if (this.#state === 'half_open') break;
      if (this.#state === 'open' && this.#retryAtMs !== undefined && this.#retryAtMs > now) {
        wakeAtMs = this.#retryAtMs;
        break;
      }
      if (this.#inFlight >= this.#limit()) break;
      const head = this.#queue[0] as Waiter;
      const allowedAtMs = this.#budgetAllowsAt(head.estimate, now);
      if (allowedAtMs > now) {
        wakeAtMs = allowedAtMs;
        break;
      }
      this.#queue.shift();
      head.admit(this.#permit(head.estimate, now));
    }
    const idle = this.#queue.length === 0;
    if (idle && this.#state === 'open' && this.#retryAtMs !== undefined && this.#retryAtMs > now) {
      wakeAtMs = this.#retryAtMs;
    }
    this.#wakeAt(wakeAtMs, !idle);
  }

  // `keepAlive`: a call is waiting on this timer; otherwise it only tells subscribers and must not hold the process.
  #wakeAt(atMs: number | undefined, keepAlive: boolean): void {
    if (atMs !== this.#timerAtMs) {
      clearTimeout(this.#timer);
      this.#timer = undefined;
      this.#timerAtMs = atMs;
      if (atMs === undefined) return;
      this.#timer = this.#armTimer(atMs);
    }
    if (keepAlive) this.#timer?.ref();
    else this.#timer?.unref();
  }

  #armTimer(atMs: number): NodeJS.Timeout {
    return setTimeout(
      () => {
        this.#timer = undefined;
        this.#timerAtMs = undefined;
        this.#pump();
        this.#changed();
      },
      Math.max(0, atMs - this.#now()),
    );
  }

  // The earliest time the last minute's requests and tokens leave room for one more request of `estimate` tokens.
  #budgetAllowsAt(estimate: number, nowMs: number): number {
    this.#prune(nowMs);
    let atMs = nowMs;
    const { requestsPerMinute, tokensPerMinute } = this.#options;
    if (requestsPerMinute !== undefined && this.#sent.length >= requestsPerMinute) {
      const blocking = this.#sent[this.#sent.length - requestsPerMinute];
      if (blocking) atMs = Math.max(atMs, blocking.atMs + windowMs);
    }
    if (tokensPerMinute !== undefined) {
      let total = this.#sent.reduce((sum, entry) => sum + entry.tokens, 0);
      // A request larger than the whole budget goes once the minute is empty, rather than never.
      for (const entry of this.#sent) {
        if (total + estimate <= tokensPerMinute) break;
        total -= entry.tokens;
        atMs = Math.max(atMs, entry.atMs + windowMs);
      }
    }
    return atMs;
  }

  #prune(nowMs: number): void {
    while (this.#sent.length > 0 && (this.#sent[0]?.atMs ?? nowMs) <= nowMs - windowMs) this.#sent.shift();
  }

  #permit(estimate: number, nowMs: number): GatePermit {
    const trial = this.#state === 'open';
    if (trial) this.#state = 'half_open';
    const epoch = this.#epoch;
    const sent = { atMs: nowMs, tokens: estimate };
    this.#sent.push(sent);
    this.#inFlight += 1;
    // For the adaptive limit: the window this request counts in, and whether the gate is using all of its limit.
    const ticket: LimitTicket | undefined = this.#adaptive?.sent({ saturated: this.#inFlight >= this.#limit() });
    let settled = false;
    const settle = (): boolean => {
      if (settled) return false;
      settled = true;
      this.#inFlight -= 1;
      return true;
    };
    return {
      trial,
      succeeded: (usage) => {
        if (!settle()) return;
        this.#requests += 1;
        const latencyMs = this.#now() - nowMs;
        this.#latenciesMs.push(latencyMs);
        if (this.#latenciesMs.length > latencySamples) this.#latenciesMs.shift();
        if (ticket) this.#adaptive?.answered(ticket, latencyMs);
        if (usage) sent.tokens = usage.totalTokens;
        // A request sent before the breaker opened says nothing about the endpoint now: only the trial closes it.
        if (trial || epoch === this.#epoch) this.#close();
        this.#pump();
        this.#changed();
      },
      failed: (outcome) => {
        if (!settle()) return;
        this.#requests += 1;
        if (!outcome.unavailable) {
          // The server answered (a 400, a 401): it is up, whatever it thought of this request.
          if (trial) this.#close();
          if (ticket) this.#adaptive?.ignored(ticket);
        } else {
          this.#failures += 1;
          this.#lastError = oneLine(outcome.error);
          // Overloaded or down: half as many at once, once for all the requests sent under the same limit.
          if (ticket) this.#adaptive?.dropped(ticket);
          const retryAfterMs =
            outcome.retryAfterMs === undefined ? 0 : Math.min(maxRetryAfterMs, Math.max(0, outcome.retryAfterMs));
          if (trial || (this.#state === 'closed' && epoch === this.#epoch)) {
            this.#open(retryAfterMs);
          } else if (this.#state === 'open' && this.#retryAtMs !== undefined) {
            // Requests that were already out when the breaker opened fail too; they do not add failures in a row
            // (one outage, one backoff), but a longer `retry-after` from the server is heeded.
            this.#retryAtMs = Math.max(this.#retryAtMs, this.#now() + retryAfterMs);
          }
        }
        this.#pump();
        this.#changed();
      },
      cancelled: () => {
        if (!settle()) return;
        if (ticket) this.#adaptive?.ignored(ticket);
        // An abandoned trial proved nothing: the next caller becomes the trial.
        if (trial && this.#state === 'half_open') this.#state = 'open';
        this.#pump();
        this.#changed();
      },
    };
  }

  #close(): void {
    if (this.#state === 'closed' && this.#consecutiveFailures === 0) return;
    this.#state = 'closed';
    this.#consecutiveFailures = 0;
    this.#retryAtMs = undefined;
    this.#epoch += 1;
  }

  #open(retryAfterMs: number): void {
    this.#consecutiveFailures += 1;
    const now = this.#now();
    this.#retryAtMs = now + Math.max(this.#backoffMs(this.#consecutiveFailures), retryAfterMs);
    this.#state = 'open';
    this.#epoch += 1;
    // Callers waiting their turn who would now wait longer than they should are told when to come back instead.
    const refusal = this.#refusal(now);
    if (refusal === undefined) return;
    for (const waiter of this.#queue.splice(0)) waiter.refuse(this.unavailableError());
  }

  #backoffMs(failures: number): number {
    return Math.min(this.#backoffMaxMs, this.#backoffBaseMs * 2 ** Math.max(0, failures - 1));
  }

  #changed(): void {
    try {
      this.#options.onChange?.();
    } catch {
      // A listener is an observer: its failure must not break the calls it watches.
    }
  }
}

function median(sorted: number[]): number | null {
  if (sorted.length === 0) return null;
  const middle = Math.floor(sorted.length / 2);
  const upper = sorted[middle] as number;
  return sorted.length % 2 === 1 ? upper : Math.round(((sorted[middle - 1] as number) + upper) / 2);
}

// The error as one line for status() and the unavailability message: no secret a proxy echoed, no stack, no essay.
function oneLine(error: unknown): string {
  // The SDK's "Connection error." says little; its causes say "fetch failed", "connect ECONNREFUSED 127.0.0.1:1".
  const causes: string[] = [];
  let cause = error instanceof Error ? error.cause : undefined;
  for (let depth = 0; depth < 3 && cause instanceof Error; depth++, cause = cause.cause) causes.push(cause.message);
  const text =
    error instanceof Error ? `${error.message}${causes.length > 0 ? ` (${causes.join('; ')})` : ''}` : String(error);
  const line = scrubSecrets(text.split('\n')[0] ?? '').trim();
  return line.length > maxLastErrorLength ? `${line.slice(0, maxLastErrorLength - 1)}…` : line;
}
