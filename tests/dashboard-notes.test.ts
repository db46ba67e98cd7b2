// The Notes pages in a real browser: browsing folders, searching by text and by field, a note whose frontmatter and
// body try script injection (inert), editing a note (the file changes, its frontmatter comments stay), a conflicting
// edit (reported with both versions, the file untouched), invalid YAML (located, nothing written), paths that try to
// leave the notes folder, accessibility and screenshots of each page in light and dark.
import { mkdir, readFile, symlink, writeFile } from 'node:fs/promises';
import http from 'node:http';
import path from 'node:path';
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
import { type TempDir, tempDir } from './helpers/temp-dir.ts';

let browser: Browser;
beforeAll(async () => {
  browser = await launchBrowser();
});
afterAll(async () => {
  await browser?.close();
});

const hello = `---
# Written by hand: keep this comment
subject: Lunch on Friday   # the mail's subject
status: new
tags: [food, friday]
from: {name: Ada, address: ada@example.org}
---

# Lunch

See [the plan](../../projects/plan.md) and [a site](https://example.org).
`;

const attack = '<script>alert(1)</script> "><img src=x onerror=alert(1)>';
const hostile = `---
subject: '${attack.replace(/'/g, "''")}'
status: read
nested:
  html: '<img src=x onerror=alert(2)>'
---

${attack}

[x](javascript:alert(1)) and ![pixel](https://tracker.example/p.gif)
`;

async function writeNote(notesRoot: string, notePath: string, text: string): Promise<string> {
  const file = path.join(notesRoot, notePath);
  await mkdir(path.dirname(file), { recursive: true });
  await writeFile(file, text);
  return file;
}

async function setup(dir: TempDir): Promise<{ assistant: RunningAssistant; notesRoot: string }> {
  const assistant = await startAssistant({ dir, serverOnly: true });
  const notesRoot = path.join(assistant.dataDir, 'notes');
  await writeNote(notesRoot, 'mail/inbox/hello.md', hello);
  await writeNote(notesRoot, 'mail/inbox/hostile.md', hostile);
  await writeNote(notesRoot, 'mail/inbox/other.md', '---\nsubject: Invoice\nstatus: read\n---\nPay by Monday.\n');
  await writeNote(notesRoot, 'mail/broken.md', '---\nsubject: [unclosed\nstatus: new\n---\nStill here.\n');
  await writeNote(notesRoot, 'projects/plan.md', '# Plan\n\nBack to [hello](../mail/inbox/hello.md).\n');
  return { assistant, notesRoot };
}

/** A GET with the path exactly as written: `fetch` would resolve `%2e%2e` segments before sending them. */
function rawGet(assistant: RunningAssistant, pathAndQuery: string): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const { hostname, port } = new URL(assistant.url);
    const request = http.get(
      { hostname, port, path: pathAndQuery, headers: { authorization: `Bearer ${assistant.token}` } },
      (response) => {
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('end', () =>
          resolve({ status: response.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }),
        );
        response.on('error', reject);
      },
    );
    request.on('error', reject);
  });
}

/** Replaces a textarea's whole text, as a person selecting all and typing would. */
async function setText(page: Page, label: string, text: string): Promise<void> {
  await page.getByLabel(label, { exact: false }).fill(text);
}

// A save that lost a race answers 409 and one with invalid YAML 400 (the pages say why); the browser logs those
// statuses. Nothing else may reach the console (a CSP violation would).
const expectedStatusErrors = new Set([
  'Failed to load resource: the server responded with a status of 409 (Conflict)',
  'Failed to load resource: the server responded with a status of 400 (Bad Request)',
]);

describe('dashboard notes', () => {
  it('browses folders, searches by text and field, and renders hostile notes inert', async () => {
    await using dir = await tempDir();
    const { assistant } = await setup(dir);
    await using _running = assistant;
    await using dashboard = await openDashboard(browser, assistant);
    const { page } = dashboard;
    const dialogs: string[] = [];
    page.on('dialog', (dialog) => {
      dialogs.push(dialog.message());
      void dialog.dismiss();
    });

    await page.goto('/notes');
    await expect.poll(() => page.getByRole('link', { name: 'mail/' }).count()).toBe(1);
    await expectAccessible(page, 'the notes root');
    await page.getByRole('link', { name: 'mail/' }).click();
    await page.getByRole('link', { name: 'inbox/' }).click();
    // Waits for the page itself, not the bootstrap page that loads it (decision 0023; the helper's waitForURL).
    await page.waitForURL((url) => url.searchParams.get('folder') === 'mail/inbox');
    const rows = page.locator('table.notes-list tbody tr');
    expect(await rows.count()).toBe(3);
    expect(await rows.first().textContent()).toContain('mail/inbox/hello.md');
    await expect.poll(() => page.getByRole('cell', { name: 'Lunch on Friday' }).count()).toBe(1);
    expect(await page.getByRole('navigation', { name: 'Breadcrumb' }).textContent()).toMatch(/Notes\s*mail\s*inbox/);
    await expectAccessible(page, 'a folder');

    // Search by text (any case, frontmatter or body), from the form.
    await page.getByRole('searchbox', { name: 'Text' }).fill('MONDAY');
    await page.getByLabel('In folder').fill('');
    await page.getByRole('button', { name: 'Search' }).click();
    await expect.poll(() => page.locator('.match-count').textContent()).toContain('1 note matches');
    expect(await page.locator('table.notes-list tbody tr').textContent()).toContain('mail/inbox/other.md');
    // By field, two conditions, as `assistant notes search --where` reads them; the broken note is counted as skipped.
    await page.goto('/notes?field=status=read&field=subject!=Invoice');
    await expect.poll(() => page.locator('.match-count').textContent()).toContain('1 note matches');
    expect(await page.locator('table.notes-list tbody').textContent()).toContain('mail/inbox/hostile.md');
    expect(await page.locator('.match-count').textContent()).toContain('1 broken note was skipped');
    expect(await page.getByLabel('Field condition 2').inputValue()).toBe('subject!=Invoice');
    await expectAccessible(page, 'search results');
    await page.goto('/notes?field=status');
    expect(await page.getByRole('alert').filter({ hasText: 'Nothing searched' }).textContent()).toContain(
      '`status` is not a condition',
    );

    // The hostile note: its subject is the page title and a table cell, its body a paragraph, all as text.
    await page.goto('/notes/mail/inbox/hostile.md');
    await expect.poll(() => page.getByRole('heading', { level: 1 }).textContent()).toBe(attack);
    expect(await page.locator('.markdown').textContent()).toContain(attack);
    expect(await page.locator('table.kv').textContent()).toContain('<img src=x onerror=alert(2)>');
    expect(await page.locator('main script, [onerror], main img').count()).toBe(0);
    expect(await page.locator('a[href^="javascript:" i]').count()).toBe(0);
    expect(await page.locator('.markdown').textContent()).toContain('[x](javascript:alert(1))');
    expect(await page.getByRole('link', { name: 'pixel' }).getAttribute('href')).toBe('https://tracker.example/p.gif');
    expect(dialogs).toEqual([]);
    await expectAccessible(page, 'a hostile note');

    // A note with links: relative ones lead to the linked note's page; all get rel=noopener noreferrer.
    await page.goto('/notes/mail/inbox/hello.md');
    expect(await page.getByRole('link', { name: 'a site' }).getAttribute('rel')).toBe('noopener noreferrer');
    await page.getByRole('link', { name: 'the plan' }).click();
    await page.waitForURL((url) => url.pathname === '/notes/projects/plan.md');
    await page.getByRole('link', { name: 'hello' }).click();
    await page.waitForURL((url) => url.pathname === '/notes/mail/inbox/hello.md');
    expect(await page.getByRole('row', { name: /^tags/ }).textContent()).toContain('"friday"');
    expect(await page.getByRole('row', { name: /^from/ }).textContent()).toContain('"address":"ada@example.org"');

    // A broken note is shown as its text with the problem located, never rewritten.
    await page.goto('/notes/mail/broken.md');
    expect(await page.getByRole('alert').filter({ hasText: 'cannot be read' }).textContent()).toMatch(
      /mail\/broken\.md:[23]:\d+: Flow sequence/,
    );
    expect(await page.locator('pre.note-raw').textContent()).toContain('subject: [unclosed');
    await expectAccessible(page, 'a broken note');
    expect(dashboard.consoleErrors).toEqual([]);
  });

  it('edits a note in place keeping its comments, and refuses invalid YAML with its line', async () => {
    await using dir = await tempDir();
    const { assistant, notesRoot } = await setup(dir);
    await using _running = assistant;
    await using dashboard = await openDashboard(browser, assistant);
    const { page } = dashboard;
    const file = path.join(notesRoot, 'mail/inbox/hello.md');

    await page.goto('/notes/mail/inbox/hello.md');
    await page.getByRole('link', { name: 'Edit note' }).click();
    const frontmatter = page.getByLabel('Frontmatter (YAML', { exact: false });
    // The form holds the file's parts exactly (the body's leading blank line included).
    expect(await frontmatter.inputValue()).toBe(hello.split('---\n')[1]);
    expect(await page.getByLabel('Body (markdown)').inputValue()).toBe(hello.split('---\n')[2]);
    await expectAccessible(page, 'the edit form');

    // Invalid YAML: the error names the line; nothing is written.
    await setText(page, 'Frontmatter (YAML', 'subject: Lunch\nstatus: [done\n');
    await page.getByRole('button', { name: 'Save note' }).click();
    await expect.poll(() => page.getByRole('alert').filter({ hasText: 'not valid YAML' }).count()).toBe(1);
    expect(await page.getByRole('alert').filter({ hasText: 'not valid YAML' }).textContent()).toMatch(
      /line \d of the frontmatter box \(line \d of the file\)/,
    );
    expect(await frontmatter.inputValue()).toBe('subject: Lunch\nstatus: [done\n');
    expect(await readFile(file, 'utf8')).toBe(hello);
    await expectAccessible(page, 'the edit form with an error');

    await page.goto('/notes/mail/inbox/hello.md?edit');
    const edited = (hello.split('---\n')[1] ?? '').replace('status: new', 'status: done # answered');
    await setText(page, 'Frontmatter (YAML', edited);
    await setText(page, 'Body (markdown)', '\n# Lunch\n\nMoved to Saturday.\n');
    await page.getByRole('button', { name: 'Save note' }).click();
    await page.waitForURL((url) => url.pathname === '/notes/mail/inbox/hello.md' && url.search === '?saved');
    await expect.poll(() => page.getByRole('status').filter({ hasText: 'Saved.' }).count()).toBe(1);
    const written = await readFile(file, 'utf8');
    expect(written).toBe(`---\n${edited}---\n\n# Lunch\n\nMoved to Saturday.\n`);
    expect(written).toContain('# Written by hand: keep this comment\nsubject: Lunch on Friday   # the mail');
    expect(await page.getByRole('row', { name: /^status/ }).textContent()).toContain('done');
    expect(await page.locator('.markdown').textContent()).toContain('Moved to Saturday.');
    expect(dashboard.consoleErrors.filter((error) => !expectedStatusErrors.has(error))).toEqual([]);
  });

  it('reports an edit that lost a race, shows both versions, writes nothing, then saves the chosen one', async () => {
    await using dir = await tempDir();
    const { assistant, notesRoot } = await setup(dir);
    await using _running = assistant;
    await using dashboard = await openDashboard(browser, assistant);
    const { page } = dashboard;
    const file = path.join(notesRoot, 'mail/inbox/hello.md');

    await page.goto('/notes/mail/inbox/hello.md?edit');
    await setText(page, 'Body (markdown)', '\nMy edit.\n');
    const theirs = hello
      .replace('status: new', 'status: archived')
      .replace('See [the plan]', 'Their edit. See [the plan]');
    await writeFile(file, theirs);
    await page.getByRole('button', { name: 'Save note' }).click();
    await expect.poll(() => page.getByRole('alert').filter({ hasText: 'Not saved' }).count()).toBe(1);
    expect(await readFile(file, 'utf8')).toBe(theirs);
    const mine = page.getByRole('region', { name: 'Your version' });
    const current = page.getByRole('region', { name: 'The file now' });
    expect(await mine.getByLabel('Body (markdown)').inputValue()).toBe('\nMy edit.\n');
    expect(await current.locator('[data-version="current-body"]').textContent()).toContain('Their edit.');
    expect(await current.locator('[data-version="current-frontmatter"]').textContent()).toContain('status: archived');
    await expectAccessible(page, 'the conflict page');

    // Taking mine: it is saved over the file as it is now (the form carries the new version).
    await mine.getByRole('button', { name: 'Save my version over the file' }).click();
    await page.waitForURL((url) => url.search === '?saved');
    expect(await readFile(file, 'utf8')).toBe(`---\n${hello.split('---\n')[1]}---\n\nMy edit.\n`);
    expect(dashboard.consoleErrors.filter((error) => !expectedStatusErrors.has(error))).toEqual([]);
  });

  it('keeps every path inside the notes folder and answers 404 for unknown notes', async () => {
    await using dir = await tempDir();
    const { assistant, notesRoot } = await setup(dir);
    await using _running = assistant;
    await dir.write('outside/secret.md', '---\nsecret: outside-the-notes\n---\n');
    await symlink(path.join(dir.path, 'outside'), path.join(notesRoot, 'out'));
    for (const attempt of [
      '/notes/%2e%2e/config.yaml',
      '/notes/mail/../../config.yaml',
      '/notes/%2E%2E%2Fconfig.yaml',
      '/notes/..%2f..%2fconfig.yaml',
      '/notes/mail/%2e%2e/%2e%2e/%2e%2e/config.yaml',
      '/notes/out/secret.md',
      '/notes/out/secret.md?edit',
      '/notes?folder=..',
      '/notes?folder=out',
      `/notes/${encodeURIComponent(path.join(dir.path, 'config.yaml'))}`,
    ]) {
      const response = await rawGet(assistant, attempt);
      const text = response.text;
      // Each reaches the notes routes as sent (fetch would normalise `%2e%2e` away) and is refused by them.
      expect(text, attempt).toMatch(/leaves the notes folder|must be relative to the notes folder/);
      expect(response.status, attempt).toBe(400);
      expect(text, attempt).not.toContain('outside-the-notes');
      expect(text, attempt).not.toContain('data_dir');
    }
    const posted = await assistant.api('/notes/out/secret.md', {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ frontmatter: 'x: 1', body: '', version: '0'.repeat(64) }).toString(),
    });
    expect([400, 403, 404]).toContain(posted.status);
    expect(await readFile(path.join(dir.path, 'outside/secret.md'), 'utf8')).toContain('outside-the-notes');
    const missing = await assistant.api('/notes/mail/nothing-here.md');
    expect(missing.status).toBe(404);
    expect(await missing.text()).toContain('no note mail/nothing-here.md');
    // A folder's path leads to its listing.
    const folder = await assistant.api('/notes/mail/inbox', { redirect: 'manual' });
    expect(folder.status).toBe(303);
    expect(folder.headers.get('location')).toBe('/notes?folder=mail%2Finbox');
  });

  it('pages a large folder and its search results 50 at a time, and fits a 360 px wide window', async () => {
    await using dir = await tempDir();
    const { assistant, notesRoot } = await setup(dir);
    await using _running = assistant;
    for (let index = 0; index < 120; index++) {
      const name = String(index).padStart(3, '0');
      await writeNote(
        notesRoot,
        `bulk/${name}.md`,
        `---\nsubject: Bulk ${name}\nstatus: ${index % 2 === 0 ? 'new' : 'read'}\n---\nBody ${name}\n`,
      );
    }
    await using dashboard = await openDashboard(browser, assistant, { narrow: true });
    const { page } = dashboard;
    const response = await page.goto('/notes?folder=bulk');
    expect((await response?.body())?.length).toBeLessThan(100_000);
    expect(await page.locator('table.notes-list tbody tr').count()).toBe(50);
    expect(await page.getByText('Page 1 of 3').count()).toBe(1);
    await page.getByRole('link', { name: 'Next page' }).click();
    await page.waitForURL((url) => url.searchParams.get('page') === '2');
    await page.getByRole('link', { name: 'Next page' }).click();
    await page.waitForURL((url) => url.searchParams.get('page') === '3');
    expect(await page.locator('table.notes-list tbody tr').count()).toBe(20);
    expect(await page.locator('table.notes-list tbody tr').first().textContent()).toContain('bulk/100.md');
    // Field search: 60 match, in two pages; the pager keeps the conditions.
    await page.goto('/notes?folder=bulk&field=status=new');
    await expect.poll(() => page.locator('.match-count').textContent()).toContain('60 notes match');
    await page.getByRole('link', { name: 'Next page' }).click();
    await page.waitForURL((url) => url.searchParams.get('page') === '2');
    expect(new URL(page.url()).searchParams.getAll('field')).toEqual(['status=new']);
    expect(await page.locator('table.notes-list tbody tr').count()).toBe(10);
    for (const url of ['/notes?folder=bulk', '/notes/mail/inbox/hello.md', '/notes/mail/inbox/hello.md?edit']) {
      await page.goto(url);
      expect(await sidewaysOverflow(page), `horizontal overflow of ${url} at 360 px`).toBeLessThanOrEqual(0);
    }
    expect(dashboard.consoleErrors).toEqual([]);
  });

  it('takes screenshots of each notes page in light and dark', async () => {
    await using dir = await tempDir();
    const { assistant, notesRoot } = await setup(dir);
    await using _running = assistant;
    const file = path.join(notesRoot, 'mail/inbox/hello.md');
    for (const scheme of ['light', 'dark'] as const) {
      await using dashboard = await openDashboard(browser, assistant, { colorScheme: scheme });
      const { page } = dashboard;
      await page.goto('/notes?folder=mail%2Finbox');
      await screenshot(page, 'notes', scheme, dir.path);
      await page.goto('/notes/mail/inbox/hello.md');
      await screenshot(page, 'note', scheme, dir.path);
      await page.goto('/notes/mail/inbox/hello.md?edit');
      await screenshot(page, 'note-edit', scheme, dir.path);
      await setText(page, 'Body (markdown)', '\nMy edit.\n');
      await writeFile(file, hello.replace('status: new', `status: ${scheme}`));
      await page.getByRole('button', { name: 'Save note' }).click();
      await expect.poll(() => page.getByRole('alert').filter({ hasText: 'Not saved' }).count()).toBe(1);
      await expectAccessible(page, `the conflict page (${scheme})`);
      await screenshot(page, 'note-conflict', scheme, dir.path);
      expect(dashboard.consoleErrors.filter((error) => !expectedStatusErrors.has(error))).toEqual([]);
    }
  });
});
