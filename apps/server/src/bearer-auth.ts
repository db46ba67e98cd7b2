import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import { authenticateDashboardRequest } from './dashboard/dashboard-auth.ts';
import type { DashboardSessions } from './dashboard/session.ts';
import { sendError } from './error-replies.ts';
import type { AssistantServer } from './server-type.ts';

export interface BearerAuthOptions {
  /** The token every request must carry as `Authorization: Bearer <token>`: data/api-token or server.token. */
  token: string;
  /** Where the token comes from, for the 401 message. */
  tokenSource: string;
  /** The dashboard's login sessions: its routes (and only those) also take the login cookie. @default none */
  sessions?: DashboardSessions;
}

/** Requests that carried the right token; public routes use it to decide how much to say. */
const authenticated = new WeakSet<FastifyRequest>();

/** True when the request carried the API token (public routes are reached without one). */
export function isAuthenticated(request: FastifyRequest): boolean {
  return authenticated.has(request);
}

/** Route-level `config` that lets a route answer without the token (only `GET /health`). */
interface PublicRouteConfig {
  public?: boolean;
}

/**
 * Requires the API token on every request, unknown routes included, so nothing can be probed without it. A hook
 * rather than a per-route check, so routes added later are covered without doing anything.
 */
export function registerBearerAuth(app: AssistantServer, options: BearerAuthOptions): void {
  // Hashing both sides gives equal-length buffers, so timingSafeEqual neither throws nor leaks the token's length.
  const expected = digest(options.token);
  app.addHook('onRequest', async (request, reply) => {
    const match = /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(request.headers.authorization ?? '');
    if (match?.[1] !== undefined && timingSafeEqual(digest(match[1]), expected)) {
      authenticated.add(request);
      return;
    }
    const config = request.routeOptions.config as (PublicRouteConfig & { dashboard?: boolean }) | undefined;
    if (config?.public === true) return;
    if (config?.dashboard === true && options.sessions) {
      await authenticateDashboardRequest(request, reply, { sessions: options.sessions });
      return;
    }
    reply.header('www-authenticate', 'Bearer');
    return sendError(reply, 401, {
      code: 'UNAUTHORIZED',
      message:
        request.headers.authorization === undefined
          ? 'this server requires `Authorization: Bearer <token>`; `assistant token` prints the token'
          : `the bearer token is not the one in ${options.tokenSource}`,
    });
  });
}

function digest(value: string): Buffer {
  return createHash('sha256').update(value).digest();
}
