import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { loadConfig } from '@assistant/config';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createServer } from '../create-server.ts';
import { contentSecurityPolicy } from './dashboard-auth.ts';
import { sessionCookieName } from './session.ts';

const token = 'dashboard-test-token-0123456789abcdefghij';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'assistant-dashboard-auth-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function server() {
  await writeFile(path.join(dir, 'config.yaml'), 'data_dir: ./data\nserver:\n  port: 0\n');
  const { config } = await loadConfig({ configPath: path.join(dir, 'config.yaml') });
  const app = createServer({ config, token });
  await app.ready();
  return app;
}

const form = { 'content-type': 'application/x-www-form-urlencoded' };

/** Logs in through the form: the login cookie, and the origin key the answer hands to the page's storage. */
async function loginSession(
  app: Awaited<ReturnType<typeof server>>,
  next = '/tasks',
): Promise<{ cookie: string; key: string; headers: Record<string, string> }> {
  const response = await app.inject({
    method: 'POST',
    url: '/login',
    headers: form,
    payload: `token=${token}&next=${encodeURIComponent(next)}`,
  });
  expect(response.statusCode).toBe(200);
  expect(nextOf(response.body)).toBe(next);
  const setCookie = String(response.headers['set-cookie']);
  expect(setCookie).toContain('HttpOnly');
  expect(setCookie).toContain('SameSite=Strict');
  const value = new RegExp(`${sessionCookieName}=([^;]+)`).exec(setCookie)?.[1];
  expect(value).toBeDefined();
  const key = /data-key="([^"]+)"/.exec(response.body)?.[1] ?? '';
  expect(key).toMatch(/^[A-Za-z0-9_-]{43}$/);
  const cookie = `${sessionCookieName}=${value}`;
  return { cookie, key, headers: { cookie, 'x-assistant-key': key } };
}

/** Where a login's answer sends the browser next (session.js reads `data-next`). */
function nextOf(body: string): string | undefined {
  return /data-next="([^"]*)"/.exec(body)?.[1]?.replaceAll('&amp;', '&');
}

describe('dashboard auth', () => {
  it('sends a page asked for without a login to /login, and serves it with the cookie or the Bearer token', async () => {
    await using app = await server();
    const anonymous = await app.inject({ method: 'GET', url: '/tasks?state=failed' });
    expect(anonymous.statusCode).toBe(303);
    expect(anonymous.headers.location).toBe('/login?next=%2Ftasks%3Fstate%3Dfailed');
    const { headers } = await loginSession(app);
    const page = await app.inject({ method: 'GET', url: '/', headers });
    expect(page.statusCode).toBe(200);
    expect(page.headers['content-type']).toContain('text/html');
    expect(page.headers['content-security-policy']).toBe(contentSecurityPolicy);
    expect(contentSecurityPolicy).not.toContain('unsafe-inline');
    const bearer = await app.inject({ method: 'GET', url: '/', headers: { authorization: `Bearer ${token}` } });
    expect(bearer.statusCode).toBe(200);
  });

  it('refuses a wrong token, a forged cookie, and the cookie on API routes', async () => {
    await using app = await server();
    const wrong = await app.inject({ method: 'POST', url: '/login', headers: form, payload: 'token=nope' });
    expect(wrong.statusCode).toBe(401);
    expect(wrong.headers['set-cookie']).toBeUndefined();
    const forged = await app.inject({
      method: 'GET',
      url: '/',
      headers: { cookie: `${sessionCookieName}=v1.AAAAAAAAAAAAAAAAAAAAAAAA.99999999999999.${'A'.repeat(43)}` },
    });
    expect(forged.statusCode).toBe(303);
    const { headers } = await loginSession(app);
    const api = await app.inject({ method: 'GET', url: '/api/tasks', headers });
    expect(api.statusCode).toBe(401);
  });

  it('requires the CSRF token on a form post made with the cookie, and ends the session at logout', async () => {
    await using app = await server();
    const { cookie, headers } = await loginSession(app);
    const page = await app.inject({ method: 'GET', url: '/', headers });
    const csrf = /name="_csrf" value="([^"]+)"/.exec(page.body)?.[1];
    expect(csrf).toBeDefined();
    const without = await app.inject({ method: 'POST', url: '/logout', headers: { ...form, cookie }, payload: '' });
    expect(without.statusCode).toBe(403);
    const out = await app.inject({
      method: 'POST',
      url: '/logout',
      headers: { ...form, cookie },
      payload: `_csrf=${csrf}`,
    });
    expect(out.statusCode).toBe(303);
    const after = await app.inject({ method: 'GET', url: '/', headers });
    expect(after.statusCode).toBe(303);
  });

  it('never redirects a login to another site', async () => {
    await using app = await server();
    const tricks = [
      'https://evil.test/',
      '//evil.test/x',
      '/\\evil.test',
      // A tab or newline is dropped by URL parsers: `/\t/evil.test` is `//evil.test` to the browser.
      '/\t/evil.test',
      '/\n/evil.test',
      '/\r/evil.test',
      ' //evil.test',
      '/ /evil.test',
      '/\u0000/evil.test',
      'evil.test',
      '',
    ];
    for (const next of tricks) {
      const response = await app.inject({
        method: 'POST',
        url: '/login',
        headers: form,
        payload: `token=${token}&next=${encodeURIComponent(next)}`,
      });
      expect(response.statusCode, JSON.stringify(next)).toBe(200);
      expect(nextOf(response.body), JSON.stringify(next)).toBe('/');
    }
    // The same through the login page's form: the `next` it carries is already the safe one.
    const page = await app.inject({ method: 'GET', url: '/login?next=/%09/evil.test' });
    expect(page.body).toContain('name="next" value="/"');
  });

  it('keeps a next beyond Latin-1 or with a query, percent-encoded, instead of failing the login', async () => {
    await using app = await server();
    const cases: [string, string][] = [
      ['/notes/日本/ノート.md', '/notes/%E6%97%A5%E6%9C%AC/%E3%83%8E%E3%83%BC%E3%83%88.md'],
      ['/notes/café.md?edit', '/notes/caf%C3%A9.md?edit'],
      ['/tasks?state=failed&type=a', '/tasks?state=failed&type=a'],
      ['/notes/%2F%2Fx.md', '/notes/%2F%2Fx.md'],
    ];
    for (const [next, location] of cases) {
      const response = await app.inject({
        method: 'POST',
        url: '/login',
        headers: form,
        payload: `token=${token}&next=${encodeURIComponent(next)}`,
      });
      expect(response.statusCode, next).toBe(200);
      expect(nextOf(response.body), next).toBe(location);
    }
  });

  it('serves the assets without a login, and nothing else from their folders', async () => {
    await using app = await server();
    const htmx = await app.inject({
      method: 'GET',
      url: '/assets/htmx.min.js',
      headers: { 'accept-encoding': 'gzip' },
    });
    expect(htmx.statusCode).toBe(200);
    expect(htmx.headers['content-encoding']).toBe('gzip');
    const css = await app.inject({ method: 'GET', url: '/assets/dashboard.css' });
    expect(css.statusCode).toBe(200);
    for (const url of ['/assets/htmx.js', '/assets/../package.json', '/assets/sse.js']) {
      const response = await app.inject({ method: 'GET', url });
      expect(response.statusCode, url).toBeGreaterThanOrEqual(400);
    }
  });
});
