import type { FastifyReply, FastifyRequest } from 'fastify';
import type { AssistantServer } from '../server-type.ts';
import {
  type DashboardSession,
  type DashboardSessions,
  originKeyHeader,
  readCookies,
  sessionCookieName,
} from './session.ts';
import { bootstrapPage } from './session-pages.ts';

/** Route-level `config` of every dashboard route: pages, their actions, the live stream, the assets. */
export interface DashboardRouteConfig {
  dashboard?: boolean;
  /** Reached without a login (the login page, the assets). */
  public?: boolean;
  /** The live stream: takes the session's stream token in its query, as an EventSource cannot send a header. */
  eventStream?: boolean;
}

/** The session of a request that came with a valid login cookie and the session's origin key (or stream token). */
const sessions = new WeakMap<FastifyRequest, DashboardSession>();
/**
 * A write that came with valid login cookies but without the origin key (a form posted without JavaScript's help, as
 * htmx-less forms are): the sessions it may be of, until its CSRF token, read with the body, says which.
 */
const unprovenWrites = new WeakMap<FastifyRequest, DashboardSession[]>();

export function isDashboardRoute(request: FastifyRequest): boolean {
  return (request.routeOptions.config as DashboardRouteConfig | undefined)?.dashboard === true;
}

/** The login session of a request, when it came with one (a request with the Bearer token has none). */
export function sessionOf(request: FastifyRequest): DashboardSession | undefined {
  return sessions.get(request);
}

/**
 * The CSRF token to put in a page's forms. A request made with the Bearer token has no session and needs none (a
 * browser cannot send that header cross-site without the server's consent, which it never gives).
 */
export function csrfTokenOf(request: FastifyRequest): string {
  return sessions.get(request)?.csrfToken ?? '';
}

const safeMethods = new Set(['GET', 'HEAD']);

/**
 * The login cookie, for dashboard routes only (the API takes only the Bearer token): called by the bearer hook when a
 * dashboard request came without the token. Returns true when the request may go on.
 *
 * The cookie alone opens nothing (decision 0023): a browser sends it to every port of the host, so another local
 * user's page on another port receives it and can replay it with any headers. What it cannot have is the session's
 * origin key, which the login gave to the dashboard's origin (scheme, host and port) only, in that origin's storage:
 * - a request with the key (`x-assistant-key`, htmx adds it; the bootstrap page's fetch adds it) is the owner's;
 * - `GET /live` takes the session's stream token in its query instead, which only a page served with the key holds;
 * - a write without the key goes on to the CSRF check, which it passes only with the token of a page that was
 *   served with the key (a plain form post cannot carry a header);
 * - a page asked for without the key gets the bootstrap page: no data and no token, only the script that asks
 *   again with the key from storage;
 * - anything else is 401; a page asked for without a login redirects to `/login`.
 * Every cookie of our name counts (a page on another port can add one with a longer path, which comes first).
 */
export async function authenticateDashboardRequest(
  request: FastifyRequest,
  reply: FastifyReply,
  options: { sessions: DashboardSessions },
): Promise<boolean> {
  const candidates = readCookies(request.headers.cookie, sessionCookieName).flatMap((value) => {
    const session = options.sessions.verify(value);
    return session ? [session] : [];
  });
  const keyHeader = request.headers[originKeyHeader];
  const key = typeof keyHeader === 'string' ? keyHeader : undefined;
  const withKey = candidates.find((session) => options.sessions.checkOriginKey(session, key));
  if (withKey) {
    sessions.set(request, withKey);
    return true;
  }
  const config = request.routeOptions.config as DashboardRouteConfig | undefined;
  if (config?.eventStream === true && key === undefined) {
    const streamToken = (request.query as Record<string, unknown> | undefined)?.stream_token;
    const withToken = candidates.find((session) =>
      options.sessions.checkStreamToken(session, typeof streamToken === 'string' ? streamToken : undefined),
    );
    if (withToken) {
      sessions.set(request, withToken);
      return true;
    }
  }
  const page = safeMethods.has(request.method) && request.headers['hx-request'] === undefined;
  const eventStream = String(request.headers.accept ?? '').includes('text/event-stream');
  if (candidates.length > 0 && key === undefined) {
    if (!safeMethods.has(request.method)) {
      unprovenWrites.set(request, candidates);
      return true;
    }
    if (page && !eventStream) {
      await reply
        .code(200)
        .header('content-security-policy', contentSecurityPolicy)
        .header('cache-control', 'no-store')
        .header('x-content-type-options', 'nosniff')
        .header('referrer-policy', 'same-origin')
        .header('x-frame-options', 'DENY')
        .type('text/html; charset=utf-8')
        .send(bootstrapPage());
      return false;
    }
  }
  if (candidates.length === 0 && page && !eventStream) {
    await reply.redirect(`/login?next=${encodeURIComponent(request.url)}`, 303);
    return false;
  }
  reply.header('hx-redirect', '/login');
  await reply
    .code(401)
    .type('text/plain; charset=utf-8')
    .send(
      candidates.length === 0
        ? 'log in first: open /login and paste the token `assistant token` prints'
        : `this request has the login cookie but not this tab's login key (the ${originKeyHeader} header the dashboard's script sends): reload the page, or log in again`,
    );
  return false;
}

/** The Content-Security-Policy of every dashboard response: our own scripts and styles only, no inline ones. */
export const contentSecurityPolicy = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "form-action 'self'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
].join('; ');

/**
 * Security headers on every dashboard response, and the CSRF check on every write made with the login cookie: the
 * token comes in the `_csrf` form field or the `x-csrf-token` header (htmx sends it from `hx-headers`).
 */
export function registerDashboardGuards(app: AssistantServer, options: { sessions: DashboardSessions }): void {
  app.addHook('onRequest', async (request, reply) => {
    if (!isDashboardRoute(request)) return;
    reply.header('content-security-policy', contentSecurityPolicy);
    reply.header('x-content-type-options', 'nosniff');
    reply.header('referrer-policy', 'same-origin');
    reply.header('x-frame-options', 'DENY');
  });
  app.addHook('preHandler', async (request, reply) => {
    if (!isDashboardRoute(request) || safeMethods.has(request.method)) return;
    const proven = sessions.get(request);
    const unproven = unprovenWrites.get(request);
    if (!proven && !unproven) return;
    const body = request.body as Record<string, unknown> | undefined;
    const header = request.headers['x-csrf-token'];
    const submitted =
      typeof header === 'string' ? header : typeof body?._csrf === 'string' ? (body._csrf as string) : undefined;
    // Without the origin key, the CSRF token is the proof: only a page served with the key carries it.
    const session = (proven ? [proven] : (unproven ?? [])).find((candidate) =>
      options.sessions.checkCsrf(candidate, submitted),
    );
    if (!session) {
      return reply
        .code(403)
        .type('text/plain; charset=utf-8')
        .send(
          'this form is stale or came from another site (its CSRF token does not match your login): reload the page',
        );
    }
    sessions.set(request, session);
  });
}
