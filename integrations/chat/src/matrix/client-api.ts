/**
 * The few Matrix Client-Server API endpoints the listener uses, over fetch (decision 0070: no SDK). The access token
 * goes in the `Authorization` header only, never in a URL, and errors name the endpoint, the HTTP status and the
 * homeserver's `errcode` and `error` only.
 */

/** One event of a room, as /sync hands it out (the parts the adapter reads). */
export interface MatrixEvent {
  type: string;
  event_id?: string;
  sender?: string;
  state_key?: string;
  origin_server_ts?: number;
  content?: Record<string, unknown>;
}

/** The parts of a /sync answer the adapter reads. */
export interface MatrixSync {
  next_batch: string;
  rooms?: {
    join?: Record<
      string,
      { state?: { events?: MatrixEvent[] }; timeline?: { events?: MatrixEvent[]; limited?: boolean } }
    >;
    invite?: Record<string, { invite_state?: { events?: MatrixEvent[] } }>;
  };
}

/** The homeserver answered with an error status. */
export class MatrixApiError extends Error {
  readonly endpoint: string;
  readonly status: number;
  readonly errcode: string;
  /** For 429: how long the homeserver asks to wait (`retry_after_ms`). */
  readonly retryAfterMs: number | undefined;

  constructor(options: { endpoint: string; status: number; errcode: string; error: string; retryAfterMs?: number }) {
    super(`Matrix ${options.endpoint} failed: ${options.status} ${options.errcode} ${options.error}`.trim());
    this.name = 'MatrixApiError';
    this.endpoint = options.endpoint;
    this.status = options.status;
    this.errcode = options.errcode;
    this.retryAfterMs = options.retryAfterMs;
  }

  /** The access token is wrong, expired or logged out. */
  get badToken(): boolean {
    return this.status === 401 || this.errcode === 'M_UNKNOWN_TOKEN' || this.errcode === 'M_MISSING_TOKEN';
  }

  /** Worth trying again: rate limits and the homeserver's own troubles. */
  get transient(): boolean {
    return this.status === 429 || this.errcode === 'M_LIMIT_EXCEEDED' || this.status >= 500;
  }
}

/** The homeserver could not be reached, or did not answer in time. */
export class MatrixNetworkError extends Error {
  constructor(endpoint: string, reason: string) {
    super(`Matrix ${endpoint} did not answer: ${reason}`);
    this.name = 'MatrixNetworkError';
  }
}

export interface MatrixClientApiOptions {
  /** The homeserver's base URL (`https://matrix.example.org`), or a local fake's in tests. */
  homeserver: string;
  accessToken: string;
  /** A request without an answer after this long fails (long polls add their own timeout). @default 30000 */
  requestTimeoutMs?: number;
}

const syncFilter = JSON.stringify({ room: { timeline: { limit: 100 } } });

export class MatrixClientApi {
  readonly #root: string;
  readonly #token: string;
  readonly #requestTimeoutMs: number;

  constructor(options: MatrixClientApiOptions) {
    this.#root = `${options.homeserver.replace(/\/+$/, '')}/_matrix/client/v3`;
    this.#token = options.accessToken;
    this.#requestTimeoutMs = options.requestTimeoutMs ?? 30_000;
  }

  /** Calls an endpoint (`endpoint` names it in errors; `pathname` is already encoded); returns its JSON body. */
  async call<T>(
    endpoint: string,
    method: 'GET' | 'POST' | 'PUT',
    pathname: string,
    options: { body?: unknown; signal: AbortSignal; timeoutMs?: number },
  ): Promise<T> {
    const timeout = AbortSignal.timeout(options.timeoutMs ?? this.#requestTimeoutMs);
    let response: Response;
    let body: unknown;
    try {
      response = await fetch(`${this.#root}${pathname}`, {
        method,
        headers: {
          authorization: `Bearer ${this.#token}`,
          ...(options.body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        ...(options.body === undefined ? {} : { body: JSON.stringify(options.body) }),
        signal: AbortSignal.any([options.signal, timeout]),
      });
      body = await response.json().catch(() => undefined);
    } catch (error) {
      if (options.signal.aborted) throw options.signal.reason ?? error;
      throw new MatrixNetworkError(endpoint, timeout.aborted ? 'timed out' : networkReason(error));
    }
    if (!response.ok) {
      const answer = (body ?? {}) as { errcode?: unknown; error?: unknown; retry_after_ms?: unknown };
      throw new MatrixApiError({
        endpoint,
        status: response.status,
        errcode: typeof answer.errcode === 'string' ? answer.errcode : '',
        error: typeof answer.error === 'string' ? answer.error : response.statusText,
        ...(typeof answer.retry_after_ms === 'number' ? { retryAfterMs: answer.retry_after_ms } : {}),
      });
    }
    return body as T;
  }

  sync(options: { since: string | undefined; timeoutMs: number }, signal: AbortSignal): Promise<MatrixSync> {
    // An inline filter: up to 100 events of each room's timeline per sync (homeservers default to about 10 and
    // leave a gap, `limited`, past that).
    const query = new URLSearchParams({ timeout: String(options.timeoutMs), filter: syncFilter });
    if (options.since !== undefined) query.set('since', options.since);
    return this.call<MatrixSync>('sync', 'GET', `/sync?${query}`, { signal, timeoutMs: options.timeoutMs + 15_000 });
  }

  /** The bot account's `m.direct` account data: each user's direct rooms. */
  directRooms(user: string, signal: AbortSignal): Promise<Record<string, string[]>> {
    return this.call('account_data', 'GET', `/user/${encodeURIComponent(user)}/account_data/m.direct`, { signal });
  }

  whoami(signal: AbortSignal): Promise<{ user_id: string }> {
    return this.call('whoami', 'GET', '/account/whoami', { signal });
  }

  join(room: string, signal: AbortSignal): Promise<unknown> {
    return this.call('join', 'POST', `/rooms/${encodeURIComponent(room)}/join`, { body: {}, signal });
  }

  /**
   * Sends a room event (`m.room.message` unless `type` says otherwise: `m.reaction`); the homeserver keeps one event
   * per `txnId` (a retried PUT gets the same event id).
   */
  send(
    room: string,
    txnId: string,
    content: Record<string, unknown>,
    signal: AbortSignal,
    type = 'm.room.message',
  ): Promise<{ event_id: string }> {
    return this.call(
      'send',
      'PUT',
      `/rooms/${encodeURIComponent(room)}/send/${encodeURIComponent(type)}/${encodeURIComponent(txnId)}`,
      { body: content, signal },
    );
  }

  /** One event of a room, by its id. */
  event(room: string, eventId: string, signal: AbortSignal): Promise<MatrixEvent> {
    return this.call('event', 'GET', `/rooms/${encodeURIComponent(room)}/event/${encodeURIComponent(eventId)}`, {
      signal,
    });
  }

  typing(room: string, user: string, signal: AbortSignal): Promise<unknown> {
    return this.call('typing', 'PUT', `/rooms/${encodeURIComponent(room)}/typing/${encodeURIComponent(user)}`, {
      body: { typing: true, timeout: 8_000 },
      signal,
    });
  }
}

// undici's "fetch failed" hides the reason in `cause` (ECONNREFUSED, ENOTFOUND…); neither carries the URL's path.
function networkReason(error: unknown): string {
  const cause = (error as { cause?: { code?: unknown; message?: unknown } }).cause;
  if (cause && typeof cause.code === 'string') return cause.code;
  if (cause && typeof cause.message === 'string') return cause.message.replace(/https?:\/\/\S+/g, '<url>');
  return error instanceof Error ? error.message.replace(/https?:\/\/\S+/g, '<url>') : String(error);
}
