import type { FastifyReply, FastifyRequest } from 'fastify';
import type { AssistantServer } from '../server-type.ts';
import type { DashboardRouteConfig } from './dashboard-auth.ts';

export interface DashboardRouteSpec {
  method: 'GET' | 'POST';
  /** fastify's syntax: `/tasks/:id`, `/notes/*`. */
  url: string;
  /** Reached without a login (only the login page). @default false */
  public?: boolean;
  /** The live stream: takes the session's stream token in its query (see dashboard-auth.ts). @default false */
  eventStream?: boolean;
  handler: (request: FastifyRequest, reply: FastifyReply) => Promise<unknown>;
}

/**
 * A dashboard page or action. Not in the OpenAPI document (that is the API's), and marked so the auth hook takes the
 * login cookie as well as the Bearer token, the request guard takes form posts, and the CSRF check applies.
 */
export function dashboardRoute(app: AssistantServer, spec: DashboardRouteSpec): void {
  const config: DashboardRouteConfig = {
    dashboard: true,
    public: spec.public === true,
    ...(spec.eventStream === true ? { eventStream: true } : {}),
  };
  app.route({ method: spec.method, url: spec.url, config, handler: spec.handler });
}

/** A form field as one string: a form body is `Record<string, string>` (the last of repeated fields wins). */
export function formField(request: FastifyRequest, name: string): string | undefined {
  const body = request.body;
  if (body === null || typeof body !== 'object') return undefined;
  const value = (body as Record<string, unknown>)[name];
  return typeof value === 'string' ? value : undefined;
}

/** A query parameter as one string. */
export function queryField(request: FastifyRequest, name: string): string | undefined {
  const value = (request.query as Record<string, unknown> | undefined)?.[name];
  return typeof value === 'string' ? value : undefined;
}

/**
 * After a form post: htmx gets the fragment or a redirect header, a plain browser a 303 to the page (post/redirect/
 * get, so reloading does not post again).
 */
export function redirectAfterPost(request: FastifyRequest, reply: FastifyReply, location: string): FastifyReply {
  if (request.headers['hx-request'] === 'true') return reply.header('hx-redirect', location).code(204).send();
  return reply.redirect(location, 303);
}
