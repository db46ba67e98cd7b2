// The Tasks pages in a real browser (Debian's Chromium through playwright-core) against a real `assistant start`:
// a task enqueued over REST appears in the list live; a failed task is retried from its page and runs again; a payload
// holding markup renders as text; an agent task (a fake OpenAI-compatible model) is paused, asked, resumed,
// interjected and stopped from its page, whose step list and state follow live.
import { type FakeChatRequest, FakeOpenAiServer, type FakeReply } from '@assistant/llm/testing';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as z from 'zod';
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
import { waitUntil } from './helpers/wait-until.ts';

let browser: Browser;
beforeAll(async () => {
  browser = await launchBrowser();
});
afterAll(async () => {
  await browser?.close();
});

const hostile = '"><img src=x onerror=alert(1)><script>alert(2)</script>';
const taskView = z.looseObject({
  id: z.string(),
  state: z.string(),
  attempts: z.number().optional(),
  history: z.array(z.unknown()).optional(),
  result: z.unknown().optional(),
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

async function apiTask(assistant: RunningAssistant, id: string) {
  return taskView.parse(await (await assistant.api(`/api/tasks/${id}`)).json());
}

/** The state badge of the task page's field table. */
const shownState = (page: Page) => page.locator('#task-summary table.kv .badge').first().textContent();

/** Agent model calls carry tools; the read-only `ask` call does not. */
const isAgentCall = (request: FakeChatRequest) => Array.isArray(request.body.tools);
const userTexts = (request: FakeChatRequest) =>
  (request.body.messages as { role: string; content: string | null }[])
    .filter((message) => message.role === 'user')
    .map((message) => message.content ?? '');

/** Keeps calling `wait` until told to finish; answers `ask` calls. */
function patientModel(request: FakeChatRequest): FakeReply {
  if (!isAgentCall(request)) return { text: `ASK-ANSWER: ${userTexts(request).at(-1)?.slice(0, 40) ?? ''}` };
  if (userTexts(request).some((text) => text.includes('finish now'))) return { text: 'done as asked' };
  return { toolCalls: [{ name: 'wait', arguments: { ms: 200 } }] };
}

/**
 * Fetches the task's summary again, as the live stream's `task-state` makes the page do (at every state change and
 * whenever the stream opens), and resolves once the new summary is in.
 */
async function refreshSummary(page: Page): Promise<void> {
  await page.evaluate(
    () =>
      new Promise<void>((resolve) => {
        const browser = globalThis as unknown as {
          document: {
            getElementById(id: string): { addEventListener(type: string, listener: () => void, options: object): void };
          };
          htmx: { trigger(element: unknown, name: string): void };
        };
        const summary = browser.document.getElementById('task-summary');
        summary.addEventListener('htmx:afterSettle', () => resolve(), { once: true });
        browser.htmx.trigger(summary, 'sse:task-state');
      }),
  );
}

describe('dashboard tasks', () => {
  it('shows a task enqueued over REST live, renders markup in a payload as text, and retries a failed task', async () => {
    await using dir = await tempDir();
    await using assistant = await startAssistant({ dir });
    await using dashboard = await openDashboard(browser, assistant);
    const { page } = dashboard;
    await page.goto('/tasks');
    await expect.poll(() => page.locator('#live-status').textContent()).toBe('live');
    await expectAccessible(page, 'the Tasks page');

    // system.sleep fails at once (and for good) on a payload that is not {ms: number}.
    const id = await enqueue(assistant, 'system.sleep', { ms: hostile });
    await expect
      .poll(() => page.locator(`#task-results th a[href="/tasks/${id}"]`).count(), { timeout: 15_000 })
      .toBe(1);
    await screenshot(page, 'tasks', 'light', dir.path);
    await page.emulateMedia({ colorScheme: 'dark' });
    await screenshot(page, 'tasks', 'dark', dir.path);
    await page.emulateMedia({ colorScheme: 'light' });

    // The filter form narrows the list (htmx swaps the results and pushes the URL).
    await page.getByLabel('Type').fill('system.echo');
    await page.getByRole('button', { name: 'Filter' }).click();
    await expect.poll(() => page.locator(`#task-results th a[href="/tasks/${id}"]`).count()).toBe(0);
    expect(new URL(page.url()).searchParams.get('type')).toBe('system.echo');
    await page.goto('/tasks?state=failed');
    await expect
      .poll(() => page.locator(`#task-results th a[href="/tasks/${id}"]`).count(), { timeout: 15_000 })
      .toBe(1);

    await page.locator(`#task-results th a[href="/tasks/${id}"]`).click();
    await page.waitForURL((url) => url.pathname === `/tasks/${id}`);
    expect(await shownState(page)).toBe('failed');
    expect(await page.locator('#payload-heading + pre').textContent()).toContain('<script>alert(2)</script>');
    expect(await page.locator('main img').count()).toBe(0);
    expect(await page.locator('main script').count()).toBe(0);
    expect(await page.locator('#error-heading').count()).toBe(1);
    await expectAccessible(page, 'a failed task');

    const before = await apiTask(assistant, id);
    await page.getByRole('button', { name: 'Retry this task' }).click();
    await page.waitForURL((url) => url.searchParams.get('notice') === 'retried');
    expect(await page.getByRole('status').filter({ hasText: 'Retried' }).count()).toBe(1);
    // It runs again (and fails again): one more attempt in its history, and the page, live while the task is pending,
    // shows it failed again without a reload.
    await waitUntil(
      async () => {
        const view = await apiTask(assistant, id);
        return view.state === 'failed' && (view.history?.length ?? 0) > (before.history?.length ?? 0);
      },
      { what: 'the retried task to fail again' },
    );
    await expect.poll(() => shownState(page), { timeout: 15_000 }).toBe('failed');
    expect(dashboard.consoleErrors).toEqual([]);

    // At 360 px wide neither page scrolls sideways (wide tables scroll inside their own box).
    await using narrow = await openDashboard(browser, assistant, { narrow: true });
    for (const url of ['/tasks', `/tasks/${id}`]) {
      await narrow.page.goto(url);
      expect(await sidewaysOverflow(narrow.page), `sideways scroll at 360 px on ${url}`).toBeLessThanOrEqual(0);
    }
    expect(narrow.consoleErrors).toEqual([]);
  }, 90_000);

  it('pauses, asks, resumes, interjects and stops an agent task from its page', async () => {
    // The answer to `ask` waits until the test lets it go, so that a summary refresh can come while it is asked.
    let answerAsk = () => {};
    const askAnswerable = new Promise<void>((resolve) => {
      answerAsk = resolve;
    });
    await using model = await FakeOpenAiServer.start({
      respond: async (request) => {
        if (!isAgentCall(request)) await askAnswerable;
        return patientModel(request);
      },
    });
    await using dir = await tempDir();
    await using assistant = await startAssistant({
      dir,
      extraConfig: `llms:
  default: {base_url: "${model.url}", model: fake-model}
queue:
  policies:
    overrides:
      system.agent: {max_attempts: 5, timeout: 5m}
`,
    });
    const agentCalls = () => model.requests.filter(isAgentCall).length;
    await using dashboard = await openDashboard(browser, assistant);
    const { page } = dashboard;
    const id = await enqueue(assistant, 'system.agent', { prompt: 'keep waiting until told', max_steps: 200 });
    await page.goto(`/tasks/${id}`);
    const steps = page.locator('#task-events [data-event="step-finished"]');
    await expect.poll(() => steps.count(), { timeout: 20_000 }).toBeGreaterThanOrEqual(2);
    await expect.poll(() => shownState(page)).toBe('active');
    await expectAccessible(page, 'a running agent task');
    // The screenshots show the steering and the first steps (the fields are above them).
    await page.locator('#steer-heading').evaluate((element) => element.scrollIntoView());
    await screenshot(page, 'task-running', 'light', dir.path);
    await page.emulateMedia({ colorScheme: 'dark' });
    await screenshot(page, 'task-running', 'dark', dir.path);
    await page.emulateMedia({ colorScheme: 'light' });

    // Pause: the worker applies it, and the loop reports it waits at its gate.
    await page.getByRole('button', { name: 'Pause' }).click();
    await page.waitForURL((url) => url.searchParams.get('notice') === 'pause-applied');
    await expect
      .poll(() => page.locator('#task-events [data-event="waiting-while-paused"]').count(), { timeout: 15_000 })
      .toBeGreaterThanOrEqual(1);
    const callsAtPause = agentCalls();
    const stepsAtPause = await steps.count();
    // A question is answered (a round trip through the worker, after the pause was applied); meanwhile the paused
    // loop made no model call and no step.
    // The live stream's summary refreshes (one comes as the stream opens after a load) keep what the owner typed,
    // and the answer of a question asked before one lands where it is seen, not in the replaced summary.
    await page.getByLabel(/^Question/).fill('what are you doing?');
    await page.getByLabel('Message to the agent').fill('a draft');
    await refreshSummary(page);
    expect(await page.getByLabel(/^Question/).inputValue()).toBe('what are you doing?');
    expect(await page.getByLabel('Message to the agent').inputValue()).toBe('a draft');
    await page.getByLabel('Message to the agent').fill('');
    await page.getByRole('button', { name: 'Ask' }).click();
    await waitUntil(() => model.requests.some((request) => !isAgentCall(request)), {
      what: 'the ask to reach the model',
    });
    await refreshSummary(page);
    answerAsk();
    await expect.poll(() => page.locator('#ask-answer').textContent(), { timeout: 30_000 }).toContain('ASK-ANSWER');
    await expect.poll(() => page.locator('#task-events [data-event="steering"]').count()).toBeGreaterThanOrEqual(2);
    expect(agentCalls()).toBe(callsAtPause);
    expect(await steps.count()).toBe(stepsAtPause);

    // Resume: new steps appear in the list, pushed live.
    await page.getByRole('button', { name: 'Resume' }).click();
    await page.waitForURL((url) => url.searchParams.get('notice') === 'resume-applied');
    const afterResume = await steps.count();
    await expect.poll(() => steps.count(), { timeout: 15_000 }).toBeGreaterThan(afterResume);
    expect(agentCalls()).toBeGreaterThan(callsAtPause);

    // Interject: the agent finishes as told, and the page shows it done without a reload.
    await page.getByLabel('Message to the agent').fill('finish now');
    await page.getByRole('button', { name: 'Interject' }).click();
    await page.waitForURL((url) => url.searchParams.get('notice') === 'interject-applied');
    await page.evaluate(() => {
      (globalThis as unknown as { notReloaded: boolean }).notReloaded = true;
    });
    await expect.poll(() => shownState(page), { timeout: 20_000 }).toBe('done');
    expect(await page.locator('#result-heading + pre').textContent()).toContain('done as asked');
    expect(await page.getByRole('button', { name: 'Pause' }).count()).toBe(0);
    expect(await page.evaluate(() => (globalThis as unknown as { notReloaded?: boolean }).notReloaded)).toBe(true);

    // Stop, with a reason, on a second agent task.
    const second = await enqueue(assistant, 'system.agent', { prompt: 'wait forever', max_steps: 200 });
    await page.goto(`/tasks/${second}`);
    await expect
      .poll(() => page.locator('#task-events [data-event="step-finished"]').count(), { timeout: 20_000 })
      .toBeGreaterThanOrEqual(1);
    await page.getByLabel('Reason to stop (optional)').fill('enough');
    await page.getByRole('button', { name: 'Stop' }).click();
    await page.waitForURL((url) => url.searchParams.get('notice') === 'stop-applied');
    await expect.poll(() => shownState(page), { timeout: 20_000 }).toBe('done');
    expect(await apiTask(assistant, second)).toMatchObject({ result: { status: 'stopped', reason: 'enough' } });
    expect(dashboard.consoleErrors).toEqual([]);
  }, 120_000);
});
