import { AssistantError } from '@assistant/errors';

/**
 * A profile's breaker. `closed`: calls go out. `open`: the endpoint failed (refused, 429, 5xx, timed out) and no call
 * is sent before `retryAt`. `half_open`: one trial call is out; its outcome closes or reopens the breaker.
 */
export type ModelBreakerState = 'closed' | 'open' | 'half_open';

/** What one LLM profile is doing in this process: for the worker's claims, /health, /metrics and the dashboard. */
export interface ModelProfileStatus {
  profile: string;
  model: string;
  /** The most requests sent to the endpoint at once (`max_in_flight`). */
  maxInFlight: number;
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
