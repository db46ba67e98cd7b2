import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

/** The dashboard's login cookie. */
export const sessionCookieName = 'assistant_session';

/** How long a login lasts: a week, so a tab left open keeps working; logging out ends it at once. */
export const sessionLifetimeMs = 7 * 24 * 60 * 60 * 1000;

export interface DashboardSession {
  id: string;
  expiresAtMs: number;
  /** The token forms and htmx requests send back (`_csrf` field, `x-csrf-token` header). */
  csrfToken: string;
  /**
   * The secret the browser keeps in the dashboard origin's own storage and sends as `x-assistant-key` on every
   * request (decision 0023): cookies are shared by every port of a host, origin storage is not.
   */
  originKey: string;
  /** What `GET /live` takes in its query instead (an EventSource cannot send a header): the stream only. */
  streamToken: string;
}

/** The header that carries the session's origin key. */
export const originKeyHeader = 'x-assistant-key';

/**
 * Signed, stateless sessions: the cookie is `v1.<id>.<expires>.<mac>`, with a MAC keyed by the API token, so a
 * session survives a server restart and every session ends when the token is changed (data/api-token deleted, or server.token edited).
 * The CSRF token is derived from the session id with the same key: nothing to store, and useless without the cookie.
 */
export class DashboardSessions {
  readonly #key: Buffer;
  /** Sessions logged out before they expired, by id (in memory: a restart forgets them, see docs/dashboard.md). */
  readonly #revoked = new Map<string, number>();

  constructor(options: { apiToken: string }) {
    this.#key = createHmac('sha256', options.apiToken).update('assistant dashboard session v1').digest();
  }

  /** A new session, and the cookie value that carries it. */
  create(nowMs: number = Date.now()): { session: DashboardSession; cookie: string } {
    const id = randomBytes(18).toString('base64url');
    const expiresAtMs = nowMs + sessionLifetimeMs;
    const payload = `v1.${id}.${expiresAtMs}`;
    return { session: this.#session(id, expiresAtMs), cookie: `${payload}.${this.#mac(payload)}` };
  }

  /** The session a cookie value carries, or undefined when it is forged, expired or logged out. */
  verify(cookie: string | undefined, nowMs: number = Date.now()): DashboardSession | undefined {
    if (cookie === undefined) return undefined;
    const match = /^v1\.([A-Za-z0-9_-]{24})\.(\d{1,16})\.([A-Za-z0-9_-]{43})$/.exec(cookie);
    if (!match) return undefined;
    const [, id = '', expires = '', mac = ''] = match;
    if (!safeEqual(mac, this.#mac(`v1.${id}.${expires}`))) return undefined;
    const expiresAtMs = Number(expires);
    if (expiresAtMs <= nowMs || this.#revoked.has(id)) return undefined;
    return this.#session(id, expiresAtMs);
  }

  /** Ends a session before it expires (logout). */
  revoke(session: DashboardSession, nowMs: number = Date.now()): void {
    for (const [id, expiresAtMs] of this.#revoked) if (expiresAtMs <= nowMs) this.#revoked.delete(id);
    this.#revoked.set(session.id, session.expiresAtMs);
  }

  /** Whether a submitted CSRF token is the session's. */
  checkCsrf(session: DashboardSession, submitted: string | undefined): boolean {
    return submitted !== undefined && safeEqual(submitted, session.csrfToken);
  }

  /** Whether a submitted origin key (the `x-assistant-key` header) is the session's. */
  checkOriginKey(session: DashboardSession, submitted: string | undefined): boolean {
    return submitted !== undefined && safeEqual(submitted, session.originKey);
  }

  /** Whether a submitted stream token (`GET /live?stream_token=`) is the session's. */
  checkStreamToken(session: DashboardSession, submitted: string | undefined): boolean {
    return submitted !== undefined && safeEqual(submitted, session.streamToken);
  }

  #session(id: string, expiresAtMs: number): DashboardSession {
    return {
      id,
      expiresAtMs,
      csrfToken: this.#mac(`csrf.${id}`),
      originKey: this.#mac(`origin.${id}`),
      streamToken: this.#mac(`stream.${id}`),
    };
  }

  #mac(text: string): string {
    return createHmac('sha256', this.#key).update(text).digest('base64url');
  }
}

function safeEqual(left: string, right: string): boolean {
  const a = Buffer.from(left);
  const b = Buffer.from(right);
  return a.length === b.length && timingSafeEqual(a, b);
}

/**
 * Every value a `Cookie` header gives a name, in its order. A page on another port of the same host can set a cookie
 * of our name with a longer path (`assistant_session=junk; path=/approvals`), which the browser sends before ours:
 * reading only the first would let it lock the owner out of that page.
 */
export function readCookies(header: string | undefined, name: string): string[] {
  if (header === undefined) return [];
  const values: string[] = [];
  for (const part of header.split(';')) {
    const index = part.indexOf('=');
    if (index === -1) continue;
    if (part.slice(0, index).trim() === name) values.push(part.slice(index + 1).trim());
  }
  return values;
}
