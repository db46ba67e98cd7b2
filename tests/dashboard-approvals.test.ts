// The Approvals page in a real browser against a real `assistant start` (server and worker): a rule that needs a
// person's approval asks, the page lists it with what, which item and why, Approve performs the action once, Reject
// drops it, a request made while the page is open appears live, and hostile text stays text.
import path from 'node:path';
import { createApprovalRequest, readApproval } from '@assistant/actions';
import { FileNoteStore } from '@assistant/notes';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  expectAccessible,
  launchBrowser,
  openDashboard,
  screenshot,
  sidewaysOverflow,
  startAssistant,
} from './helpers/browser.ts';
import { repoRoot, runCli } from './helpers/node-process.ts';
import { tempDir } from './helpers/temp-dir.ts';

const greeter = path.join(repoRoot, 'tests/fixtures/integrations/custom/greeter');
const evil = '<script>alert(1)</script>"><img src=x onerror=alert(2)>';
const extraConfig = `integration_dirs: [${JSON.stringify(greeter)}]
memory: {consolidate: []} # memory has its own tests (tests/memory-worker.test.ts)
llms:
  default: {base_url: "http://127.0.0.1:11434/v1", model: m}
integrations:
  - type: greeter
    name: friendly
    platforms:
      cards:
        names: [Ada, Anne]
        friends: []
        automations:
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

describe('dashboard approvals', () => {
  it('approves once, rejects, updates live, escapes hostile text, and is accessible in light and dark', async () => {
    await using dir = await tempDir();
    await using assistant = await startAssistant({ dir, extraConfig });
    // Ada's note says her name is a script: the greeter's check keeps a note that exists, and its title is the name.
    await dir.write(
      'data/notes/greeter/friendly/ada.md',
      `---\nname: ${JSON.stringify(evil)}\nis_friend: false\nclassifications: {close: 0.9}\n---\nAda.\n`,
    );
    expect((await runCli(['trigger', 'friendly', 'cards'], { cwd: dir.path })).code).toBe(0);
    const pending = async () => ((await (await assistant.api('/api/approvals')).json()) as Listed).approvals;
    await expect.poll(async () => (await pending()).length, { timeout: 20_000 }).toBe(2);
    const requests = await pending();
    const adaId = requests.find((request) => request.title === evil)?.id ?? '';
    const anneId = requests.find((request) => request.title === 'Anne')?.id ?? '';

    await using light = await openDashboard(browser, assistant, { colorScheme: 'light' });
    const { page } = light;
    const dialogs: string[] = [];
    page.on('dialog', (dialog) => {
      dialogs.push(dialog.message());
      void dialog.dismiss();
    });
    await page.goto('/approvals');
    await expect.poll(() => page.locator('#live-status').textContent()).toBe('live');
    const ada = page.locator(`#${adaId}`);
    const anne = page.locator(`#${anneId}`);
    // The hostile name is shown as the text it is, nowhere as markup.
    await expect.poll(() => ada.getByRole('heading').textContent()).toBe(`send_card for ${evil}`);
    expect(await page.locator('img[src="x"]').count()).toBe(0);
    expect(await anne.getByRole('link', { name: 'greeter/friendly/anne.md' }).getAttribute('href')).toBe(
      '/notes/greeter/friendly/anne.md',
    );
    expect(await anne.textContent()).toContain('“cards for close people”');
    expect(await anne.textContent()).toContain('close >= 0.8');
    expect(await anne.textContent()).toContain('close: 0.90');
    await expectAccessible(page, 'the approvals page');
    await screenshot(page, 'approvals', 'light', dir.path);

    // Approve Anne's: one click, the worker sends the card once.
    await anne.getByRole('button', { name: 'Approve send_card for Anne' }).click();
    await expect
      .poll(
        () =>
          page
            .getByRole('status')
            .filter({ hasText: `${anneId} approved by dashboard` })
            .count(),
        // Bounded, not the 5 s default: on a loaded machine the post and the list it swaps in can take longer.
        { timeout: 20_000 },
      )
      .toBe(1);
    expect(await page.locator(`#${anneId}`).count()).toBe(0);
    const notes = new FileNoteStore({ root: path.join(assistant.dataDir, 'notes') });
    await expect
      .poll(async () => (await notes.read('greeter/friendly/anne.md'))?.data.applied, { timeout: 20_000 })
      .toEqual(['send_card']);
    expect(await readApproval(notes, anneId)).toMatchObject({ status: 'approved', decided_by: 'dashboard' });
    // Deciding again (a second click from a stale page, a replayed post) is refused; a reload posts nothing.
    const csrf = await page.locator('input[name="_csrf"]').first().inputValue();
    const replay = await page.request.post(`/approvals/${anneId}/approve`, { form: { _csrf: csrf } });
    expect(replay.status()).toBe(409);
    await page.reload();
    const waiting = async () => {
      const count = async (state: string) =>
        ((await (await assistant.api(`/api/tasks?state=${state}`)).json()) as { tasks: unknown[] }).tasks.length;
      return (await count('pending')) + (await count('active'));
    };
    await expect.poll(waiting, { timeout: 20_000 }).toBe(0);
    expect((await notes.read('greeter/friendly/anne.md'))?.data.applied).toEqual(['send_card']);

    // Reject Ada's.
    await page
      .locator(`#${adaId}`)
      .getByRole('button', { name: /^Reject send_card for/ })
      .click();
    await expect
      .poll(() =>
        page
          .getByRole('status')
          .filter({ hasText: `${adaId} rejected by dashboard` })
          .count(),
      )
      .toBe(1);
    expect(await readApproval(notes, adaId)).toMatchObject({ status: 'rejected', decided_by: 'dashboard' });
    expect(await page.getByText('No pending approval requests.').count()).toBe(1);

    // A request made while the page is open appears without a reload.
    const made = await createApprovalRequest({
      notes,
      instance: 'friendly',
      domain: 'greeter',
      platform: 'cards',
      notePath: 'greeter/friendly/anne.md',
      title: 'Anne again',
      match: {
        rule: 'cards for close people',
        ruleIndex: 0,
        provenance: 'llm',
        approval: true,
        reason: 'close >= 0.8',
        actions: [{ kind: 'platform', name: 'hug', key: 'hug', tier: 'soft', yolo: false }],
      },
      expiresMs: 3_600_000,
      nowMs: Date.now(),
    });
    await expect.poll(() => page.locator(`#${made.id}`).count(), { timeout: 10_000 }).toBe(1);
    expect(light.consoleErrors).toEqual([]);
    expect(dialogs).toEqual([]);

    // The item's note page explains it: the rule matched on the value it saw, and what became of its action.
    await page.goto('/notes/greeter/friendly/anne.md');
    const why = page.locator('section.why');
    await expect.poll(() => why.getByRole('heading', { name: 'Why' }).count()).toBe(1);
    const explained = (await why.textContent()) ?? '';
    expect(explained).toContain('cards for close people');
    expect(explained).toContain('close >= 0.8');
    expect(explained).toContain('0.9');
    expect(explained).toContain('send_card');
    await expectAccessible(page, 'a note page with its Why section');
    await why.scrollIntoViewIfNeeded();
    await screenshot(page, 'note-why', 'light', dir.path);

    await using dark = await openDashboard(browser, assistant, { colorScheme: 'dark' });
    await dark.page.goto('/notes/greeter/friendly/anne.md');
    await expect.poll(() => dark.page.locator('section.why').count()).toBe(1);
    await dark.page.locator('section.why').scrollIntoViewIfNeeded();
    await screenshot(dark.page, 'note-why', 'dark', dir.path);
    await dark.page.goto('/approvals?status=all');
    await expect.poll(() => dark.page.locator('article.approval').count()).toBe(3);
    await expectAccessible(dark.page, 'the approvals page (all, dark)');
    await screenshot(dark.page, 'approvals', 'dark', dir.path);
    await using narrow = await openDashboard(browser, assistant, { narrow: true });
    await narrow.page.goto('/approvals?status=all');
    expect(await sidewaysOverflow(narrow.page)).toBeLessThanOrEqual(0);
    expect(dark.consoleErrors).toEqual([]);
    expect(narrow.consoleErrors).toEqual([]);
  });
});
