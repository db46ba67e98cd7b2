import type { FastifyReply, FastifyRequest } from 'fastify';
import type { AssistantServer } from '../create-server.ts';
import { type DashboardSession, type DashboardSessions, readCookie, sessionCookieName } from './session.ts';

/** Route-level `config` of every dashboard route: pages, their actions, the live stream, the assets. */
export interface DashboardRouteConfig {
  dashboard?: boolean;
  /** Reached without a login (the login page, the assets). */
  public?: boolean;
}

/** The session of a request that came with a valid login cookie. */
const sessions = new WeakMap<FastifyRequest, DashboardSession>();

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
 * dashboard request came without the token. A page asked for without a login redirects to `/login`; anything else
 * answers 401. Returns true when the request may go on.
 */
export async function authenticateDashboardRequest(
  request: FastifyRequest,
  reply: FastifyReply,
  options: { sessions: DashboardSessions },
): Promise<boolean> {
  const session = options.sessions.verify(readCookie(request.headers.cookie, sessionCookieName));
  if (session) {
    sessions.set(request, session);
    return true;
  }
  if (safeMethods.has(request.method) && request.headers['hx-request'] === undefined) {
    const accept = String(request.headers.accept ?? '');
    if (!accept.includes('text/event-stream')) {
      await reply.redirect(`/login?next=${encodeURIComponent(request.url)}`, 303);
      return false;
    }
  }
  reply.header('hx-redirect', '/login');
  await reply
    .code(401)
    .type('text/plain; charset=utf-8')
    .send('log in first: open /login and paste the token `assistant token` prints');
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
    const session = sessions.get(request);
    if (!session) return;
    const body = request.body as Record<string, unknown> | undefined;
    const header = request.headers['x-csrf-token'];
    const submitted =
      typeof header === 'string' ? header : typeof body?._csrf === 'string' ? (body._csrf as string) : undefined;
    if (!options.sessions.checkCsrf(session, submitted)) {
      return reply
        .code(403)
        .type('text/plain; charset=utf-8')
        .send(
          'this form is stale or came from another site (its CSRF token does not match your login): reload the page',
        );
    }
  });
}
