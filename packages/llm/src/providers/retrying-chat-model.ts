import type { ChatOptions, ChatRequest, ChatResponse } from '../chat-types.ts';
import { LlmAbortedError, LlmRequestError } from '../llm-errors.ts';
import type { ModelGate } from '../model-gate.ts';

/** What a provider's error means for the retry loop. */
export interface ErrorVerdict {
  /** The caller's cancellation (the SDK's abort error): never retried, never counted as a failure. */
  aborted?: boolean;
  /** How long to wait before retrying; undefined when retrying cannot help. */
  retryDelayMs: number | undefined;
  /** The endpoint itself is down, overloaded or timing out: the gate's breaker counts it. */
  unavailable: boolean;
  /** The server's `retry-after` in milliseconds, uncapped (the gate caps it). */
  retryAfterMs?: number | undefined;
}

export interface RetryingChatModelOptions {
  /** The profile's name, for errors. */
  name: string;
  /** Retries after an error whose verdict has a delay. @default 4 */
  maxRetries?: number | undefined;
  /** Waits between retries; tests shorten it. @default setTimeout honouring the signal */
  sleep?: ((ms: number, signal?: AbortSignal) => Promise<void>) | undefined;
  gate?: ModelGate | undefined;
  /**
   * Sends one attempt. `forwardDelta` (present when the caller streams) takes each piece of the reply's text; the
   * loop turns a retry after streamed text into a `restart`.
   */
  send: (
    request: ChatRequest,
    signal: AbortSignal | undefined,
    forwardDelta: ((text: string) => void) | undefined,
  ) => Promise<ChatResponse>;
  /** What an error of `send` means: the provider's status codes, headers and error classes. */
  classify: (error: unknown, attempt: number) => ErrorVerdict;
  /** The error thrown when the loop gives up on `error` (a typed error with the profile, a hint, secrets scrubbed). */
  failure: (error: unknown, attempt: number) => Error;
}

/**
 * The one retry loop of every provider: each attempt takes a permit from the profile's gate and reports its outcome
 * there; an error is classified by the provider and retried with backoff or the server's `retry-after`, or waits on
 * the gate's breaker when the endpoint is unavailable; a streamed attempt that is retried tells the listener to
 * restart. Cancellation is never retried and never counted as a failure.
 */
export function retryingChat(
  options: RetryingChatModelOptions,
): (request: ChatRequest, chatOptions?: ChatOptions) => Promise<ChatResponse> {
  const maxRetries = options.maxRetries ?? 4;
  const sleep = options.sleep ?? sleepFor;
  return async (request, chatOptions = {}) => {
    const { signal, onDelta } = chatOptions;
    // Whether the current attempt has streamed any text: a retry after it tells the caller to discard that text.
    let streamed = false;
    const deliver =
      onDelta === undefined
        ? undefined
        : (delta: { text: string; restart?: boolean }): void => {
            try {
              onDelta(delta);
            } catch {
              // A listener is an observer: its failure must not fail (or retry) the request it watches.
            }
          };
    const forward =
      deliver === undefined
        ? undefined
        : (text: string): void => {
            streamed = true;
            deliver({ text });
          };
    const { gate } = options;
    for (let attempt = 0; ; attempt += 1) {
      if (signal?.aborted) throw new LlmAbortedError(`${options.name}: cancelled`, { cause: signal.reason });
      // Throws ModelUnavailableError while the breaker is open for longer than a call should wait.
      const permit = await gate?.acquire({ request, signal });
      try {
        const response = await options.send(request, signal, forward);
        permit?.succeeded(response.usage);
        return response;
      } catch (error) {
        const verdict = signal?.aborted ? undefined : options.classify(error, attempt);
        if (verdict === undefined || verdict.aborted) {
          permit?.cancelled();
          throw new LlmAbortedError(`${options.name}: cancelled`, { cause: signal?.reason ?? error });
        }
        const { unavailable } = verdict;
        permit?.failed({ error, unavailable, retryAfterMs: unavailable ? verdict.retryAfterMs : undefined });
        if (error instanceof LlmRequestError) throw error;
        const retry = verdict.retryDelayMs;
        if (retry === undefined) throw options.failure(error, attempt);
        if (attempt >= maxRetries) {
          // Still unavailable after every retry: the worker puts the task aside until the breaker's retry time
          // instead of spending one of its attempts.
          throw gate !== undefined && unavailable ? gate.unavailableError(error) : options.failure(error, attempt);
        }
        if (streamed) {
          streamed = false;
          deliver?.({ text: '', restart: true });
        }
        // With a gate, the breaker it just opened is the wait: the next acquire waits for its trial (or throws).
        if (gate !== undefined && unavailable) continue;
        await sleep(retry, signal).catch(() => {
          throw new LlmAbortedError(`${options.name}: cancelled`, { cause: signal?.reason });
        });
      }
    }
  };
}

/** Backoff between retries: 1 s, 2 s, 4 s … capped at 30 s. */
export function exponentialDelayMs(attempt: number): number {
  return Math.min(30_000, 1_000 * 2 ** attempt);
}

/** A server's `retry-after` wins over the backoff, capped at 60 s. */
export const maxRetryAfterMs = 60_000;

/** `retry-after` as seconds or an HTTP date, in milliseconds; undefined when absent or unreadable. */
export function parseRetryAfterMs(header: string | null | undefined): number | undefined {
  if (!header) return undefined;
  const seconds = Number(header);
  const waitMs = Number.isFinite(seconds) ? seconds * 1_000 : Date.parse(header) - Date.now();
  return Number.isFinite(waitMs) && waitMs >= 0 ? waitMs : undefined;
}

function sleepFor(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
