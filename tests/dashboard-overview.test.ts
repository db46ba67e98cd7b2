// The Overview and Log pages in a real browser (Debian's Chromium through playwright-core): a task enqueued over REST
// shows in the counts and in the log without a reload (the worker runs it), a log line holding markup shows as text,
// both pages pass axe in light and dark, fit 360 px, and nothing breaks the CSP.
import path from 'node:path';
import { FileHumanLog } from '@assistant/notes';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  expectAccessible,
  launchBrowser,
  openDashboard,
  type RunningAssistant,
  screenshot,
  sidewaysOverflow,
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

const hostile = `<script>alert("log")</script> "><img src=x onerror=alert(1)>`;

async function enqueueEcho(assistant: RunningAssistant, marker: string): Promise<string> {
  const response = await assistant.api('/api/tasks', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ type: 'system.echo', payload: { marker } }),
  });
  expect(response.status).toBe(201);
  const body = (await response.json()) as { id: string };
  return body.id;
}

/** Marks the document, so a test can tell that what it saw came without a reload. */
async function taskState(assistant: RunningAssistant, id: string): Promise<string> {
  const body = (await (await assistant.api(`/api/tasks/${id}`)).json()) as { state: string };
  return body.state;
}

async function markDocument(page: Page): Promise<void> {
  await page.evaluate(() => {
    (globalThis as unknown as { dashboardTestMark: number }).dashboardTestMark = 1;
  });
}

async function stillSameDocument(page: Page): Promise<boolean> {
  return page.evaluate(() => (globalThis as unknown as { dashboardTestMark?: number }).dashboardTestMark === 1);
}

describe('dashboard overview and log', () => {
  it('shows a task enqueued over REST in the counts and the log live, and the log as text', async () => {
    await using dir = await tempDir();
    await using assistant = await startAssistant({ dir });
    const humanLog = new FileHumanLog({ directory: path.join(assistant.dataDir, 'logs') });
    await humanLog.write({ source: 'email/inbox', message: `archived ${hostile}`, reason: 'rule "x"' });

    await using dashboard = await openDashboard(browser, assistant);
    const { page } = dashboard;
    await expect.poll(() => page.locator('#live-status').textContent()).toBe('live');
    const doneCount = page.locator('#overview-queue dt:has-text("done") + dd');
    // The system's own housekeeping may have run already: count from what the page shows now.
    const before = Number(await doneCount.textContent());
    await markDocument(page);

    const id = await enqueueEcho(assistant, 'first');
    await expect.poll(() => taskState(assistant, id), { timeout: 20_000 }).toBe('done');
    const health = (await (await assistant.api('/health')).json()) as { queue: { done: number } };
    expect(health.queue.done).toBeGreaterThan(before);
    await expect.poll(() => doneCount.textContent(), { timeout: 20_000 }).toBe(String(health.queue.done));
    await expect
      .poll(() => page.locator('#overview-log').getByText(`echoed task ${id}`).count(), { timeout: 20_000 })
      .toBe(1);
    await expect
      .poll(() => page.locator('#overview-queue figcaption').textContent())
      .toContain(`${health.queue.done} done, 0 failed in the last hour`);
    expect(await stillSameDocument(page)).toBe(true);
    // The worker publishes its memory; the workers table shows it once the part refreshes or the page loads.
    await page.reload();
    await expect.poll(() => page.locator('#overview-workers tbody td').allTextContents()).toContain('alive');
    expect((await page.locator('#overview-workers tbody').textContent()) ?? '').toMatch(/\d+ MiB/);
    // The hostile line is text everywhere it shows.
    expect(await page.locator('#overview-log').getByText(hostile).count()).toBe(1);
    expect(await page.locator('#overview-log img, #overview-log script').count()).toBe(0);
    await expectAccessible(page, 'the overview page');
    await screenshot(page, 'overview', 'light', dir.path);

    await page.goto('/log');
    await expect.poll(() => page.locator('#live-status').textContent()).toBe('live');
    expect(await page.locator('#log-lines').getByText(hostile).count()).toBe(1);
    expect(await page.locator('#log-lines img, #log-lines script').count()).toBe(0);
    await markDocument(page);
    const second = await enqueueEcho(assistant, 'second');
    await expect
      .poll(() => page.locator('#log-lines').getByText(`echoed task ${second}`).count(), { timeout: 20_000 })
      .toBe(1);
    // Appended once, after the lines already there, without a reload.
    const lines = await page.locator('#log-lines > li:not([hidden])').allTextContents();
    expect(lines.at(-1)).toContain(`echoed task ${second}`);
    expect(lines.filter((line) => line.includes(`echoed task ${id}`))).toHaveLength(1);
    expect(await stillSameDocument(page)).toBe(true);
    await expectAccessible(page, 'the log page');
    await screenshot(page, 'log', 'light', dir.path);
    expect(dashboard.consoleErrors).toEqual([]);
  });

  it('reads well in dark and at 360 px wide', async () => {
    await using dir = await tempDir();
    await using assistant = await startAssistant({ dir });
    const humanLog = new FileHumanLog({ directory: path.join(assistant.dataDir, 'logs') });
    await humanLog.write({
      source: 'email/inbox',
      message: `archived "${'a-very-long-subject-without-spaces-'.repeat(8)}"`,
      link: 'email/inbox/2026/a-long-note-name.md',
    });
    const id = await enqueueEcho(assistant, 'dark');
    await expect.poll(() => taskState(assistant, id), { timeout: 20_000 }).toBe('done');

    await using dark = await openDashboard(browser, assistant, { colorScheme: 'dark' });
    await expect.poll(() => dark.page.locator('#live-status').textContent()).toBe('live');
    await expectAccessible(dark.page, 'the overview page, dark');
    await screenshot(dark.page, 'overview', 'dark', dir.path);
    await dark.page.goto('/log');
    await expectAccessible(dark.page, 'the log page, dark');
    await screenshot(dark.page, 'log', 'dark', dir.path);
    expect(dark.consoleErrors).toEqual([]);

    await using narrow = await openDashboard(browser, assistant, { narrow: true });
    expect(await sidewaysOverflow(narrow.page)).toBeLessThanOrEqual(0);
    await narrow.page.goto('/log');
    expect(await sidewaysOverflow(narrow.page)).toBeLessThanOrEqual(0);
    expect(narrow.consoleErrors).toEqual([]);
  });
});
