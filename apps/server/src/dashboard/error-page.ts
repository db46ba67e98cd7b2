import type { FastifyReply } from 'fastify';
import { isDashboardRoute } from './dashboard-auth.ts';
import { html } from './html.ts';
import { renderPage } from './layout.ts';

/**
 * An error on a dashboard route as a page (or, for htmx, as the text its flash shows) instead of the API's JSON.
 * Returns false for other routes. The message was scrubbed of secrets and absolute paths by the caller.
 */
export function sendDashboardError(reply: FastifyReply, statusCode: number, message: string): boolean {
  const request = reply.request;
  if (!isDashboardRoute(request)) return false;
  reply.code(statusCode).header('cache-control', 'no-store');
  if (request.headers['hx-request'] === 'true') {
    void reply.type('text/plain; charset=utf-8').send(message);
    return true;
  }
  void reply.type('text/html; charset=utf-8').send(
    renderPage({
      request,
      title: statusCode === 404 ? 'Not found' : `Error ${statusCode}`,
      section: undefined,
      body: html`<p class="notice bad">${message}</p><p><a href="/">Back to the overview</a></p>`,
    }),
  );
  return true;
}
