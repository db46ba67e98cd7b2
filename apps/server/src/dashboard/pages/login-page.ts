import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import type { AssistantServer } from '../../create-server.ts';
import { sessionOf } from '../dashboard-auth.ts';
import type { DashboardContext } from '../dashboard-context.ts';
import { dashboardRoute, formField, queryField } from '../dashboard-route.ts';
import { html } from '../html.ts';
import { sendPage } from '../layout.ts';
import { sessionCookieName, sessionLifetimeMs } from '../session.ts';

/** Only a path on this server: `next=https://elsewhere` or `//elsewhere` would make the login an open redirect. */
function safeNext(next: string | undefined): string {
  if (next === undefined || !next.startsWith('/') || next.startsWith('//') || next.startsWith('/\\')) return '/';
  return next;
}

function cookieAttributes(request: FastifyRequest, maxAgeSeconds: number): string {
  return `Path=/; HttpOnly; SameSite=Strict; Max-Age=${maxAgeSeconds}${request.protocol === 'https' ? '; Secure' : ''}`;
}

/** `GET /login`, `POST /login` (the install's API token, once) and `POST /logout`. */
export function registerLoginPage(app: AssistantServer, context: DashboardContext, apiToken: string): void {
  const expected = createHash('sha256').update(apiToken).digest();
  const form = (request: FastifyRequest, problem?: string) =>
    html`<form method="post" action="/login" class="card login">
<p>Paste the API token: <code>assistant token</code> prints it (it is in <code>data/api-token</code>).</p>
${problem ? html`<p class="notice bad" role="alert">${problem}</p>` : ''}
<div class="field"><label for="token">Token</label>
<input id="token" name="token" type="password" autocomplete="current-password" required autofocus></div>
<input type="hidden" name="next" value="${safeNext(queryField(request, 'next') ?? formField(request, 'next'))}">
<button type="submit">Log in</button>
</form>`;

  dashboardRoute(app, {
    method: 'GET',
    url: '/login',
    public: true,
    handler: async (request, reply) =>
      sendPage(reply, { request, title: 'Log in', section: undefined, body: form(request) }),
  });

  dashboardRoute(app, {
    method: 'POST',
    url: '/login',
    public: true,
    handler: async (request, reply) => {
      const token = formField(request, 'token') ?? '';
      const given = createHash('sha256').update(token.trim()).digest();
      if (!timingSafeEqual(given, expected)) {
        request.log.warn('dashboard login with a wrong token');
        reply.code(401);
        return sendPage(reply, {
          request,
          title: 'Log in',
          section: undefined,
          body: form(request, 'That is not this install’s token.'),
        });
      }
      const { cookie } = context.sessions.create();
      reply.header(
        'set-cookie',
        `${sessionCookieName}=${cookie}; ${cookieAttributes(request, sessionLifetimeMs / 1000)}`,
      );
      return reply.redirect(safeNext(formField(request, 'next')), 303);
    },
  });

  dashboardRoute(app, {
    method: 'POST',
    url: '/logout',
    handler: async (request, reply) => {
      const session = sessionOf(request);
      if (session) context.sessions.revoke(session);
      reply.header('set-cookie', `${sessionCookieName}=; ${cookieAttributes(request, 0)}`);
      return reply.redirect('/login', 303);
    },
  });
}
