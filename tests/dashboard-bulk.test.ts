// Bulk actions in a real browser against a real `assistant start` (issue 31, item 12): the Tasks page retries and then
// deletes exactly the failed tasks its filters show, and the Approvals page approves or rejects several requests at
// once, each bound to the digest it was shown with, refusing (and saying so) the one that is not what was shown.
// The REST bulk endpoints the page shares need the token.
import path from 'node:path';
import { readApproval } from '@assistant/actions';
import { FileNoteStore } from '@assistant/notes';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as z from 'zod';
import { launchBrowser, openDashboard, type RunningAssistant, startAssistant } from './helpers/browser.ts';
import { repoRoot, runCli } from './helpers/node-process.ts';
import { tempDir } from './helpers/temp-dir.ts';

let browser: Browser;
beforeAll(async () => {
  browser = await launchBrowser();
});
afterAll(async () => {
  await browser?.close();
});

const listed = z.object({ tasks: z.array(z.object({ id: z.string().nullable() })) });
const taskView = z.looseObject({ id: z.string(), state: z.string(), history: z.array(z.unknown()).optional() });

async function enqueue(assistant: RunningAssistant, payload: unknown): Promise<string> {
  const response = await assistant.api('/api/tasks', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ type: 'system.sleep', payload }),
  });
  expect(response.status).toBe(201);
  return z.object({ id: z.string() }).parse(await response.json()).id;
}

async function failedIds(assistant: RunningAssistant): Promise<string[]> {
  const body = listed.parse(await (await assistant.api('/api/tasks?state=failed')).json());
  return body.tasks.flatMap((task) => (task.id ? [task.id] : [])).sort();
}

async function task(assistant: RunningAssistant, id: string) {
  return taskView.parse(await (await assistant.api(`/api/tasks/${id}`)).json());
}

const greeter = path.join(repoRoot, 'tests/fixtures/integrations/custom/greeter');
const greeterConfig = `integration_dirs: [${JSON.stringify(greeter)}]
memory: {consolidate: []} # memory has its own tests (tests/memory-worker.test.ts)
llms:
  default: {base_url: "http://127.0.0.1:11434/v1", model: m}
integrations:
  - type: greeter
    name: friendly
    platforms:
      cards:
        names: [Ada, Anne, Bea]
        friends: []
        automations:
          - name: cards for close people
            when: {close: ">= 0.8"}
            then: send_card
            approval: required
`;

describe('dashboard bulk actions', () => {
  it('retries, then deletes, exactly the failed tasks the filters show', async () => {
    await using dir = await tempDir();
    await using assistant = await startAssistant({ dir });
    // system.sleep fails at once, for good, on a payload that is not {ms: number}: two match the text filter, one not.
    const shown = [await enqueue(assistant, { ms: 'marker-a 1' }), await enqueue(assistant, { ms: 'marker-a 2' })];
    const other = await enqueue(assistant, { ms: 'marker-b' });
    await expect.poll(() => failedIds(assistant), { timeout: 20_000 }).toEqual([...shown, other].sort());

    // The REST endpoint the page shares needs the token.
    const anonymous = await fetch(`${assistant.url}/api/tasks/bulk`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ action: 'retry', ids: shown }),
    });
    expect(anonymous.status).toBe(401);

    await using dashboard = await openDashboard(browser, assistant);
    const { page } = dashboard;
    await page.goto('/tasks?state=failed&q=marker-a');
    await expect.poll(() => page.locator('#live-status').textContent()).toBe('live');
    // What the results region is asked to do and does, for the report below if it never refreshes (seen once in CI):
    // the live stream's refresh triggers, and its requests and their outcomes.
    await page.evaluate(() => {
      const browser = globalThis as unknown as {
        resultsLog: string[];
        document: {
          addEventListener(
            type: string,
            listener: (event: { target?: { id?: string }; detail?: { successful?: boolean } }) => void,
          ): void;
        };
      };
      browser.resultsLog = [];
      for (const type of ['live-refresh', 'htmx:beforeRequest', 'htmx:afterRequest', 'htmx:afterSwap']) {
        browser.document.addEventListener(type, (event) => {
          if (event.target?.id !== 'task-results') return;
          const outcome = type === 'htmx:afterRequest' ? ` ${event.detail?.successful ? 'ok' : 'failed'}` : '';
          browser.resultsLog.push(`${Date.now() % 100_000} ${type}${outcome}`);
        });
      }
    });
    await page.getByRole('button', { name: 'Retry the 2 failed tasks shown' }).click();
    await expect
      .poll(() => page.locator('#bulk-notice').textContent(), { timeout: 20_000 })
      .toContain('Retried 2 tasks: pending again.');
    // Each ran again and failed again: a second attempt in its history; the one not shown was not touched.
    for (const id of shown) {
      await expect
        .poll(
          async () => {
            const view = await task(assistant, id);
            return `${view.state} ${view.history?.length ?? 0}`;
          },
          { timeout: 20_000 },
        )
        .toBe('failed 2');
    }
    expect((await task(assistant, other)).history ?? []).toHaveLength(1);

    // Delete asks first; then removes the two shown, and only them.
    const dialogs: string[] = [];
    page.on('dialog', (dialog) => {
      dialogs.push(dialog.message());
      void dialog.accept();
    });
    await expect.poll(() => page.getByRole('button', { name: 'Delete the 2 failed tasks shown' }).count()).toBe(1);
    await page.getByRole('button', { name: 'Delete the 2 failed tasks shown' }).click();
    await expect
      .poll(() => page.locator('#bulk-notice').textContent(), { timeout: 20_000 })
      .toContain('Deleted 2 tasks.');
    expect(dialogs).toEqual(['Delete the 2 failed tasks shown for good?']);
    expect(await failedIds(assistant)).toEqual([other]);
    await expect
      .poll(() => page.locator('#task-results').textContent(), { timeout: 20_000 })
      .toContain('No task matches.')
      .catch(async (error: unknown) => {
        const state = await page.evaluate(() => {
          const browser = globalThis as unknown as {
            resultsLog?: string[];
            document: { querySelector(selector: string): { textContent: string | null; className: string } | null };
          };
          return {
            live: browser.document.querySelector('#live-status')?.textContent,
            region: browser.document.querySelector('#task-results')?.className,
            results: browser.resultsLog?.slice(-30),
          };
        });
        throw new Error(
          `${error instanceof Error ? error.message : String(error)}\nthe page: ${JSON.stringify(state)}; console errors: ${JSON.stringify(dashboard.consoleErrors)}`,
        );
      });

    // A task that is no longer failed is refused by the same endpoint, with why; the rest go ahead.
    const response = await assistant.api('/api/tasks/bulk', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ action: 'delete', ids: [shown[0], other] }),
    });
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({
      action: 'delete',
      done: [{ id: other }],
      refused: [{ id: shown[0], reason: `no task with id ${shown[0]}` }],
    });
    expect(dashboard.consoleErrors).toEqual([]);
  }, 120_000);

  it('approves several requests at once, each bound to what it showed, and refuses one that differs', async () => {
    await using dir = await tempDir();
    await using assistant = await startAssistant({ dir, extraConfig: greeterConfig });
    for (const name of ['ada', 'anne', 'bea']) {
      await dir.write(
        `data/notes/greeter/friendly/${name}.md`,
        `---\nname: ${name}\nis_friend: false\nclassifications: {close: 0.9}\n---\n${name}.\n`,
      );
    }
    expect((await runCli(['trigger', 'friendly', 'cards'], { cwd: dir.path })).code).toBe(0);
    const pending = async () =>
      z
        .object({ approvals: z.array(z.object({ id: z.string(), title: z.string(), digest: z.string() })) })
        .parse(await (await assistant.api('/api/approvals')).json()).approvals;
    await expect.poll(async () => (await pending()).length, { timeout: 20_000 }).toBe(3);
    const requests = await pending();
    const idOf = (title: string) => requests.find((request) => request.title === title)?.id ?? '';
    const [ada, anne, bea] = [idOf('ada'), idOf('anne'), idOf('bea')];

    await using dashboard = await openDashboard(browser, assistant);
    const { page } = dashboard;
    await page.goto('/approvals');
    await expect.poll(() => page.locator('#live-status').textContent()).toBe('live');
    for (const id of [ada, anne]) await page.locator(`#${id}`).getByRole('checkbox').check();
    // Ada's request as this page showed it is not what it is now: the page's checkbox carries the digest it showed,
    // set here to another (as a page loaded before the request changed would carry).
    await page
      .locator(`#${ada}`)
      .getByRole('checkbox')
      .evaluate((box) => {
        (box as unknown as { value: string }).value = `sha256:${'0'.repeat(64)}`;
      });
    await page.getByRole('button', { name: 'Approve selected' }).click();
    const notice = page.locator('#approvals-bulk-notice');
    await expect.poll(() => notice.textContent(), { timeout: 20_000 }).toContain(`Approved 1 request (${anne}).`);
    expect(await notice.textContent()).toContain(`Refused 1:${ada}: approval ${ada} is not what was shown`);
    const notes = new FileNoteStore({ root: path.join(assistant.dataDir, 'notes') });
    expect((await readApproval(notes, anne))?.status).toBe('approved');
    expect((await readApproval(notes, ada))?.status).toBe('pending');
    await expect
      .poll(async () => (await notes.read('greeter/friendly/anne.md'))?.data.applied, { timeout: 20_000 })
      .toEqual(['send_card']);

    // The list refreshed (Anne's request is decided): reject the other two, as shown.
    await expect.poll(() => page.locator(`#${anne}`).count(), { timeout: 20_000 }).toBe(0);
    for (const id of [ada, bea]) await page.locator(`#${id}`).getByRole('checkbox').check();
    await page.getByRole('button', { name: 'Reject selected' }).click();
    await expect.poll(() => notice.textContent(), { timeout: 20_000 }).toContain('Rejected 2 requests');
    expect((await readApproval(notes, ada))?.status).toBe('rejected');
    expect((await readApproval(notes, bea))?.status).toBe('rejected');

    // The REST endpoint: needs the token, and refuses a decided request with why.
    const body = JSON.stringify({ decision: 'approve', approvals: [{ id: ada, digest: requests[0]?.digest ?? '' }] });
    const headers = { 'content-type': 'application/json' };
    expect((await fetch(`${assistant.url}/api/approvals/bulk`, { method: 'POST', headers, body })).status).toBe(401);
    const response = await assistant.api('/api/approvals/bulk', { method: 'POST', headers, body });
    expect(response.status).toBe(200);
    const answer = z
      .object({ decided: z.array(z.unknown()), refused: z.array(z.object({ id: z.string(), reason: z.string() })) })
      .parse(await response.json());
    expect(answer.decided).toEqual([]);
    expect(answer.refused[0]?.reason).toContain('rejected already');
    expect(dashboard.consoleErrors).toEqual([]);
  }, 120_000);
});
