// The Chat pages in a real browser, against `assistant start` (server and worker) and a fake OpenAI-compatible model
// that streams its reply word by word: a conversation started from /chat, a message typed and sent, the reply
// arriving in pieces before its turn is done (without a reload), the transcript after a reload, a message holding
// markup rendered as text, and an approval request in the notifications conversation shown with approve/reject
// buttons that post to the Approvals page's action.
import path from 'node:path';
import { bindApproval } from '@assistant/actions';
import { FakeOpenAiServer } from '@assistant/llm/testing';
import { FileNoteStore } from '@assistant/notes';
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

const reply =
  'Good evening. Nothing urgent arrived today; the dentist invoice is due on Friday and the rest can wait until next week.';
const hostile = 'hello <script>alert(1)</script> "><img src=x onerror=alert(2)>';

describe('dashboard chat pages', () => {
  it('streams a reply into the page, keeps the transcript, renders markup as text, shows approvals inline', {
    timeout: 150_000,
  }, async () => {
    // Word by word, 250 ms apart: the reply takes seconds to write, so its pieces reach the page before it is done.
    await using model = await FakeOpenAiServer.start({ respond: () => ({ text: reply, chunkDelayMs: 250 }) });
    await using dir = await tempDir();
    await using assistant = await startAssistant({
      dir,
      extraConfig: `memory: {consolidate: []}\nllms:\n  default: {base_url: "${model.url}", model: fake-model}\n`,
    });
    await using dashboard = await openDashboard(browser, assistant);
    const { page } = dashboard;

    await page.goto('/chat');
    await expectAccessible(page, 'the chat list');
    await page.getByLabel('Title (optional)').fill('Evening <b>check</b>');
    await page.getByRole('button', { name: 'Start conversation' }).click();
    await page.waitForURL((url) => /^\/chat\/[a-z0-9-]+$/.test(url.pathname));
    const conversationUrl = new URL(page.url()).pathname;
    await expect.poll(() => page.getByRole('heading', { name: 'Evening <b>check</b>' }).count()).toBe(1);
    await expect.poll(() => page.locator('#live-status').textContent()).toBe('live');

    await page.getByRole('textbox', { name: 'Message' }).fill(hostile);
    // From the keyboard: Ctrl+Enter in the message box sends it.
    await page.getByRole('textbox', { name: 'Message' }).press('Control+Enter');
    // The owner's message appears without a reload, as text.
    await expect.poll(() => page.locator('#transcript li.message.user .chat-text').textContent()).toBe(hostile);
    expect(await page.locator('main img, main script').count()).toBe(0);
    // The form came back empty, ready for the next message.
    await expect.poll(() => page.getByRole('textbox', { name: 'Message' }).inputValue()).toBe('');

    // Pieces of the reply stream in while the turn runs: the live part shows a start of it, the transcript no reply.
    // The worker claims the turn first: on a loaded CI machine that alone has taken over 10 s.
    await expect
      .poll(() => page.locator('#chat-live .streaming .chat-text').textContent(), { interval: 50, timeout: 45_000 })
      .toMatch(/^Good evening\./);
    const partial = (await page.locator('#chat-live .streaming .chat-text').textContent()) ?? '';
    expect(partial.length).toBeLessThan(reply.length);
    expect(await page.locator('#transcript li.message.assistant').count()).toBe(0);
    await screenshot(page, 'chat-conversation', 'light', dir.path);

    // The turn done: the reply is in the transcript, the live part empty.
    await expect
      .poll(() => page.locator('#transcript li.message.assistant .chat-text').textContent(), { timeout: 30_000 })
      .toBe(reply);
    await expect.poll(() => page.locator('#chat-live .streaming').count()).toBe(0);
    await expectAccessible(page, 'a conversation');

    // On reload it is all there, read from the conversation's note.
    await page.reload();
    expect(await page.locator('#transcript li.message.user .chat-text').textContent()).toBe(hostile);
    expect(await page.locator('#transcript li.message.assistant .chat-text').textContent()).toBe(reply);
    const served = await (await assistant.api(conversationUrl)).text();
    expect(served).toContain(
      'hello &lt;script&gt;alert(1)&lt;/script&gt; &quot;&gt;&lt;img src=x onerror=alert(2)&gt;',
    );
    expect(served.length).toBeLessThan(100_000);

    // An approval request: the server's notifier tells it in the notifications conversation, with buttons inline.
    const notes = new FileNoteStore({ root: path.join(assistant.dataDir, 'notes') });
    const approvalId = 'ap-0123456789ab';
    // The item it is about: approving enqueues the action for it.
    await notes.create('email/personal/inbox/1.md', { data: { subject: 'Weekly digest' }, body: '' });
    await notes.create(`approvals/${approvalId}.md`, {
      // Bound to its rendering, as every request is made: one without a digest cannot be approved.
      data: bindApproval({
        id: approvalId,
        status: 'pending',
        created_at: new Date().toISOString(),
        expires_at: new Date(Date.now() + 86_400_000).toISOString(),
        instance: 'personal',
        domain: 'email',
        platform: 'inbox',
        rule: 'archive <b>newsletters</b>',
        provenance: 'rule',
        reason: 'newsletter: true',
        item: 'email/personal/inbox/1.md',
        title: 'Archive "<img src=x onerror=alert(3)>"',
        actions: [{ kind: 'platform', name: 'archive', key: 'archive', tier: 'soft', yolo: false }],
      }) as never,
      body: '',
    });
    await expect
      .poll(
        async () => {
          await page.goto('/chat/notifications');
          return page.locator(`.chat-approval[data-approval="${approvalId}"] form`).count();
        },
        { timeout: 20_000, interval: 500 },
      )
      .toBe(1);
    const form = page.locator(`.chat-approval[data-approval="${approvalId}"] form`);
    expect(await form.getAttribute('action')).toBe(`/approvals/${approvalId}`);
    expect(await form.getAttribute('method')).toBe('post');
    expect(await form.locator('input[name="_csrf"]').count()).toBe(1);
    expect(await form.locator('button[name="decision"][value="approve"]').count()).toBe(1);
    expect(await form.locator('button[name="decision"][value="reject"]').count()).toBe(1);
    expect(await page.locator('main img, main script').count()).toBe(0);
    expect(await page.getByRole('textbox', { name: 'Message' }).count()).toBe(0);
    await expectAccessible(page, 'the notifications conversation');
    // Approving inline decides it as the Approvals page does, and the browser comes back to the conversation.
    await form.getByRole('button', { name: `Approve ${approvalId}` }).click();
    await expect
      .poll(async () => (await notes.read(`approvals/${approvalId}.md`))?.data.status, { timeout: 10_000 })
      .toBe('approved');
    expect((await notes.read(`approvals/${approvalId}.md`))?.data.decided_by).toBe('dashboard');
    await expect.poll(() => new URL(page.url()).pathname).toBe('/chat/notifications');
    await expect
      .poll(() => page.locator(`.chat-approval[data-approval="${approvalId}"]`).textContent(), { timeout: 10_000 })
      .toContain('approved by dashboard');
    expect(await page.locator(`.chat-approval[data-approval="${approvalId}"] form`).count()).toBe(0);

    await page.goto('/chat');
    expect(await page.getByRole('link', { name: 'Evening <b>check</b>' }).count()).toBe(1);
    await screenshot(page, 'chat', 'light', dir.path);
    expect(dashboard.consoleErrors).toEqual([]);

    await using dark = await openDashboard(browser, assistant, { colorScheme: 'dark' });
    await dark.page.goto('/chat');
    await expectAccessible(dark.page, 'the chat list, dark');
    await screenshot(dark.page, 'chat', 'dark', dir.path);
    await dark.page.goto(conversationUrl);
    await expectAccessible(dark.page, 'a conversation, dark');
    await screenshot(dark.page, 'chat-conversation', 'dark', dir.path);
    expect(dark.consoleErrors).toEqual([]);
  });
});
