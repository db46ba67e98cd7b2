import {
  ActionNotTakenError,
  type LookupAll,
  OutboundError,
  type OutboundPolicy,
  publicHttpsOnly,
  RetryableError,
  type SafeFetchResult,
  safeFetch,
  UnrecoverableError,
} from '@assistant/sdk';
import { outageRetryMs } from './smtp-transport.ts';

export interface OneClickUnsubscribeOptions {
  /** The https: target of the List-Unsubscribe header. */
  url: string;
  signal?: AbortSignal;
  /** For the whole exchange, every hop. @default 30_000 */
  timeoutMs?: number;
  /** Redirects followed, each checked like the first request. @default 3 */
  maxRedirects?: number;
  /** Of each answer's body, read and discarded; the rest is not read. @default 65_536 */
  maxResponseBytes?: number;
  /** Resolves host names; once per hop, and the request connects to the address checked. @default dns.lookup */
  lookup?: LookupAll;
  /**
   * Tests only (loopback servers, plain http:): the handler never passes one, so nothing a mail says can reach it.
   * @default publicHttpsOnly
   */
  policy?: OutboundPolicy;
}

export interface OneClickUnsubscribeResult {
  /** The final answer's status (2xx). */
  status: number;
  /** Every URL requested, the first one and each redirect. */
  hops: string[];
}

const tryLaterStatuses = new Set([429, 502, 503, 504]);

/**
 * RFC 8058 one-click unsubscribe: a POST of `List-Unsubscribe=One-Click` to the target, through the shared outbound
 * rules (`safeFetch`): against a sender who points it (or a redirect) at this machine's own services or the cloud's
 * metadata address, every hop's scheme is checked, its host resolved once and every address checked, and the request
 * connects to the checked address; redirects are followed by hand, at most `maxRedirects`; the whole exchange has a
 * deadline and answers are read only up to a cap.
 * A refusal is an UnrecoverableError (it will not change on retry). A failure before any connection was made (DNS,
 * a refused or unreachable host) or a first answer of 429/502/503/504 is ActionNotTakenError: nothing happened, and
 * the action is retried later. Any other network or HTTP failure is a RetryableError: the server may have acted.
 */
export async function oneClickUnsubscribe(options: OneClickUnsubscribeOptions): Promise<OneClickUnsubscribeResult> {
  const timeoutMs = options.timeoutMs ?? 30_000;
  let answer: SafeFetchResult;
  try {
    answer = await safeFetch({
      url: options.url,
      method: 'POST',
      body: 'List-Unsubscribe=One-Click',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      policy: options.policy ?? publicHttpsOnly,
      ...(options.lookup ? { lookup: options.lookup } : {}),
      ...(options.signal ? { signal: options.signal } : {}),
      timeoutMs,
      maxRedirects: options.maxRedirects ?? 3,
      // The answer is read and dropped: past the cap it is cut, not refused (the request was made either way).
      maxBytes: options.maxResponseBytes ?? 65_536,
      oversize: 'truncate',
      userAgent: 'Assistant (RFC 8058 one-click unsubscribe)',
      what: 'the unsubscribe target',
    });
  } catch (error) {
    if (options.signal?.aborted) throw options.signal.reason;
    if (!(error instanceof OutboundError)) throw error;
    if (error.code === 'OUTBOUND_REFUSED') throw new UnrecoverableError(error.message, { cause: error });
    const host = new URL(error.url).host;
    const message = error.timedOut
      ? `the unsubscribe request to ${host} timed out after ${timeoutMs} ms`
      : `the unsubscribe request to ${host} failed: ${error.cause instanceof Error ? error.cause.message : error.message}`;
    // Until a connection to the target is made, nothing can have happened: the action is retried later instead of
    // being failed as "may have happened".
    throw error.connected
      ? new RetryableError(message, { cause: error })
      : new ActionNotTakenError(message, { cause: error, retryAtMs: Date.now() + outageRetryMs });
  }
  const { status, hops } = answer;
  if (status >= 200 && status < 300) return { status, hops };
  const message = `the unsubscribe request to ${new URL(answer.url).host} answered HTTP ${status}`;
  // "Try later" from the first server asked: it did not act on the request.
  if (hops.length === 1 && tryLaterStatuses.has(status)) {
    throw new ActionNotTakenError(message, { retryAtMs: Date.now() + retryAfterMs(answer.headers['retry-after']) });
  }
  throw new RetryableError(message);
}

/** A `Retry-After` of seconds or an HTTP date, kept between a second and an hour; else the outage default. */
function retryAfterMs(header: string | undefined): number {
  if (header === undefined) return outageRetryMs;
  const delayMs = /^\d+$/.test(header.trim()) ? Number(header) * 1000 : Date.parse(header) - Date.now();
  return Number.isFinite(delayMs) ? Math.min(Math.max(delayMs, 1000), 3_600_000) : outageRetryMs;
}
