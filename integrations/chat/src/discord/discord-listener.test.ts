import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { ChatService } from '@assistant/chat';
import { FileNoteStore } from '@assistant/notes';
import { openFileTaskQueue, type TaskQueue } from '@assistant/queue';
import type { ListenerApprovals, ListenerCondition, ListenerContext, Secret } from '@assistant/sdk';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { discordSettings, FakeDiscord } from '../testing/fake-discord.ts';
import { discordIntents } from './discord-adapter.ts';
import { runDiscord } from './discord-listener.ts';

const owner = '300000000000000001';
const stranger = '300000000000000009';
const waitMs = 15_000;

let root: string;
let queue: TaskQueue;
let fake: FakeDiscord;
let logs: string[];
let conditions: ListenerCondition[];
const running: { controller: AbortController; done: Promise<void> }[] = [];

beforeEach(async () => {
  root = await mkdtemp(path.join(os.tmpdir(), 'assistant-discord-'));
  queue = await openFileTaskQueue({ directory: path.join(root, 'data', 'queue') });
  fake = await FakeDiscord.start({ heartbeatIntervalMs: 100 });
  logs = [];
  conditions = [];
});

afterEach(async () => {
  for (const listener of running.splice(0)) {
    listener.controller.abort();
    await listener.done;
  }
  expect(logs.filter((line) => line.includes(fake.token))).toEqual([]);
  await fake.close();
  await queue.close();
  await rm(root, { recursive: true, force: true });
});

const logger = {
  info: (message: string) => logs.push(`info ${message}`),
  warn: (message: string) => logs.push(`warn ${message}`),
  error: (message: string) => logs.push(`error ${message}`),
  debug: (message: string) => logs.push(`debug ${message}`),
} as unknown as ListenerContext['logger'];

function chatService(): ChatService {
  return new ChatService({
    notes: new FileNoteStore({ root: path.join(root, 'data', 'notes') }),
    dataDir: path.join(root, 'data'),
    controlRoot: path.join(root, 'data', 'control'),
    queue,
  });
}

function secret(value: string): Secret {
  return { name: 'discord', isSet: value !== '', reveal: () => value } as unknown as Secret;
}

function startListener(
  chat: ChatService,
  options: { approvals?: ListenerApprovals } = {},
): { stop: () => Promise<void> } {
  const controller = new AbortController();
  const done = runDiscord({
    instance: {
      name: 'chat',
      domain: 'chat',
      settings: discordSettings({
        token: secret(fake.token),
        allowed_users: [owner],
        channel_id: fake.guildChannel,
        api_root: fake.apiRoot,
      }),
    },
    listener: 'discord',
    logger,
    enqueue: async () => {
      throw new Error('not used');
    },
    signal: controller.signal,
    configDir: path.join(root, 'data'),
    dataDir: path.join(root, 'data'),
    chat,
    condition: (condition) => conditions.push(condition),
    ...(options.approvals ? { approvals: options.approvals } : {}),
  });
  const entry = { controller, done };
  running.push(entry);
  return {
    stop: async () => {
      controller.abort();
      await done;
      running.splice(running.indexOf(entry), 1);
    },
  };
}

async function until(check: () => boolean | Promise<boolean>, what: string): Promise<void> {
  await expect.poll(check, { timeout: waitMs, interval: 20, message: `timed out waiting for ${what}` }).toBe(true);
}

async function storedTexts(chat: ChatService): Promise<string[]> {
  const texts: string[] = [];
  for (const conversation of await chat.list()) {
    if (conversation.channel !== 'discord') continue;
    texts.push(...(await chat.inbox.messages(conversation.id)).map((message) => message.text));
  }
  return texts;
}

/** What the turn runner writes for a reply. */
async function answer(chat: ChatService, text: string): Promise<void> {
  const conversation = (await chat.list()).find((one) => one.channel === 'discord');
  if (!conversation) throw new Error('no Discord conversation');
  const ids = (await chat.inbox.pending(conversation.id)).map((message) => message.id);
  const reply = await chat.conversations.appendMessage(conversation.id, {
    role: 'assistant',
    text,
    reply_to: ids,
    status: 'complete',
  });
  await chat.inbox.markAnswered(conversation.id, { ids, replyId: reply.id });
  await chat.events.append(conversation.id, {
    type: 'message',
    message: { id: reply.id, role: 'assistant', text, reply_to: ids, status: 'complete', at: new Date().toISOString() },
  });
}

describe('the Discord listener', () => {
  it('identifies with the four intents and heartbeats; reads the configured guild channel and answers there', async () => {
    const chat = chatService();
    startListener(chat);
    fake.send({ from: owner, channel: fake.guildChannel, text: 'in the guild channel' });
    await until(async () => (await storedTexts(chat)).includes('in the guild channel'), 'the message stored');
    expect(fake.intents).toBe(discordIntents);
    // GUILDS, GUILD_MESSAGES, DIRECT_MESSAGES, MESSAGE_CONTENT.
    expect(discordIntents).toBe(1 + 512 + 4096 + 32768);
    await until(() => fake.heartbeats >= 2, 'heartbeats');
    await until(() => fake.typings >= 1, '“typing…” shown');
    await answer(chat, 'Answered **here**, @everyone.');
    await until(() => fake.messagesIn(fake.guildChannel).length === 1, 'the answer in the guild channel');
    const [sent] = fake.messagesIn(fake.guildChannel);
    expect(sent?.texts).toEqual(['Answered **here**, @everyone.']);
    // Nobody is pinged by what the model writes.
    expect(sent?.allowed_mentions).toEqual({ parse: [] });
    expect(fake.messagesIn(fake.dmChannel(owner))).toEqual([]);
  });

  it('ignores other guild channels, bots and the bot’s own messages; a stranger in the guild channel is logged by id only', async () => {
    const chat = chatService();
    startListener(chat);
    fake.send({ from: owner, channel: fake.otherGuildChannel, text: 'elsewhere' });
    fake.send({ from: '300000000000000077', bot: true, text: 'a bot in a DM' });
    fake.send({ from: stranger, channel: fake.guildChannel, text: 'my password is hunter2' });
    fake.send({ from: owner, text: 'in the DM' });
    // Dispatches are handled in order: once the last one is stored, the others were dealt with.
    await until(async () => (await storedTexts(chat)).includes('in the DM'), 'the DM stored');
    expect(await storedTexts(chat)).toEqual(['in the DM']);
    expect(logs.filter((line) => line.includes(stranger))).toEqual([
      `info ignored a Discord message from user ${stranger}: not in discord.allowed_users`,
    ]);
    expect(logs.join('\n')).not.toMatch(/hunter2|elsewhere|a bot in a DM/);
    await answer(chat, 'Noted.');
    await until(() => fake.messagesIn(fake.dmChannel(owner)).length === 1, 'the answer');
    // The bot's own message came back as MESSAGE_CREATE and was not taken for a message.
    expect(await storedTexts(chat)).toEqual(['in the DM']);
    expect(fake.messagesIn(fake.otherGuildChannel)).toEqual([]);
  });

  it('resumes a dropped gateway session: what was dispatched meanwhile is replayed and stored once', async () => {
    const chat = chatService();
    startListener(chat);
    fake.send({ from: owner, text: 'before the drop' });
    await until(async () => (await storedTexts(chat)).includes('before the drop'), 'the first message stored');
    fake.dropConnections();
    fake.send({ from: owner, text: 'while dropped' });
    await until(async () => (await storedTexts(chat)).includes('while dropped'), 'the replayed message stored');
    expect(fake.resumes).toBeGreaterThanOrEqual(1);
    expect(fake.identifies).toBe(1);
    expect(await storedTexts(chat)).toEqual(['before the drop', 'while dropped']);
  });

  it('catches up by REST after a restart: a message written while the bot was away is read, once', async () => {
    const chat = chatService();
    const first = startListener(chat);
    fake.send({ from: owner, text: 'hello' });
    await until(async () => (await storedTexts(chat)).includes('hello'), 'the first message stored');
    await until(async () => {
      const file = path.join(root, 'data', 'chat', 'discord', 'chat.gateway.json');
      const data = JSON.parse(await readFile(file, 'utf8').catch(() => '{}')) as { channels?: object };
      return Object.keys(data.channels ?? {}).length === 1;
    }, 'the DM’s position stored');
    await first.stop();
    // Discord dispatches nothing to a bot that is not connected: only REST has it.
    fake.sendUnseen({ from: owner, text: 'while you were away' });
    startListener(chat);
    await until(async () => (await storedTexts(chat)).includes('while you were away'), 'the missed message stored');
    fake.send({ from: owner, text: 'after' });
    await until(async () => (await storedTexts(chat)).includes('after'), 'the next message stored');
    expect(await storedTexts(chat)).toEqual(['hello', 'while you were away', 'after']);
    expect(logs).toContain('info read 1 Discord message(s) written while disconnected');
  });

  it('hands out what the catch-up finds before the live dispatches that came meanwhile', async () => {
    const chat = chatService();
    const first = startListener(chat);
    fake.send({ from: owner, text: 'hello' });
    await until(async () => (await storedTexts(chat)).includes('hello'), 'the first message stored');
    await until(async () => {
      const file = path.join(root, 'data', 'chat', 'discord', 'chat.gateway.json');
      const data = JSON.parse(await readFile(file, 'utf8').catch(() => '{}')) as { channels?: object };
      return Object.keys(data.channels ?? {}).length === 1;
    }, 'the DM’s position stored');
    await first.stop();
    fake.sendUnseen({ from: owner, text: 'written while away' });
    const release = fake.holdListings();
    startListener(chat);
    // The new session is ready and its catch-up under way: a message written now is dispatched live.
    await until(() => fake.listings >= 1, 'the catch-up asked');
    fake.send({ from: owner, text: 'written now' });
    release();
    await until(async () => (await storedTexts(chat)).includes('written now'), 'the live message stored');
    // In the order written: were the live one stored (and its position acknowledged) first, a crash before the
    // missed one was stored would skip it for good.
    expect(await storedTexts(chat)).toEqual(['hello', 'written while away', 'written now']);
  });

  it('reports a gateway that stays down as an outage, reconnects by itself, and reads by REST what came meanwhile', async () => {
    const chat = chatService();
    startListener(chat);
    fake.send({ from: owner, text: 'before the outage' });
    await until(async () => (await storedTexts(chat)).includes('before the outage'), 'the first message stored');
    await until(() => conditions.at(-1)?.state === 'ok', 'ok reported');
    fake.down = true;
    // Written during the outage: the session it was dispatched to is gone when the bot gets through again.
    fake.send({ from: owner, text: 'during the outage' });
    await until(() => conditions.at(-1)?.state === 'outage', 'the outage reported');
    expect(conditions.at(-1)?.detail).toMatch(/no connection to the gateway/);
    fake.down = false;
    await until(async () => (await storedTexts(chat)).includes('during the outage'), 'the missed message stored');
    await until(() => conditions.at(-1)?.state === 'ok', 'ok reported again');
    expect(fake.identifies).toBe(2);
    expect(await storedTexts(chat)).toEqual(['before the outage', 'during the outage']);
  });

  it('takes a gateway close 4004 for refused credentials, without the token, and keeps trying', async () => {
    fake.refuseIdentify = true;
    const chat = chatService();
    startListener(chat);
    await until(() => conditions.length >= 1, 'the condition reported');
    expect(conditions.map((one) => one.state)).toEqual(['credentials_refused']);
    expect(conditions[0]?.detail).toMatch(/^Discord refused the bot token \(gateway 4004\): check discord\.token/);
    expect(logs.filter((line) => line.startsWith('error '))).toHaveLength(1);
  });

  it('sends approvals with green and red buttons and answers a press ephemerally, a stranger’s too (deciding nothing)', async () => {
    let pending = [
      {
        id: 'ap-00000000000a',
        title: 'Invoice',
        actions: 'send_reply',
        rule: 'invoices',
        reason: 'an invoice',
        expiresAt: '2026-12-01T00:00:00.000Z',
        rendering: 'send_reply to dentist@example.com: paid.',
        bound: true,
      },
    ];
    const decided: string[] = [];
    const approvals: ListenerApprovals = {
      pending: async () => pending,
      decide: async (id, decision, by) => {
        decided.push(`${decision} ${id} by ${by}`);
        pending = [];
        return { status: 'approved', kind: 'action', tasks: ['t1'], actions: 'send_reply', title: 'Invoice' };
      },
    };
    const chat = chatService();
    startListener(chat, { approvals });
    const withButtons = () => fake.messagesIn(fake.dmChannel(owner)).find((message) => message.buttons.length > 0);
    await until(() => withButtons() !== undefined, 'the request with its buttons');
    const message = withButtons();
    if (!message) throw new Error('unreachable');
    expect(message.buttons.map((button) => [button.label, button.style])).toEqual([
      ['✅ Approve', 3],
      ['❌ Reject', 4],
    ]);
    for (const button of message.buttons) expect(button.custom_id.length).toBeLessThanOrEqual(100);
    // A stranger's press decides nothing, and is answered so that only they see it (Discord would otherwise tell
    // them the interaction failed).
    fake.press({ from: stranger, message, button: '✅ Approve' });
    await until(() => fake.callbacks.length === 1, 'the stranger’s press answered');
    expect(fake.callbacks[0]).toMatchObject({ type: 4, content: expect.stringMatching(/^Only the people/), flags: 64 });
    fake.press({ from: owner, message, button: '✅ Approve' });
    await until(() => decided.length === 1, 'decided');
    expect(decided).toEqual([`approve ap-00000000000a by discord:${owner}`]);
    await until(() => fake.callbacks.length === 2, 'the press answered');
    expect(fake.callbacks[1]).toMatchObject({ type: 4, content: 'Approving…', flags: 64 });
  });
});
