// The Config page in a real browser: every section of the loaded config, a `!secret` shown by name and its value
// nowhere in the HTML, markup in a config value rendered as text, and a file edited after the server loaded it:
// said so, with its problem located by file, line and key (the checks of `assistant config check`).
import { chmod, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
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

const secretValue = 'sk-dashboard-config-secret-7f3a9c1e5b';
const hostileModel = '"><img src=x onerror=alert(1)><script>alert(2)</script>';

describe('dashboard config page', () => {
  it('shows every section, secrets by name only, and a problem of the edited file with its line', async () => {
    await using dir = await tempDir();
    const secrets = await dir.write('secrets.yaml', `llm_key: ${secretValue}\n`);
    for (const folder of ['cur', 'new', 'tmp']) await dir.write(`Mail/${folder}/.keep`, '');
    await chmod(secrets, 0o600);
    await using assistant = await startAssistant({
      dir,
      serverOnly: true,
      extraConfig: `llms:
  default:
    base_url: http://127.0.0.1:9/v1
    model: '${hostileModel}'
    token: !secret llm_key
integrations:
  - type: email
    name: personal
    maildir: ./Mail
    window: 14d
    platforms:
      inbox:
        automations:
          - name: file newsletters
            when: {newsletter: true}
            then: archive
`,
    });
    await using dashboard = await openDashboard(browser, assistant);
    const { page } = dashboard;
    await page.goto('/config');
    for (const heading of ['Server', 'Worker', 'Queue', 'LLM profiles', 'Integration instances', 'Schedules']) {
      await expect.poll(() => page.getByRole('heading', { name: heading, exact: true }).count()).toBe(1);
    }
    await expect.poll(() => page.getByRole('heading', { name: 'Automations per platform' }).count()).toBe(1);
    expect(await page.getByText('(secret: llm_key)').count()).toBe(1);
    expect(await page.getByText('passes the checks').count()).toBe(1);
    // config.yaml's own keys and units (issue 31, item 6): no internal names, no milliseconds, no settings that do
    // not apply (Redis with the file backend, an IMAP port for a Maildir), and a rule as the owner wrote it.
    const main = (await page.locator('main').textContent()) ?? '';
    for (const internal of ['pollIntervalMs', 'everyMs', 'shutdownGraceMs', 'allowedHosts', '1209600000', 'redis']) {
      expect(main).not.toContain(internal);
    }
    const worker = page.locator('#config-worker + table');
    expect(await worker.getByRole('row', { name: 'poll_interval' }).textContent()).toBe('poll_interval100ms');
    const instance = page.locator('section[aria-labelledby="config-integrations"]');
    expect(await instance.getByRole('row', { name: 'window' }).first().textContent()).toBe('window14d');
    expect(await instance.getByRole('row', { name: 'port', exact: true }).count()).toBe(0);
    expect(await page.locator('pre.config-rule').textContent()).toBe(
      'name: file newsletters\nwhen:\n  newsletter: true\nthen: archive',
    );
    expect(await page.locator('#config-changed').count()).toBe(0);
    // The hostile model name is text: no element came out of it.
    expect(await page.locator('main img').count()).toBe(0);
    expect(await page.locator('main script').count()).toBe(0);
    expect(await page.getByText(hostileModel).count()).toBe(1);
    const served = await (await assistant.api('/config')).text();
    expect(served).not.toContain(secretValue);
    expect(served).toContain('(secret: llm_key)');
    expect(served.length).toBeLessThan(100_000);
    await expectAccessible(page, 'the config page');
    await screenshot(page, 'config', 'light', dir.path);

    // The file edited after the server loaded it: a key the schema does not know, on a line we know.
    const configFile = path.join(dir.path, 'config.yaml');
    const before = await readFile(configFile, 'utf8');
    const badLine = before.split('\n').length;
    await writeFile(configFile, `${before.endsWith('\n') ? before : `${before}\n`}approvals: {expire: 1d}\n`);
    await page.reload();
    await expect.poll(() => page.locator('#config-changed').count()).toBe(1);
    const problem = page.locator('table.config-problems tbody tr').filter({ hasText: 'approvals' });
    expect(await problem.count()).toBe(1);
    expect(await problem.locator('td').nth(1).textContent()).toContain('config.yaml');
    expect(await problem.locator('td').nth(2).textContent()).toBe(`${badLine}:13`);
    expect(await problem.locator('td').nth(3).textContent()).toContain('approvals');
    // The page still shows the config the server runs with.
    expect(await page.getByText('(secret: llm_key)').count()).toBe(1);
    expect(await page.content()).not.toContain(secretValue);
    await expectAccessible(page, 'the config page with a problem');
    expect(dashboard.consoleErrors).toEqual([]);

    await using dark = await openDashboard(browser, assistant, { colorScheme: 'dark' });
    await dark.page.goto('/config');
    await expect.poll(() => dark.page.locator('#config-changed').count()).toBe(1);
    await expectAccessible(dark.page, 'the config page, dark');
    await screenshot(dark.page, 'config', 'dark', dir.path);
    expect(dark.consoleErrors).toEqual([]);
  }, 90_000);
});
