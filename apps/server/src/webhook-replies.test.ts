import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { ChatService } from '@assistant/chat';
import { FileNoteStore } from '@assistant/notes';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { WebhookReplies } from './webhook-replies.ts';

let root: string;
let chat: ChatService;
beforeEach(async () => {
  root = await mkdtemp(path.join(os.tmpdir(), 'assistant-webhook-replies-'));
  chat = new ChatService({
    notes: new FileNoteStore({ root: path.join(root, 'notes') }),
    dataDir: root,
    controlRoot: path.join(root, 'control'),
    queue: { enqueue: async () => ({ status: 'enqueued', task: {} as never, location: 'pending/x.yaml' }) },
  });
});
afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

const reply = (id: string, text: string) => ({
  type: 'message' as const,
  message: { id, role: 'assistant', text, at: '2026-11-29T01:00:00.000Z', status: 'complete' },
});

describe('WebhookReplies', () => {
  it('hands each reply of a webhook conversation to the outbox once, across restarts, and nothing of other conversations', async () => {
    const handed: { id: string; kind: string; text: string; details: Record<string, string> }[] = [];
    const make = () =>
      new WebhookReplies({
        chat,
        outbox: async (notification) => {
          handed.push({
            id: notification.id,
            kind: notification.kind,
            text: notification.text,
            details: { ...notification.details },
          });
          return { enqueued: 1 };
        },
        stateFile: path.join(root, 'chat', 'webhook-replies.json'),
        logger: { warn: () => {} },
      });
    // The first look ever notes where each log ends: a reply from before replies were configured is not sent.
    const older = await chat.create({ channel: 'webhook', peer: 'old', title: 'Webhook: old' });
    await chat.events.append(older.id, reply('m-old', 'from last month'));
    expect(await make().scan()).toEqual({ handed: 0 });
    // A conversation seen later is read from its start.
    const hook = await chat.create({ channel: 'webhook', peer: 'ci', title: 'Webhook: ci' });
    const mine = await chat.create({ peer: 'owner', title: 'Mine' });
    await chat.events.append(hook.id, {
      type: 'message',
      message: { id: 'm-user', role: 'user', text: 'hi', at: '2026-11-29T01:00:00.000Z', status: 'pending' },
    });
    await chat.events.append(hook.id, reply('m-1', 'first answer'));
    // A crash-recovered writer repeats an event: readers drop the repeated id.
    await chat.events.append(hook.id, reply('m-1', 'first answer'));
    await chat.events.append(mine.id, reply('m-mine', 'for the owner only'));
    expect(await make().scan()).toEqual({ handed: 1 });
    expect(await make().scan()).toEqual({ handed: 0 });
    await chat.events.append(hook.id, reply('m-2', 'second answer'));
    await chat.events.append(older.id, reply('m-old-2', 'new in the old one'));
    expect(await make().scan()).toEqual({ handed: 2 });
    expect(handed.map((entry) => `${entry.id} ${entry.details.peer}`).sort()).toEqual([
      'm-1 ci',
      'm-2 ci',
      'm-old-2 old',
    ]);
    expect(handed.find((entry) => entry.id === 'm-1')).toEqual({
      id: 'm-1',
      kind: 'reply',
      text: 'first answer',
      details: { conversation: hook.id, peer: 'ci' },
    });
  });

  it('keeps its place when the outbox throws, and refuses a damaged state file rather than sending everything again', async () => {
    const stateFile = path.join(root, 'chat', 'webhook-replies.json');
    let calls = 0;
    const replies = new WebhookReplies({
      chat,
      outbox: async () => {
        calls += 1;
        if (calls === 1) throw new Error('rate limited');
        return { enqueued: 1 };
      },
      stateFile,
      logger: { warn: () => {} },
    });
    expect(await replies.scan()).toEqual({ handed: 0 });
    const hook = await chat.create({ channel: 'webhook', peer: 'ci', title: 'Webhook: ci' });
    await chat.events.append(hook.id, reply('m-1', 'answer'));
    await expect(replies.scan()).rejects.toThrow('rate limited');
    expect(await replies.scan()).toEqual({ handed: 1 });
    expect(calls).toBe(2);
    await writeFile(stateFile, '{"offsets": {"x": -1}}');
    await expect(replies.scan()).rejects.toThrow('webhook-replies.json');
  });

  it('hands a reply over as soon as it is written, not at the next poll, for a conversation new or known', async () => {
    const handed: string[] = [];
    const known = await chat.create({ channel: 'webhook', peer: 'ci', title: 'Webhook: ci' });
    const mine = await chat.create({ peer: 'owner', title: 'Mine' });
    const replies = new WebhookReplies({
      chat,
      outbox: async (notification) => {
        handed.push(`${notification.details.peer} ${notification.id}`);
        return { enqueued: 1 };
      },
      stateFile: path.join(root, 'chat', 'webhook-replies.json'),
      logger: { warn: () => {} },
      // An hour: only the first look is the poll's, every later one is the watch's.
      pollMs: 3_600_000,
    });
    replies.start();
    try {
      await expect
        .poll(() => readFile(path.join(root, 'chat', 'webhook-replies.json'), 'utf8').catch(() => undefined), {
          timeout: 15_000,
          interval: 20,
        })
        .toBeDefined();
      await chat.events.append(mine.id, reply('m-mine', 'not a webhook reply'));
      await chat.events.append(known.id, reply('m-known', 'to ci'));
      await expect.poll(() => handed, { timeout: 15_000, interval: 20 }).toEqual(['ci m-known']);
      const later = await chat.create({ channel: 'webhook', peer: 'door', title: 'Webhook: door' });
      await chat.events.append(later.id, reply('m-later', 'to the door'));
      await expect.poll(() => handed, { timeout: 15_000, interval: 20 }).toEqual(['ci m-known', 'door m-later']);
    } finally {
      await replies.close();
    }
  });
});
