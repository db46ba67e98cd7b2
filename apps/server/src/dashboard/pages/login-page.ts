import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import type { AssistantServer } from '../../server-type.ts';
import { sessionOf } from '../dashboard-auth.ts';
import type { DashboardContext } from '../dashboard-context.ts';
import { dashboardRoute, formField, queryField } from '../dashboard-route.ts';
import { html } from '../html.ts';
import { sendPage } from '../layout.ts';
import { sessionCookieName, sessionLifetimeMs } from '../session.ts';
import { loginDonePage } from '../session-pages.ts';

/**
 * Where a login may go next: a path on this server, as an ASCII URL (percent-encoded) a `Location` header or an
 * attribute can carry. Anything else is `/`: `https://elsewhere`, `//elsewhere`, and what a browser turns into those
 * (a backslash, a tab or newline, which URL parsers drop: `/%09/elsewhere` once decoded). The WHATWG parser, the
 * browser's own, has the last word: the result must stay on the same origin.
 */
function safeNext(next: string | undefined): string {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what this refuses
  if (next === undefined || !/^\/(?![/\\])/.test(next) || /[\u0000-\u0020\u007f\\]/.test(next)) return '/';
  const base = 'http://login.invalid';
  let url: URL;
  try {
    url = new URL(next, base);
  } catch {
    return '/';
  }
  if (url.origin !== base) return '/';
  return `${url.pathname}${url.search}${url.hash}`;
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
      const { session, cookie } = context.sessions.create();
      reply.header(
        'set-cookie',
        `${sessionCookieName}=${cookie}; ${cookieAttributes(request, sessionLifetimeMs / 1000)}`,
      );
      // Not a redirect: the answer hands the session's origin key to this origin's storage (session.js), which then
      // goes to `next`. The cookie alone opens nothing (decision 0023).
      return reply
        .type('text/html; charset=utf-8')
        .header('cache-control', 'no-store')
        .send(loginDonePage({ originKey: session.originKey, next: safeNext(formField(request, 'next')) }));
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
