// Pause and resume from the dashboard's Config page in a real browser: the form pauses an instance through the same
// pause note as the CLI and the API (the API then lists it, by `dashboard`), the page marks it paused, and its
// Resume button resumes it.
import path from 'node:path';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectAccessible, launchBrowser, openDashboard, startAssistant } from './helpers/browser.ts';
import { repoRoot } from './helpers/node-process.ts';
import { tempDir } from './helpers/temp-dir.ts';

const greeter = path.join(repoRoot, 'tests/fixtures/integrations/custom/greeter');

let browser: Browser;
beforeAll(async () => {
  browser = await launchBrowser();
});
afterAll(async () => {
  await browser?.close();
});

describe('dashboard pause control', () => {
  it('pauses an instance from the Config page, marks it paused, and resumes it', async () => {
    await using dir = await tempDir();
    await using assistant = await startAssistant({
      dir,
      serverOnly: true,
      extraConfig: `integration_dirs: [${JSON.stringify(greeter)}]
memory: {consolidate: []} # memory has its own tests (tests/memory-worker.test.ts)
llms:
  default: {base_url: "http://127.0.0.1:9/v1", model: m}
integrations:
  - type: greeter
    name: friendly
    schedule: {every: 1h}
    platforms:
      cards:
        automations:
          - name: wave at friends
            when: {is_friend: true}
            then: wave
`,
    });
    await using dashboard = await openDashboard(browser, assistant);
    const { page } = dashboard;
    await page.goto('/config');
    await expect.poll(() => page.getByRole('heading', { name: 'Paused', exact: true }).count()).toBe(1);
    expect(await page.locator('#paused-none').count()).toBe(1);
    const options = await page.locator('#pause-target option').allTextContents();
    expect(options).toEqual(
      expect.arrayContaining(['instance: friendly', 'rule: friendly/cards/wave at friends', 'schedule: friendly']),
    );

    await page.getByLabel('What to pause').selectOption('instance:friendly');
    await page.getByLabel('Reason (optional)').fill('on holiday');
    await page.getByRole('button', { name: 'Pause', exact: true }).click();
    const row = page.locator('table.paused-list tbody tr').filter({ hasText: 'friendly' });
    await expect.poll(() => row.count()).toBe(1);
    expect(await row.textContent()).toContain('on holiday');
    expect(await row.locator('.tier').textContent()).toBe('paused');
    const listed = (await (await assistant.api('/api/pauses')).json()) as { entries: unknown[] };
    expect(listed.entries).toEqual([
      expect.objectContaining({ kind: 'instance', name: 'friendly', by: 'dashboard', reason: 'on holiday' }),
    ]);
    await expectAccessible(page, 'the config page with a pause');
    // The Overview keeps it in view ("Needs you"), with where to resume it.
    await page.goto('/');
    const needsPaused = page.locator('section[aria-labelledby="needs-paused"]');
    await expect.poll(() => needsPaused.count()).toBe(1);
    expect(await needsPaused.textContent()).toMatch(/instance friendly.*on holiday/s);
    await needsPaused.getByRole('link', { name: 'Resume on the Config page' }).click();
    await expect.poll(() => page.getByRole('heading', { name: 'Paused', exact: true }).count()).toBe(1);

    await row.getByRole('button', { name: /Resume/ }).click();
    await expect.poll(() => page.locator('#paused-none').count()).toBe(1);
    expect(((await (await assistant.api('/api/pauses')).json()) as { entries: unknown[] }).entries).toEqual([]);
    expect(dashboard.consoleErrors).toEqual([]);
  }, 120_000);
});
