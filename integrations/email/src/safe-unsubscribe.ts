import { lookup as dnsLookup } from 'node:dns/promises';
import http from 'node:http';
import https from 'node:https';
import { isIP, type LookupFunction } from 'node:net';
import { ActionNotTakenError, RetryableError, UnrecoverableError } from '@assistant/sdk';
import { isPublicAddress } from './public-address.ts';
import { outageRetryMs } from './smtp-transport.ts';

/** Where a one-click request may go, hop by hop. */
export interface UnsubscribeNetworkPolicy {
  /** URL schemes a hop may use. */
  protocols: readonly string[];
  /** Whether the request may connect to this IP address. */
  allowsAddress(address: string): boolean;
}

/** RFC 8058: https: only, to public internet addresses only. The policy of every request made from mail. */
export const publicHttpsOnly: UnsubscribeNetworkPolicy = { protocols: ['https:'], allowsAddress: isPublicAddress };

/** Every address a name resolves to (`dns.lookup` with `all: true`). */
export type LookupAll = (hostname: string) => Promise<{ address: string; family: number }[]>;

const systemLookup: LookupAll = (hostname) => dnsLookup(hostname, { all: true, verbatim: true });

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
  policy?: UnsubscribeNetworkPolicy;
}

export interface OneClickUnsubscribeResult {
  /** The final answer's status (2xx). */
  status: number;
  /** Every URL requested, the first one and each redirect. */
  hops: string[];
}

const redirectStatuses = new Set([301, 302, 303, 307, 308]);
const tryLaterStatuses = new Set([429, 502, 503, 504]);

/**
 * RFC 8058 one-click unsubscribe: a POST of `List-Unsubscribe=One-Click` to the target, made safe against a sender
 * who points it (or a redirect) at this machine's own services or the cloud's metadata address. On every hop the
 * scheme is checked, the host resolved once and every address it resolves to checked, and the request connects to
 * the checked address (no second lookup a rebinding DNS server could answer differently); redirects are followed
 * by hand, at most `maxRedirects`; the whole exchange has a deadline and answers are read only up to a cap.
 * A refusal is an UnrecoverableError (it will not change on retry). A failure before any connection was made (DNS,
 * a refused or unreachable host) or a first answer of 429/502/503/504 is ActionNotTakenError: nothing happened, and
 * the action is retried later. Any other network or HTTP failure is a RetryableError: the server may have acted.
 */
export async function oneClickUnsubscribe(options: OneClickUnsubscribeOptions): Promise<OneClickUnsubscribeResult> {
  const policy = options.policy ?? publicHttpsOnly;
  const lookup = options.lookup ?? systemLookup;
  const timeoutMs = options.timeoutMs ?? 30_000;
  const maxRedirects = options.maxRedirects ?? 3;
  const maxResponseBytes = options.maxResponseBytes ?? 65_536;
  const deadline = AbortSignal.timeout(timeoutMs);
  const signal = AbortSignal.any([...(options.signal ? [options.signal] : []), deadline]);
  let url = parseTarget(options.url);
  let method: 'POST' | 'GET' = 'POST';
  const hops: string[] = [];
  // Until a connection to the target is made, nothing can have happened: a failure then is ActionNotTakenError, and
  // the action is retried later instead of being failed as "may have happened".
  let connected = false;
  const failure = (message: string, cause?: unknown) =>
    connected
      ? new RetryableError(message, { cause })
      : new ActionNotTakenError(message, { cause, retryAtMs: Date.now() + outageRetryMs });
  try {
    for (;;) {
      signal.throwIfAborted();
      checkScheme(url, policy);
      const pinned = await resolveChecked(url, lookup, policy, signal);
      hops.push(url.href);
      const answer = await exchange({
        url,
        method,
        pinned,
        signal,
        maxResponseBytes,
        onConnected: () => {
          connected = true;
        },
      });
      if (redirectStatuses.has(answer.status)) {
        if (hops.length > maxRedirects) {
          throw new UnrecoverableError(
            `refused: the unsubscribe target ${new URL(options.url).host} answered with more than ${maxRedirects} redirects`,
          );
        }
        if (!answer.location) throw new RetryableError(`${url.host} answered HTTP ${answer.status} without a Location`);
        url = parseTarget(answer.location, url);
        // As browsers and fetch do: 301, 302 and 303 continue with a GET, 307 and 308 repeat the POST.
        if (answer.status !== 307 && answer.status !== 308) method = 'GET';
        continue;
      }
      if (answer.status >= 200 && answer.status < 300) return { status: answer.status, hops };
      const message = `the unsubscribe ${method} to ${url.host} answered HTTP ${answer.status}`;
      // "Try later" from the first server asked: it did not act on the request.
      if (hops.length === 1 && tryLaterStatuses.has(answer.status)) {
        throw new ActionNotTakenError(message, { retryAtMs: Date.now() + retryAfterMs(answer.retryAfter) });
      }
      throw new RetryableError(message);
    }
  } catch (error) {
    if (options.signal?.aborted) throw options.signal.reason;
    if (deadline.aborted) {
      throw failure(`the unsubscribe request to ${url.host} timed out after ${timeoutMs} ms`, error);
    }
    if (error instanceof UnrecoverableError || error instanceof ActionNotTakenError) throw error;
    // Before any connection (a name that does not resolve yet), a retryable failure did nothing either.
    if (error instanceof RetryableError) throw connected ? error : failure(error.message, error.cause);
    throw failure(`the unsubscribe request to ${url.host} failed: ${(error as Error).message}`, error);
  }
}

/** A `Retry-After` of seconds or an HTTP date, kept between a second and an hour; else the outage default. */
function retryAfterMs(header: string | undefined): number {
  if (header === undefined) return outageRetryMs;
  const delayMs = /^\d+$/.test(header.trim()) ? Number(header) * 1000 : Date.parse(header) - Date.now();
  return Number.isFinite(delayMs) ? Math.min(Math.max(delayMs, 1000), 3_600_000) : outageRetryMs;
}

function parseTarget(text: string, base?: URL): URL {
  try {
    return new URL(text, base);
  } catch {
    throw new UnrecoverableError(`refused: the unsubscribe target ${JSON.stringify(text.slice(0, 200))} is not a URL`);
  }
}

function checkScheme(url: URL, policy: UnsubscribeNetworkPolicy): void {
  if (!policy.protocols.includes(url.protocol)) {
    throw new UnrecoverableError(
      `refused: ${url.protocol}//${url.host} is not https:; one-click unsubscribe is https: only (RFC 8058)`,
    );
  }
  if (url.username || url.password) throw new UnrecoverableError(`refused: ${url.host}: a URL with credentials`);
}

/** The address to connect to: every address the host resolves to must be allowed, and the first is used. */
async function resolveChecked(
  url: URL,
  lookup: LookupAll,
  policy: UnsubscribeNetworkPolicy,
  signal: AbortSignal,
): Promise<{ address: string; family: 4 | 6 }> {
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
  const literal = isIP(host);
  const addresses = literal
    ? [{ address: host, family: literal }]
    : await untilAborted(lookup(host), signal).catch((error: unknown) => {
        if (signal.aborted) throw error;
        throw new RetryableError(`cannot resolve ${host}: ${(error as Error).message}`, { cause: error });
      });
  if (addresses.length === 0) throw new RetryableError(`cannot resolve ${host}: no addresses`);
  const refused = addresses.find((entry) => !policy.allowsAddress(entry.address));
  if (refused) {
    const where = literal ? `is ${refused.address}` : `resolves to ${refused.address}`;
    throw new UnrecoverableError(`refused: the unsubscribe target ${url.host} ${where}, not a public internet address`);
  }
  const [first] = addresses;
  return { address: first?.address ?? '', family: first?.family === 6 ? 6 : 4 };
}

/**
 * The promise, or the signal's reason when it aborts first. The listener is removed once either happens: a deadline
 * that fires later must not reject a promise nobody waits on any more.
 */
async function untilAborted<Result>(promise: Promise<Result>, signal: AbortSignal): Promise<Result> {
  signal.throwIfAborted();
  let onAbort = () => {};
  const abort = new Promise<never>((_, reject) => {
    onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
  });
  try {
    return await Promise.race([promise, abort]);
  } finally {
    signal.removeEventListener('abort', onAbort);
  }
}

/** One request to the pinned address; the body of the answer is read up to the cap and dropped. */
function exchange(options: {
  url: URL;
  method: 'POST' | 'GET';
  pinned: { address: string; family: 4 | 6 };
  signal: AbortSignal;
  maxResponseBytes: number;
  /** Called once the connection (and, for https:, its TLS handshake) is made: from then on the server may act. */
  onConnected: () => void;
}): Promise<{ status: number; location?: string; retryAfter?: string }> {
  const { url, method, pinned, signal, maxResponseBytes } = options;
  const body = method === 'POST' ? Buffer.from('List-Unsubscribe=One-Click') : undefined;
  // The connection goes to the address checked: the name is still used for the Host header, SNI and the
  // certificate check, but never resolved again.
  const pinnedLookup: LookupFunction = (_hostname, lookupOptions, callback) => {
    if (lookupOptions.all) callback(null, [{ address: pinned.address, family: pinned.family }]);
    else callback(null, pinned.address, pinned.family);
  };
  return new Promise((resolve, reject) => {
    const request = (url.protocol === 'https:' ? https : http).request(url, {
      method,
      agent: false,
      lookup: pinnedLookup,
      signal,
      headers: {
        'user-agent': 'Assistant (RFC 8058 one-click unsubscribe)',
        ...(body ? { 'content-type': 'application/x-www-form-urlencoded', 'content-length': body.length } : {}),
      },
    });
    request.on('socket', (socket) => {
      socket.once(url.protocol === 'https:' ? 'secureConnect' : 'connect', options.onConnected);
    });
    request.on('error', reject);
    request.on('response', (response) => {
      const status = response.statusCode ?? 0;
      const location = response.headers.location;
      const retryAfter = response.headers['retry-after'];
      const done = () => resolve({ status, ...(location ? { location } : {}), ...(retryAfter ? { retryAfter } : {}) });
      let read = 0;
      response.on('data', (chunk: Buffer) => {
        read += chunk.length;
        if (read > maxResponseBytes) {
          response.destroy();
          done();
        }
      });
      response.on('end', done);
      response.on('error', (error) => (read > maxResponseBytes ? done() : reject(error)));
    });
    request.end(body);
  });
}
