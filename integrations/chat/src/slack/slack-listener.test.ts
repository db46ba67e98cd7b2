import { mkdtemp, readdir, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { ChatService } from '@assistant/chat';
import { FileNoteStore } from '@assistant/notes';
import { openFileTaskQueue, type TaskQueue } from '@assistant/queue';
import type { ListenerContext, Secret } from '@assistant/sdk';
import { WebClient } from '@slack/web-api';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { ChatSettings } from '../settings.generated.ts';
import { chatSettingsDefaults } from '../testing/chat-settings.ts';
import { FakeSlack } from '../testing/fake-slack.ts';
import { classifySlackError } from './slack-adapter.ts';
import { receiveSlackEvents } from './slack-events-webhook.ts';
import { runSlack } from './slack-listener.ts';
import { spoolFolder } from './slack-spool.ts';

const owner = 'UOWNER1';
const stranger = 'USTRANGER';
const channel = 'CTEAM1';
const waitMs = 15_000;

let root: string;
let queue: TaskQueue;
let fake: FakeSlack;
let logs: string[];
const running: { controller: AbortController; done: Promise<void> }[] = [];

beforeEach(async () => {
  root = await mkdtemp(path.join(os.tmpdir(), 'assistant-slack-'));
  queue = await openFileTaskQueue({ directory: path.join(root, 'data', 'queue') });
  fake = await FakeSlack.start();
  logs = [];
});

afterEach(async () => {
  for (const listener of running.splice(0)) {
    listener.controller.abort();
    await listener.done;
  }
  for (const value of [fake.botToken, fake.appToken, fake.signingSecret]) {
    expect(logs.filter((line) => line.includes(value))).toEqual([]);
  }
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
  return { name: 'slack', isSet: value !== '', reveal: () => value } as unknown as Secret;
}

function settings(mode: 'socket' | 'events' = 'socket', options: { noAppToken?: boolean } = {}): ChatSettings {
  return {
    ...chatSettingsDefaults,
    slack: {
      mode,
      bot_token: secret(fake.botToken),
      ...(options.noAppToken ? {} : { app_token: secret(fake.appToken) }),
      signing_secret: secret(fake.signingSecret),
      allowed_users: [owner],
      channel_id: channel,
      api_url: fake.apiUrl,
    },
  } satisfies ChatSettings;
}

function startListener(chat: ChatService, slack = settings()): void {
  const controller = new AbortController();
  const done = runSlack({
    instance: { name: 'chat', domain: 'chat', settings: slack },
    listener: 'slack',
    logger,
    enqueue: async () => {
      throw new Error('not used');
    },
    signal: controller.signal,
    configDir: path.join(root, 'data'),
    dataDir: path.join(root, 'data'),
    chat,
  });
  running.push({ controller, done });
}

async function until<T>(check: () => T | Promise<T>, what: string): Promise<NonNullable<T>> {
  let value: T | undefined;
  await expect
    .poll(
      async () => {
        value = await check();
        return Boolean(value);
      },
      { timeout: waitMs, interval: 20, message: `timed out waiting for ${what}` },
    )
    .toBe(true);
  return value as NonNullable<T>;
}

/** The messages stored from a peer, in every conversation of theirs (one per place they write in). */
async function storedOf(chat: ChatService, peer: string): Promise<string[]> {
  const stored: string[] = [];
  for (const conversation of (await chat.list()).filter((one) => one.channel === 'slack' && one.peer === peer))
    stored.push(...(await chat.inbox.messages(conversation.id)).map((message) => message.text));
  return stored;
}

/** Answers a peer's conversation (the one holding a message `containing`, when given) as a turn would. */
async function answer(chat: ChatService, peer: string, text: string, containing?: string): Promise<void> {
  let conversation: { id: string } | undefined;
  for (const one of (await chat.list()).filter(
    (candidate) => candidate.channel === 'slack' && candidate.peer === peer,
  )) {
    const texts = (await chat.inbox.messages(one.id)).map((message) => message.text);
    if (containing === undefined || texts.some((stored) => stored.includes(containing))) conversation = one;
  }
  if (!conversation) throw new Error('no conversation');
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

describe('the Slack listener', () => {
  it('takes a post in the configured channel once, whether Slack sends it as message, app_mention or both', async () => {
    const chat = chatService();
    startListener(chat);
    await until(() => fake.connections === 1, 'the Socket Mode connection');
    const mention = fake.deliver({ from: owner, text: 'what is due?', channel, mention: true });
    // The same post's `message` event (another event_id, the same channel and ts), as an app subscribed to both
    // `app_mention` and `message.channels` gets it.
    const { ts } = fake.payloadOf(mention).event as { ts: string };
    fake.deliverEvent({
      type: 'message',
      channel_type: 'channel',
      channel,
      user: owner,
      text: `<@${fake.botUserId}> what is due?`,
      ts,
    });
    fake.deliver({ from: owner, text: 'and tomorrow?' });
    await until(async () => (await storedOf(chat, owner)).length === 2, 'two messages stored');
    expect((await storedOf(chat, owner)).sort()).toEqual(['and tomorrow?', 'what is due?']);
    // The channel's post and the direct message are two conversations (one per place, decision 0075): the
    // channel's reply goes to the channel.
    await answer(chat, owner, 'The *rent*.', 'what is due?');
    await until(() => fake.messagesIn(channel).length === 1, 'the reply in the channel');
    expect(fake.messagesIn(channel)[0]?.texts).toEqual(['The _rent_.']);
  });

  it('ignores edits, bots, its own messages and other channels; a stranger is logged by id only', async () => {
    const chat = chatService();
    startListener(chat);
    await until(() => fake.connections === 1, 'the Socket Mode connection');
    const dm = fake.dmChannel(owner);
    fake.deliverEvent({
      type: 'message',
      subtype: 'message_changed',
      channel: dm,
      channel_type: 'im',
      ts: '1.1',
      message: { text: 'edited' },
    });
    fake.deliverEvent({
      type: 'message',
      bot_id: 'BOTHER',
      user: 'UOTHERBOT',
      channel: dm,
      channel_type: 'im',
      text: 'beep',
      ts: '1.2',
    });
    fake.deliverEvent({
      type: 'message',
      user: fake.botUserId,
      channel: dm,
      channel_type: 'im',
      text: 'my own',
      ts: '1.3',
    });
    fake.deliver({ from: owner, text: 'elsewhere', channel: 'COTHER' });
    fake.deliver({ from: stranger, text: 'secret words' });
    fake.deliver({ from: owner, text: 'hello' });
    await until(async () => (await storedOf(chat, owner)).length === 1, 'the owner’s message stored');
    expect(await storedOf(chat, owner)).toEqual(['hello']);
    expect(logs.filter((line) => line.includes('COTHER') || line.includes('in a channel chat'))).toHaveLength(1);
    expect(logs.filter((line) => line.includes(stranger))).toHaveLength(1);
    expect(logs.join('\n')).not.toContain('secret words');
    expect(fake.sent).toEqual([]);
  });

  it('answers a message written in a thread in that thread', async () => {
    const chat = chatService();
    startListener(chat);
    await until(() => fake.connections === 1, 'the Socket Mode connection');
    fake.deliver({ from: owner, text: 'in a thread', threadTs: '1700000000.000042' });
    await until(async () => (await storedOf(chat, owner)).length === 1, 'stored');
    await answer(chat, owner, 'Here.');
    const reply = await until(() => fake.messagesIn(fake.dmChannel(owner))[0], 'the reply');
    expect(reply).toMatchObject({ thread_ts: '1700000000.000042', texts: ['Here.'] });
  });

  it('loses nothing delivered while it was away: Slack hands unacknowledged envelopes to the next connection', async () => {
    const chat = chatService();
    // No connection yet: Slack keeps the envelope until an app acknowledges it.
    const early = fake.deliver({ from: owner, text: 'while you were away' });
    expect(fake.acknowledged(early)).toBe(false);
    startListener(chat);
    await until(async () => (await storedOf(chat, owner)).length === 1, 'the early message stored');
    await until(() => fake.acknowledged(early), 'the envelope acknowledged after it was stored');
    // A retry after the acknowledgement (retry_attempt 2) is the same message.
    fake.redeliver(early);
    fake.deliver({ from: owner, text: 'now' });
    await until(async () => (await storedOf(chat, owner)).length === 2, 'the next message stored');
    expect(await storedOf(chat, owner)).toEqual(['while you were away', 'now']);
  });

  it('stops at once while a Socket Mode handshake hangs (no hello)', async () => {
    fake.withholdHello = true;
    const chat = chatService();
    startListener(chat);
    await until(() => fake.connections === 1, 'the connection opened');
    const listener = running.splice(0)[0];
    listener?.controller.abort();
    // Without the abort reaching the handshake this never settles (the test times out).
    await listener?.done;
    expect(await storedOf(chat, owner)).toEqual([]);
  });

  it('idles without the app token in socket mode, saying which setting is missing', async () => {
    const chat = chatService();
    startListener(chat, settings('socket', { noAppToken: true }));
    await until(() => logs.some((line) => line.includes('slack.app_token')), 'the idle line');
    expect(fake.connections).toBe(0);
    expect(fake.calls).toEqual([]);
  });
});

describe('the Slack events webhook', () => {
  function context(body: string, headers: Record<string, string>, mode: 'socket' | 'events' = 'events') {
    return {
      request: { method: 'POST', headers, query: {}, body: Buffer.from(body) },
      instance: { name: 'chat', domain: 'chat', settings: settings(mode) },
      webhook: 'slack_events',
      logger,
      enqueue: async () => {
        throw new Error('not used');
      },
      signal: new AbortController().signal,
      configDir: path.join(root, 'data'),
      dataDir: path.join(root, 'data'),
    } as Parameters<typeof receiveSlackEvents>[0];
  }

  it('spools a button press (a payload= form) and refuses what is not Slack’s, and is off in socket mode', async () => {
    const press = JSON.stringify({
      type: 'block_actions',
      user: { id: owner },
      channel: { id: 'DUOWNER1' },
      actions: [{ action_id: 'assistant-0', value: 'ap:a:ap-1:0123456789ab', action_ts: '1700000001.1' }],
    });
    const form = new URLSearchParams({ payload: press }).toString();
    const type = { 'content-type': 'application/x-www-form-urlencoded' };
    expect(await receiveSlackEvents(context(form, type))).toEqual({ status: 200 });
    expect(await receiveSlackEvents(context(form, { ...type, 'x-slack-retry-num': '1' }))).toEqual({ status: 200 });
    expect(await readdir(spoolFolder(path.join(root, 'data'), 'chat'))).toHaveLength(1);
    expect((await receiveSlackEvents(context('not json', { 'content-type': 'application/json' }))).status).toBe(400);
    expect((await receiveSlackEvents(context(form, type, 'socket'))).status).toBe(404);
  });
});

describe('classifying Slack failures (the real WebClient against the fake)', () => {
  function client(token = fake.botToken): WebClient {
    return new WebClient(token, {
      slackApiUrl: fake.apiUrl,
      retryConfig: { retries: 0 },
      rejectRateLimitedCalls: true,
    });
  }
  const failureOf = async (call: Promise<unknown>) =>
    classifySlackError(
      await call.then(
        () => new Error('no failure'),
        (error: unknown) => error,
      ),
    );

  it('bad tokens, rate limits with Retry-After, outages, refusals', async () => {
    const wrong = await failureOf(client('xoxb-wrong').auth.test());
    expect(wrong).toMatchObject({ kind: 'bad_credentials' });
    expect(JSON.stringify(wrong)).not.toContain('xoxb-wrong');
    fake.fail('chat.postMessage', { status: 429, retryAfter: 7 });
    expect(await failureOf(client().chat.postMessage({ channel: owner, text: 'x' }))).toEqual({
      kind: 'transient',
      retryAfterMs: 7000,
    });
    fake.fail('chat.postMessage', { error: 'channel_not_found' });
    expect(await failureOf(client().chat.postMessage({ channel: owner, text: 'x' }))).toEqual({ kind: 'refused' });
    fake.setDown(true);
    expect(await failureOf(client().chat.postMessage({ channel: owner, text: 'x' }))).toEqual({ kind: 'transient' });
    fake.setDown(false);
    await fake.close();
    expect(await failureOf(client().auth.test())).toEqual({ kind: 'transient' });
  });
});
