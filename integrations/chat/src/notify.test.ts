import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { ChatEventLog, ConversationStore } from '@assistant/chat';
import { FileNoteStore } from '@assistant/notes';
import type { HandlerContext } from '@assistant/sdk';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { runChatNotify } from './notify.ts';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'chat-notify-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

function setup() {
  const notes = new FileNoteStore({ root: path.join(dir, 'notes') });
  const conversations = new ConversationStore({ notes });
  const events = new ChatEventLog({ directory: path.join(dir, 'events') });
  const lines: string[] = [];
  // Only what the handler uses; the worker's tests cover the real context.
  const context = (payload: unknown) =>
    ({
      payload,
      chat: { conversations, events },
      log: { human: async (message: string) => void lines.push(message), info() {}, warn() {} },
    }) as unknown as HandlerContext;
  return { conversations, events, lines, context };
}

describe('chat.notify', () => {
  it('posts into the notifications conversation (made on first use) once per message id', async () => {
    const { conversations, events, lines, context } = setup();
    const payload = {
      conversation: 'notifications',
      text: 'Mail from your accountant',
      message: 'h-abc',
      hook: 'accountant',
    };
    expect(await runChatNotify(context(payload))).toMatchObject({ appended: true });
    expect(await runChatNotify(context(payload))).toMatchObject({ appended: false });
    const conversation = await conversations.get('notifications');
    expect(conversation.messages.map((message) => [message.id, message.text])).toEqual([
      ['h-abc', 'Mail from your accountant'],
    ]);
    const { entries } = await events.read('notifications');
    expect(entries[0]?.event).toMatchObject({ type: 'message', notification: { kind: 'hook', hook: 'accountant' } });
    expect(lines).toEqual(['told the owner: Mail from your accountant']);
  });

  it("posts a workflow run's answer into the conversation that started it, once, marked with the run", async () => {
    const { conversations, events, lines, context } = setup();
    const chat = (await conversations.create({ title: 'Cats', peer: 'owner' })).id;
    const payload = {
      conversation: chat,
      text: 'Workflow `article` (pipeline), run run-20261128-abcd: done.',
      message: 'wf-run-20261128-abcd',
      run: 'run-20261128-abcd',
    };
    expect(await runChatNotify(context(payload))).toMatchObject({ appended: true });
    // The runner asked twice (it crashed after its enqueue and ran again): one message.
    expect(await runChatNotify(context(payload))).toMatchObject({ appended: false });
    expect((await conversations.get(chat)).messages.map((message) => message.id)).toEqual(['wf-run-20261128-abcd']);
    const { entries } = await events.read(chat);
    expect(entries[0]?.event).toMatchObject({ notification: { kind: 'workflow', run: 'run-20261128-abcd' } });
    expect(lines).toEqual(['told the owner: Workflow `article` (pipeline), run run-20261128-abcd: done.']);
  });

  it('refuses a conversation that does not exist, other than notifications', async () => {
    const { context } = setup();
    await expect(runChatNotify(context({ conversation: 'c-nowhere', text: 'x', message: 'h-1' }))).rejects.toThrow(
      /no conversation `c-nowhere`/,
    );
  });

  it("enqueues a hook's notification for the outbound endpoints that take hooks, before posting it, the same payload on a rerun", async () => {
    const { conversations, context } = setup();
    const enqueued: unknown[] = [];
    const withEndpoints = (payload: unknown) =>
      ({
        ...context(payload),
        task: { createdAt: '2026-11-29T01:00:00.000Z' },
        instance: {
          name: 'chat',
          settings: {
            webhooks: {
              outbound: [
                { name: 'phone', events: ['hook', 'failure'] },
                { name: 'ops', events: ['failure'] },
              ],
            },
          },
        },
        enqueue: async (options: unknown) => {
          // Enqueued before the message is in the transcript: the outbox never misses a posted notification.
          enqueued.push({
            options,
            posted: (await conversations.get('notifications').catch(() => undefined))?.messages.length ?? 0,
          });
          return { status: 'enqueued' };
        },
      }) as unknown as HandlerContext;
    const payload = {
      conversation: 'notifications',
      text: 'Invoice due',
      message: 'h-inv',
      hook: 'bills',
      event: 'e1',
    };
    await runChatNotify(withEndpoints(payload));
    await runChatNotify(withEndpoints(payload));
    const expected = {
      type: 'chat.webhook',
      priority: 2,
      payload: {
        endpoint: 'phone',
        id: 'h-inv',
        event: {
          type: 'notification.hook',
          timestamp: '2026-11-29T01:00:00.000Z',
          data: { id: 'h-inv', kind: 'hook', text: 'Invoice due', hook: 'bills', event: 'e1' },
        },
      },
    };
    expect(enqueued).toEqual([
      { options: expected, posted: 0 },
      { options: expected, posted: 1 },
    ]);
  });
});
