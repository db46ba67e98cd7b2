// The History page in a real browser against a real `assistant start` (issue 31, item 11): tasks that really ran (done
// and failed) and a real model call (a fake OpenAI-compatible server on loopback) are counted by the worker into
// data/metrics/history.json, and the page draws them per type and per profile as SVG charts over 24 h and 7 d.
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { FakeOpenAiServer } from '@assistant/llm/testing';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as z from 'zod';
import {
  expectAccessible,
  launchBrowser,
  openDashboard,
  type RunningAssistant,
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

async function enqueue(assistant: RunningAssistant, type: string, payload: unknown): Promise<string> {
  const response = await assistant.api('/api/tasks', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ type, payload }),
  });
  expect(response.status).toBe(201);
  return z.object({ id: z.string() }).parse(await response.json()).id;
}

describe('dashboard history', () => {
  it('charts the tasks and model calls the worker recorded, per type and profile, over 24 h and 7 d', async () => {
    await using model = await FakeOpenAiServer.start({ respond: () => ({ text: 'all done' }) });
    await using dir = await tempDir();
    await using assistant = await startAssistant({
      dir,
      extraConfig: `memory: {consolidate: []}\nllms:\n  default: {base_url: "${model.url}", model: fake-model}\n`,
    });
    for (const text of ['one', 'two', 'three']) await enqueue(assistant, 'system.echo', { text });
    // system.sleep fails at once, for good, on a payload that is not {ms: number}.
    await enqueue(assistant, 'system.sleep', { ms: 'not a number' });
    await enqueue(assistant, 'system.agent', { prompt: 'say you are done', max_steps: 2 });
    // The worker adds what finished to the file every couple of seconds.
    const file = path.join(assistant.dataDir, 'metrics', 'history.json');
    const recorded = async () => {
      const text = await readFile(file, 'utf8').catch(() => '');
      return ['"system.echo"', '"system.sleep"', '"system.agent"', '"default"'].every((key) => text.includes(key));
    };
    await expect.poll(recorded, { timeout: 30_000 }).toBe(true);

    await using dashboard = await openDashboard(browser, assistant);
    const { page } = dashboard;
    await page.goto('/history');
    const echo = page.locator('tr[data-type="system.echo"]');
    await expect.poll(() => echo.locator('td').nth(0).textContent(), { timeout: 20_000 }).toBe('3');
    expect(await echo.locator('td').nth(1).textContent()).toBe('0');
    expect(await echo.getByRole('img').getAttribute('aria-label')).toBe(
      'system.echo: 3 done, 0 failed in the last 24 hours',
    );
    expect(await echo.locator('svg rect.spark-done').count()).toBeGreaterThan(0);
    const sleep = page.locator('tr[data-type="system.sleep"]');
    expect(await sleep.getByRole('img').getAttribute('aria-label')).toBe(
      'system.sleep: 0 done, 1 failed in the last 24 hours',
    );
    expect(await sleep.locator('svg rect.spark-failed').count()).toBe(1);
    const profile = page.locator('tr[data-profile="default"]');
    expect(Number(await profile.locator('td').nth(0).textContent())).toBeGreaterThanOrEqual(1);
    expect(await profile.locator('td').nth(1).textContent()).toMatch(/^\d+(\.\d)? (ms|s)$/);
    expect(Number((await profile.locator('td').nth(2).textContent())?.replace(/,/g, ''))).toBeGreaterThan(0);
    expect(await profile.getByRole('img').count()).toBe(2);
    await expectAccessible(page, 'the history page');
    await screenshot(page, 'history', 'light', dir.path);
    await page.emulateMedia({ colorScheme: 'dark' });
    await expectAccessible(page, 'the history page, dark');
    await screenshot(page, 'history', 'dark', dir.path);
    await page.emulateMedia({ colorScheme: 'light' });

    // The week: hourly bars, the same counts.
    await page.getByRole('link', { name: '7 d' }).click();
    await page.waitForURL((url) => url.search === '?window=week');
    await expect
      .poll(() => page.locator('tr[data-type="system.echo"]').getByRole('img').getAttribute('aria-label'))
      .toBe('system.echo: 3 done, 0 failed in the last 7 days');
    expect(await page.getByRole('link', { name: 'History' }).getAttribute('aria-current')).toBe('page');
    expect(dashboard.consoleErrors).toEqual([]);
  }, 120_000);
});
