import { isIP, type LookupFunction } from 'node:net';
import { OutboundError, type OutboundRefusal } from './outbound-error.ts';
import { type LookupAll, type OutboundPolicy, systemLookup } from './outbound-policy.ts';

/** Options of {@link safeFetch}. */
export interface SafeFetchOptions {
  /** The first URL; its scheme, host and every address it resolves to are checked against `policy`. */
  url: string;
  /** 301, 302 and 303 continue with a GET, as browsers do; 307 and 308 repeat the method and body. @default 'GET' */
  method?: 'GET' | 'POST';
  /** The request body, for a POST. */
  body?: string | Uint8Array;
  /**
   * Extra request headers (`content-type` of the body, an API key). `host` cannot be set. They go to the first URL's
   * origin only: a redirect to another origin gets just `accept` and `content-type`, so a key never follows it.
   */
  headers?: Readonly<Record<string, string>>;
  /** Where each hop may go. No default: the caller says which rules apply. */
  policy: OutboundPolicy;
  /** For the whole exchange, every hop and the reading of the answer. @default 15_000 */
  timeoutMs?: number;
  /** Of the answer's body. @default 2_097_152 (2 MiB) */
  maxBytes?: number;
  /** What an answer larger than `maxBytes` is: refused (`too_large`), or cut at the cap (`truncated: true`). @default 'refuse' */
  oversize?: 'refuse' | 'truncate';
  /** Redirects followed, each checked like the first request. @default 5 */
  maxRedirects?: number;
  /**
   * Media types a 2xx answer may have (`text/html`, without parameters); any other is refused before its body is
   * read. @default any
   */
  allowedContentTypes?: readonly string[];
  /** Resolves host names, once per hop; the request connects to the address checked. @default dns.lookup */
  lookup?: LookupAll;
  /** @default 'Assistant' */
  userAgent?: string;
  /** Names the target in messages: `refused: the unsubscribe target x.example resolves to 10.0.0.1…`. @default 'the URL' */
  what?: string;
  signal?: AbortSignal;
}

/** The final answer of {@link safeFetch}, whatever its status (a 404 is an answer, not an error). */
export interface SafeFetchResult {
  status: number;
  /** The URL that gave this answer, after redirects. */
  url: string;
  /** Every URL requested: the first and each redirect. */
  hops: string[];
  /** Lower-case names; repeated headers joined with `, `. */
  headers: Record<string, string>;
  /** The media type without parameters, lower case (`text/html`); '' when the answer names none. */
  contentType: string;
  /** The body, decoded by its charset (the header's, else an HTML `<meta charset>`, else UTF-8), at most `maxBytes`. */
  body: string;
  /** The body was longer than `maxBytes` and cut (only with `oversize: 'truncate'`). */
  truncated: boolean;
}

const redirectStatuses = new Set([301, 302, 303, 307, 308]);

/**
 * An HTTP request to a URL that outside text chose (a mail, a web page, a model), made safe against being pointed at
 * this machine's own services, the local network or the cloud's metadata address. On every hop the scheme is
 * checked, the host resolved once and every address it resolves to checked, and the request connects to the checked
 * address (no second lookup a rebinding DNS server could answer differently; the name still serves the Host header,
 * SNI and the certificate check). Redirects are followed by hand, each checked like the first, at most
 * `maxRedirects`. The whole exchange has a deadline, the body a size cap (a `content-length` above it is refused
 * before reading), and a 2xx answer's content type may be limited. Throws {@link OutboundError}; an abort of
 * `signal` rejects with its reason.
 */
export async function safeFetch(options: SafeFetchOptions): Promise<SafeFetchResult> {
  const { policy } = options;
  const lookup = options.lookup ?? systemLookup;
  const timeoutMs = options.timeoutMs ?? 15_000;
  const maxBytes = options.maxBytes ?? 2_097_152;
  const maxRedirects = options.maxRedirects ?? 5;
  const what = options.what ?? 'the URL';
  const deadline = AbortSignal.timeout(timeoutMs);
  const signal = AbortSignal.any([...(options.signal ? [options.signal] : []), deadline]);
  let url = parseUrl(options.url, what);
  let method = options.method ?? 'GET';
  let body = options.body;
  let headers = options.headers ?? {};
  const hops: string[] = [];
  let connected = false;
  const refuse = (refusal: OutboundRefusal, message: string) =>
    new OutboundError(`refused: ${message}`, { url: url.href, refusal, connected });
  try {
    for (;;) {
      signal.throwIfAborted();
      checkUrl(url, policy, what, refuse);
      const pinned = await resolveChecked(url, lookup, policy, signal, what, refuse);
      hops.push(url.href);
      const answer = await exchange({
        url,
        method,
        body,
        headers,
        userAgent: options.userAgent ?? 'Assistant',
        pinned,
        signal,
        maxBytes,
        oversize: options.oversize ?? 'refuse',
        allowedContentTypes: options.allowedContentTypes,
        onConnected: () => {
          connected = true;
        },
        refuse,
        what,
      });
      const location = answer.headers.location;
      if (redirectStatuses.has(answer.status) && location) {
        if (hops.length > maxRedirects) {
          throw refuse(
            'redirects',
            `${what} ${new URL(options.url).host} answered with more than ${maxRedirects} redirects`,
          );
        }
        const next = parseUrl(location, what, url);
        if (next.origin !== url.origin) headers = crossOriginHeaders(headers);
        url = next;
        if (answer.status !== 307 && answer.status !== 308) {
          method = 'GET';
          body = undefined;
        }
        continue;
      }
      return { ...answer, url: url.href, hops };
    }
  } catch (error) {
    if (options.signal?.aborted) throw options.signal.reason;
    if (deadline.aborted) {
      throw new OutboundError(`the request to ${url.host} timed out after ${timeoutMs} ms`, {
        url: url.href,
        connected,
        timedOut: true,
        cause: error,
      });
    }
    if (error instanceof OutboundError) throw error;
    throw new OutboundError(`the request to ${url.host} failed: ${(error as Error).message}`, {
      url: url.href,
      connected,
      cause: error,
    });
  }
}

type Refuse = (refusal: OutboundRefusal, message: string) => OutboundError;

/** The headers that describe the request rather than who sends it, kept across origins. */
const crossOriginSafe = new Set(['accept', 'content-type']);

function crossOriginHeaders(headers: Readonly<Record<string, string>>): Record<string, string> {
  return Object.fromEntries(Object.entries(headers).filter(([name]) => crossOriginSafe.has(name.toLowerCase())));
}

function parseUrl(text: string, what: string, base?: URL): URL {
  try {
    return new URL(text, base);
  } catch {
    throw new OutboundError(`refused: ${what} ${JSON.stringify(text.slice(0, 200))} is not a URL`, {
      url: text.slice(0, 2000),
      refusal: 'not_url',
      connected: false,
    });
  }
}

function checkUrl(url: URL, policy: OutboundPolicy, what: string, refuse: Refuse): void {
  if (!policy.protocols.includes(url.protocol)) {
    throw refuse(
      'scheme',
      `${what} ${url.protocol}//${url.host} uses ${url.protocol}, and only ${policy.protocols.join(' and ')} may be used`,
    );
  }
  if (url.username || url.password) throw refuse('credentials', `${what} ${url.host} is a URL with credentials`);
}

/** The address to connect to: every address the host resolves to must be allowed, and the first is used. */
async function resolveChecked(
  url: URL,
  lookup: LookupAll,
  policy: OutboundPolicy,
  signal: AbortSignal,
  what: string,
  refuse: Refuse,
): Promise<{ address: string; family: 4 | 6 }> {
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
  const literal = isIP(host);
  const addresses = literal
    ? [{ address: host, family: literal }]
    : await untilAborted(lookup(host), signal).catch((error: unknown) => {
        if (signal.aborted) throw error;
        throw new Error(`cannot resolve ${host}: ${(error as Error).message}`, { cause: error });
      });
  if (addresses.length === 0) throw new Error(`cannot resolve ${host}: no addresses`);
  const refused = addresses.find((entry) => !policy.allowsAddress(entry.address));
  if (refused) {
    const where = literal ? `is ${refused.address}` : `resolves to ${refused.address}`;
    throw refuse('address', `${what} ${url.host} ${where}, not a public internet address`);
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

interface ExchangeOptions {
  url: URL;
  method: 'GET' | 'POST';
  body: string | Uint8Array | undefined;
  headers: Readonly<Record<string, string>>;
  userAgent: string;
  pinned: { address: string; family: 4 | 6 };
  signal: AbortSignal;
  maxBytes: number;
  oversize: 'refuse' | 'truncate';
  allowedContentTypes: readonly string[] | undefined;
  /** Called once the connection (and, for https:, its TLS handshake) is made: from then on the server may act. */
  onConnected: () => void;
  refuse: Refuse;
  what: string;
}

type Answer = Omit<SafeFetchResult, 'url' | 'hops'>;

/** One request to the pinned address; the body of the answer is read up to the cap. */
function exchange(options: ExchangeOptions): Promise<Answer> {
  const { url, method, pinned, signal, maxBytes, refuse } = options;
  const payload = options.body === undefined ? undefined : Buffer.from(options.body);
  const pinnedLookup: LookupFunction = (_hostname, lookupOptions, callback) => {
    if (lookupOptions.all) callback(null, [{ address: pinned.address, family: pinned.family }]);
    else callback(null, pinned.address, pinned.family);
  };
  const extraHeaders = Object.fromEntries(
    Object.entries(options.headers).filter(([name]) => name.toLowerCase() !== 'host'),
  );
  return new Promise((resolve, reject) => {
    let settled = false;
    const settle = (outcome: () => void) => {
      if (settled) return;
      settled = true;
      outcome();
    };
    // Not `import http from 'node:http'`: an import builds the module's whole namespace, whose lazy WebSocket
    // getters load undici, HTTP/2 and TLS into every process that imports this file (14 MB, docs/performance.md).
    const request = process.getBuiltinModule(url.protocol === 'https:' ? 'node:https' : 'node:http').request(url, {
      method,
      agent: false,
      lookup: pinnedLookup,
      signal,
      headers: {
        'user-agent': options.userAgent,
        // Compressed answers would need their own cap on the inflated size; asking for none keeps one cap.
        'accept-encoding': 'identity',
        ...extraHeaders,
        ...(payload ? { 'content-length': payload.length } : {}),
      },
    });
    request.on('socket', (socket) => {
      socket.once(url.protocol === 'https:' ? 'secureConnect' : 'connect', options.onConnected);
    });
    request.on('error', (error) => settle(() => reject(error)));
    request.on('response', (response) => {
      const status = response.statusCode ?? 0;
      const headers: Record<string, string> = {};
      for (const [name, value] of Object.entries(response.headers)) {
        if (value !== undefined) headers[name] = Array.isArray(value) ? value.join(', ') : value;
      }
      const contentType = (headers['content-type'] ?? '').split(';')[0]?.trim().toLowerCase() ?? '';
      const stop = (error: OutboundError) => {
        response.destroy();
        settle(() => reject(error));
      };
      const isRedirect = redirectStatuses.has(status) && headers.location !== undefined;
      if (isRedirect) {
        // Nothing of a redirect's body is needed.
        response.destroy();
        settle(() => resolve({ status, headers, contentType, body: '', truncated: false }));
        return;
      }
      const allowed = options.allowedContentTypes;
      if (allowed && status >= 200 && status < 300 && !allowed.includes(contentType)) {
        stop(
          refuse(
            'content_type',
            `${options.what} ${url.host} answered with ${contentType || 'no content type'}, not ${allowed.join(', ')}`,
          ),
        );
        return;
      }
      const declared = Number(headers['content-length']);
      const tooLarge = () =>
        refuse('too_large', `${options.what} ${url.host} answered with more than ${maxBytes} bytes`);
      if (options.oversize === 'refuse' && Number.isFinite(declared) && declared > maxBytes) {
        stop(tooLarge());
        return;
      }
      const chunks: Buffer[] = [];
      let read = 0;
      const finish = (truncated: boolean) => {
        const bytes = Buffer.concat(chunks);
        settle(() => resolve({ status, headers, contentType, body: decode(bytes, headers, contentType), truncated }));
      };
      response.on('data', (chunk: Buffer) => {
        if (settled) return;
        const room = maxBytes - read;
        read += chunk.length;
        if (chunk.length <= room) {
          chunks.push(chunk);
          return;
        }
        if (options.oversize === 'refuse') {
          stop(tooLarge());
          return;
        }
        chunks.push(chunk.subarray(0, room));
        response.destroy();
        finish(true);
      });
      response.on('end', () => finish(false));
      response.on('error', (error) => settle(() => reject(error)));
      response.on('close', () => {
        if (!response.complete) settle(() => reject(new Error('the connection closed before the answer was complete')));
      });
    });
    request.end(payload);
  });
}

/** The body as text: the charset of the content type, else of an HTML `<meta charset>`, else UTF-8. */
function decode(bytes: Buffer, headers: Record<string, string>, contentType: string): string {
  const fromHeader = /charset\s*=\s*"?([\w.:-]+)/i.exec(headers['content-type'] ?? '')?.[1];
  const fromMeta =
    contentType.includes('html') && !fromHeader
      ? /<meta[^>]+charset\s*=\s*["']?([\w.:-]+)/i.exec(bytes.subarray(0, 2048).toString('latin1'))?.[1]
      : undefined;
  const label = fromHeader ?? fromMeta ?? 'utf-8';
  try {
    return new TextDecoder(label).decode(bytes);
  } catch {
    return new TextDecoder('utf-8').decode(bytes);
  }
}
