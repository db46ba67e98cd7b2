// What needs the owner, in a real browser against a real `assistant start` (issue 31, items 8, 9, 10 and 14): the
// Overview's "Needs you" lists pending approvals, an agent's open question, a task failed since last seen (with "Mark
// as seen"), and what runs now; the nav's approvals count shows on every page and follows a decision live; tasks, a
// task page and log lines name the item by its subject (hostile text staying text); an item's note page shows Why and
// the body before its folded frontmatter, and a timeline of its tasks, approval requests and log lines in order.
import { appendFile, mkdir } from 'node:fs/promises';
import path from 'node:path';
import type { Browser } from 'playwright-core';
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
import { repoRoot, runCli } from './helpers/node-process.ts';
import { tempDir } from './helpers/temp-dir.ts';

const greeter = path.join(repoRoot, 'tests/fixtures/integrations/custom/greeter');
const evilSubject = '<script>alert(1)</script>"><img src=x onerror=alert(2)> Lunch on Friday?';
const extraConfig = `integration_dirs: [${JSON.stringify(greeter)}]
memory: {consolidate: []} # memory has its own tests (tests/memory-worker.test.ts)
llms:
  default: {base_url: "http://127.0.0.1:9/v1", model: m}
integrations:
  - type: greeter
    name: friendly
    platforms:
      cards:
        names: [Ada, Anne]
        friends: []
        automations:
          - name: hug close people
            when: {close: ">= 0.8"}
            then: hug
          - name: cards for close people
            when: {close: ">= 0.8"}
            then: send_card
            approval: required
`;

let browser: Browser;
beforeAll(async () => {
  browser = await launchBrowser();
});
afterAll(async () => {
  await browser?.close();
});

interface Listed {
  approvals: { id: string; status: string; title: string }[];
}

async function enqueue(assistant: RunningAssistant, type: string, payload: unknown): Promise<string> {
  const response = await assistant.api('/api/tasks', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ type, payload }),
  });
  expect(response.status).toBe(201);
  return ((await response.json()) as { id: string }).id;
}

async function stateOf(assistant: RunningAssistant, id: string): Promise<string> {
  return ((await (await assistant.api(`/api/tasks/${id}`)).json()) as { state: string }).state;
}

async function tasksOfType(assistant: RunningAssistant, type: string): Promise<{ id: string; state: string }[]> {
  const body = (await (await assistant.api(`/api/tasks?type=${type}`)).json()) as {
    tasks: { id: string; state: string }[];
  };
  return body.tasks;
}

describe('dashboard: what needs you, names by subject, an item timeline', () => {
  // A bound, not a wait: one walk through five pages in three browser contexts, each page checked with axe.
  it('shows what needs the owner first, names items by subject, and an item its timeline', {
    timeout: 240_000,
  }, async () => {
    await using dir = await tempDir();
    await using assistant = await startAssistant({ dir, extraConfig });
    // Ada's note is a mail-like item: a subject a stranger wrote (markup in it), a sender, a body, many fields.
    await dir.write(
      'data/notes/greeter/friendly/ada.md',
      `---\nname: Ada\nsubject: ${JSON.stringify(evilSubject)}\nfrom: "Ada Lovelace <ada@example.com>"\nis_friend: false\nclassifications: {close: 0.9}\nf1: 1\nf2: 2\nf3: 3\nf4: 4\nf5: 5\n---\nAda asks about lunch.\n`,
    );
    expect((await runCli(['trigger', 'friendly', 'cards'], { cwd: dir.path })).code).toBe(0);
    const pending = async () => ((await (await assistant.api('/api/approvals')).json()) as Listed).approvals;
    await expect.poll(async () => (await pending()).length, { timeout: 20_000 }).toBe(2);
    const anneId = (await pending()).find((request) => request.title === 'Anne')?.id ?? '';
    // Ada's hug is taken (no approval needed): her act task is done before the page is opened.
    await expect
      .poll(async () => (await tasksOfType(assistant, 'greeter.cards.act')).map((task) => task.state), {
        timeout: 20_000,
      })
      .toEqual(['done', 'done']);

    // A task that fails for good, and one that runs now and asks the owner a question (as an agent's events file
    // says: the worker writes these lines for a running agent).
    const failed = await enqueue(assistant, 'system.sleep', { ms: -1 });
    await expect.poll(() => stateOf(assistant, failed), { timeout: 20_000 }).toBe('failed');
    const running = await enqueue(assistant, 'system.sleep', { ms: 600_000 });
    await expect.poll(() => stateOf(assistant, running), { timeout: 20_000 }).toBe('active');
    const control = path.join(assistant.dataDir, 'control', running);
    await mkdir(control, { recursive: true });
    await appendFile(
      path.join(control, 'events.jsonl'),
      `${JSON.stringify({ type: 'step-started', step: 1, at: new Date().toISOString() })}\n${JSON.stringify({ type: 'clarification', id: 'q-1', question: 'Which <b>Friday</b>?', at: new Date().toISOString() })}\n`,
    );

    await using dashboard = await openDashboard(browser, assistant);
    const { page } = dashboard;
    await expect.poll(() => page.locator('#live-status').textContent(), { timeout: 20_000 }).toBe('live');
    const needs = page.locator('#overview-needs');
    // First on the page, before the queue.
    expect(await page.locator('.overview > section').first().getAttribute('id')).toBe('overview-needs');
    await expect
      .poll(() => needs.getByRole('heading', { name: '2 approvals waiting' }).count(), { timeout: 20_000 })
      .toBe(1);
    expect(await needs.getByRole('link', { name: 'send_card for Anne' }).getAttribute('href')).toBe(
      `/approvals/${anneId}`,
    );
    expect(await needs.getByRole('heading', { name: '1 question from agents' }).count()).toBe(1);
    expect(await needs.textContent()).toContain('“Which <b>Friday</b>?”');
    expect(await needs.getByRole('link', { name: 'Answer' }).getAttribute('href')).toBe(
      `/tasks/${running}#clarifications-heading`,
    );
    expect(await needs.getByRole('heading', { name: '1 task failed since you last looked' }).count()).toBe(1);
    expect(await needs.locator(`a[href="/tasks/${failed}"]`).count()).toBe(1);
    const runningList = needs.locator('#needs-running-list');
    expect(await runningList.locator(`a[href="/tasks/${running}"]`).count()).toBe(1);
    expect(await runningList.textContent()).toContain('ms: 600000');
    expect(await runningList.textContent()).toContain('step 1, attempt 1 of');
    // The nav's count, on this page and on every other.
    expect((await page.locator('#nav-approvals-count').textContent())?.trim()).toBe('2 waiting');
    await expectAccessible(page, 'the overview with what needs you');
    await screenshot(page, 'overview-needs', 'light', dir.path);

    // Marking failures as seen clears them from the list (a new failure would show again).
    await needs.getByRole('button', { name: 'Mark as seen' }).click();
    await expect
      .poll(
        () =>
          page
            .locator('#overview-needs')
            .getByRole('heading', { name: /failed since/ })
            .count(),
        {
          timeout: 20_000,
        },
      )
      .toBe(0);

    // A decision elsewhere (the CLI) lowers the count live, on a page that is not the Approvals page.
    await page.goto('/tasks?type=greeter.cards.evaluate');
    await expect.poll(() => page.locator('#live-status').textContent(), { timeout: 20_000 }).toBe('live');
    expect((await page.locator('#nav-approvals-count').textContent())?.trim()).toBe('2 waiting');
    expect((await runCli(['approve', anneId], { cwd: dir.path })).code).toBe(0);
    await expect
      .poll(async () => (await page.locator('#nav-approvals-count').textContent())?.trim(), { timeout: 20_000 })
      .toBe('1 waiting');

    // The Tasks page names each evaluate task's item by its subject and sender; the markup stays text.
    const adaLink = page.locator('.task-subject a[href="/notes/greeter/friendly/ada.md"]').first();
    expect(await adaLink.textContent()).toBe(evilSubject);
    expect(await page.locator('.task-subject').first().textContent()).toBeTruthy();
    expect(await page.getByText('from Ada Lovelace <ada@example.com>').count()).toBeGreaterThan(0);
    expect(await page.locator('img[src="x"], main script').count()).toBe(0);
    await expectAccessible(page, 'the tasks page with subjects');

    // A task's page: its item by subject, a link to the item's note.
    const evaluate = (await tasksOfType(assistant, 'greeter.cards.evaluate'))[0];
    const adaEvaluate = await (async () => {
      for (const task of await tasksOfType(assistant, 'greeter.cards.evaluate')) {
        const body = (await (await assistant.api(`/api/tasks/${task.id}`)).json()) as { payload: { note: string } };
        if (body.payload.note === 'greeter/friendly/ada.md') return task.id;
      }
      return evaluate?.id ?? '';
    })();
    await page.goto(`/tasks/${adaEvaluate}`);
    const itemRow = page.locator('table.kv tr', { has: page.locator('th', { hasText: /^Item$/ }) });
    expect(await itemRow.getByRole('link', { name: evilSubject }).getAttribute('href')).toBe(
      '/notes/greeter/friendly/ada.md',
    );
    expect(await itemRow.textContent()).toContain('from Ada Lovelace <ada@example.com>');

    // An approval names its item by subject and sender too.
    await page.goto('/approvals');
    const adaRequest = page.locator('article.approval', { hasText: 'send_card for Ada' });
    const adaItem = adaRequest.locator('tr', { has: page.locator('th', { hasText: /^Item$/ }) });
    expect(await adaItem.textContent()).toContain(`“${evilSubject}” from Ada Lovelace <ada@example.com>`);

    // The log links a line about the item by the item's subject.
    await page.goto('/log');
    expect(await page.locator('#log-lines a.log-link', { hasText: evilSubject }).count()).toBeGreaterThan(0);

    // The item's note page: Why, then the body, then the timeline, then the frontmatter, folded (it is long).
    await page.goto('/notes/greeter/friendly/ada.md');
    const headings = await page.locator('main h2').allTextContents();
    expect(headings.indexOf('Why')).toBeLessThan(headings.indexOf('Body'));
    expect(headings.indexOf('Body')).toBeLessThan(headings.indexOf('Timeline'));
    expect(headings.indexOf('Timeline')).toBeLessThan(headings.indexOf('Frontmatter'));
    expect(await page.locator('details.frontmatter').getAttribute('open')).toBeNull();
    const timeline = page.locator('#item-timeline > li');
    const kinds = await timeline.evaluateAll((items) =>
      items.map((item) => `${item.getAttribute('data-kind')}:${item.getAttribute('data-stage') ?? ''}`),
    );
    // The check that found Ada, her evaluate and act tasks, in that order; her approval request and log lines too.
    const stages = kinds.filter((kind) => kind.startsWith('task:'));
    expect(stages).toEqual(['task:check', 'task:evaluate', 'task:act']);
    expect(kinds).toContain('approval:');
    expect(kinds.filter((kind) => kind === 'log:').length).toBeGreaterThanOrEqual(2);
    expect(kinds.indexOf('task:evaluate')).toBeLessThan(kinds.indexOf('approval:'));
    const times = await page
      .locator('#item-timeline > li > time:first-child')
      .evaluateAll((items) => items.map((item) => item.getAttribute('datetime') ?? ''));
    const seconds = times.map((time) => Math.floor(Date.parse(time) / 1_000));
    expect(seconds).toEqual([...seconds].sort((left, right) => left - right));
    expect(await page.locator('img[src="x"]').count()).toBe(0);
    await expectAccessible(page, 'an item note with its timeline');
    await page.locator('#timeline-heading').scrollIntoViewIfNeeded();
    await screenshot(page, 'note-timeline', 'light', dir.path);
    expect(dashboard.consoleErrors).toEqual([]);

    await using dark = await openDashboard(browser, assistant, { colorScheme: 'dark' });
    await expectAccessible(dark.page, 'the overview with what needs you, dark');
    await screenshot(dark.page, 'overview-needs', 'dark', dir.path);
    await dark.page.goto('/notes/greeter/friendly/ada.md');
    await expectAccessible(dark.page, 'an item note with its timeline, dark');
    await dark.page.locator('#timeline-heading').scrollIntoViewIfNeeded();
    await screenshot(dark.page, 'note-timeline', 'dark', dir.path);

    await using narrow = await openDashboard(browser, assistant, { narrow: true });
    expect(await sidewaysOverflow(narrow.page)).toBeLessThanOrEqual(0);
    expect(dark.consoleErrors).toEqual([]);
    expect(narrow.consoleErrors).toEqual([]);
  });
});
