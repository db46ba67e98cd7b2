// The dashboard in a real browser (Debian's Chromium through playwright-core): logging in, the login page's own
// accessibility, a page asked for before logging in, and no CSP violation anywhere along the way.
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectAccessible, launchBrowser, openDashboard, screenshot, startAssistant } from './helpers/browser.ts';
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
});
