import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { ChatService } from '@assistant/chat';
import { FileNoteStore } from '@assistant/notes';
import { openFileTaskQueue, type TaskQueue } from '@assistant/queue';
import type { ListenerContext, Secret } from '@assistant/sdk';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { ChatSettings } from '../settings.generated.ts';
import { FakeMatrix } from '../testing/fake-matrix.ts';
import { MatrixApiError, MatrixClientApi, MatrixNetworkError } from './client-api.ts';
import { encryptedNotice, MatrixAdapter } from './matrix-adapter.ts';
import { runMatrix } from './matrix-listener.ts';

const owner = '@owner:fake.test';
const stranger = '@stranger:fake.test';
const waitMs = 15_000;

let root: string;
let queue: TaskQueue;
let fake: FakeMatrix;
let logs: string[];
const running: { controller: AbortController; done: Promise<void> }[] = [];

beforeEach(async () => {
  root = await mkdtemp(path.join(os.tmpdir(), 'assistant-matrix-'));
  queue = await openFileTaskQueue({ directory: path.join(root, 'data', 'queue') });
  fake = await FakeMatrix.start();
  logs = [];
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
  return { name: 'matrix', isSet: value !== '', reveal: () => value } as unknown as Secret;
}

function startListener(chat: ChatService, options: { noToken?: boolean } = {}): void {
  const controller = new AbortController();
  const settings = {
    mode: 'followup',
    collect_window: 1000,
    collect_max: 20,
    max_steps: 20,
    mcp_servers: [],
    persona: 'assistant',
    telegram: { allowed_users: [], api_root: 'https://api.telegram.org', poll_timeout: 30_000 },
    matrix: {
      homeserver: fake.homeserver,
      ...(options.noToken ? {} : { access_token: secret(fake.token) }),
      allowed_users: [owner],
      poll_timeout: 2_000,
    },
    discord: { allowed_users: [], api_root: 'https://discord.com/api' },
  } satisfies ChatSettings;
  const done = runMatrix({
    instance: { name: 'chat', domain: 'chat', settings },
    listener: 'matrix',
    logger,
    enqueue: async () => {
      throw new Error('not used');
    },
    signal: controller.signal,
    configDir: root,
    dataDir: path.join(root, 'data'),
    chat,
  });
  running.push({ controller, done });
}

async function until(check: () => boolean | Promise<boolean>, what: string): Promise<void> {
  await expect.poll(check, { timeout: waitMs, interval: 20, message: `timed out waiting for ${what}` }).toBe(true);
}

async function storedTexts(chat: ChatService): Promise<string[]> {
  const texts: string[] = [];
  for (const conversation of await chat.list()) {
    if (conversation.channel !== 'matrix') continue;
    texts.push(...(await chat.inbox.messages(conversation.id)).map((message) => message.text));
  }
  return texts;
}

describe('the Matrix listener', () => {
  it('joins an allowed user’s invite and answers there; a stranger’s invite is ignored, logged by user id only', async () => {
    const chat = chatService();
    startListener(chat);
    fake.invite({ from: stranger, room: '!theirs:fake.test' });
    fake.invite({ from: owner, room: '!work:fake.test' });
    await until(() => fake.joined.includes('!work:fake.test'), 'the owner’s room joined');
    fake.send({ from: owner, room: '!work:fake.test', text: 'in the work room' });
    await until(async () => (await storedTexts(chat)).includes('in the work room'), 'the message stored');
    await until(() => fake.typings >= 1, '“typing…” shown');
    const conversation = (await chat.list()).find((one) => one.channel === 'matrix');
    expect(conversation?.peer).toBe(owner);
    expect(fake.joined).toEqual(['!work:fake.test']);
    expect(logs.filter((line) => line.includes(stranger))).toEqual([
      `info ignored a Matrix invite from user ${stranger}: not in matrix.allowed_users`,
    ]);
  });

  it('logs and skips an invite whose join is refused, and goes on with the next events', async () => {
    const chat = chatService();
    startListener(chat);
    fake.refusedJoins.add('!gone:fake.test');
    fake.invite({ from: owner, room: '!gone:fake.test' });
    fake.invite({ from: owner, room: '!work:fake.test' });
    fake.send({ from: owner, room: '!work:fake.test', text: 'still here' });
    await until(async () => (await storedTexts(chat)).includes('still here'), 'the next message stored');
    expect(fake.joined).toEqual(['!work:fake.test']);
    expect(logs.filter((line) => line.includes('!gone:fake.test'))).toEqual([
      expect.stringMatching(/^warn could not join the Matrix room !gone:fake.test: .*403 M_FORBIDDEN/),
    ]);
  });

  it('refuses an encrypted room: one plain notice, a log line, nothing it says stored', async () => {
    const chat = chatService();
    startListener(chat);
    const room = fake.dmRoom(owner);
    fake.encrypt(room, owner);
    fake.send({ from: owner, text: 'a secret' });
    fake.send({ from: owner, text: 'another secret' });
    fake.send({ from: owner, room: '!plain:fake.test', text: 'in the clear' });
    await until(async () => (await storedTexts(chat)).includes('in the clear'), 'the plain room’s message stored');
    expect(fake.messagesIn(room).map((message) => [message.msgtype, message.texts])).toEqual([
      ['m.notice', [encryptedNotice]],
    ]);
    expect(await storedTexts(chat)).toEqual(['in the clear']);
    expect(logs.filter((line) => line.includes('encrypted') && line.includes(room))).toHaveLength(1);
  });

  it('refuses a room invited to with encryption on, after joining it, and a stranger there gets no notice', async () => {
    const chat = chatService();
    startListener(chat);
    fake.invite({ from: owner, room: '!secret:fake.test', encrypted: true });
    await until(() => fake.joined.includes('!secret:fake.test'), 'the room joined');
    fake.send({ from: stranger, room: '!secret:fake.test' });
    fake.send({ from: owner, room: '!plain:fake.test', text: 'done' });
    await until(async () => (await storedTexts(chat)).includes('done'), 'the plain message stored');
    expect(fake.messagesIn('!secret:fake.test')).toEqual([]);
    fake.send({ from: owner, room: '!secret:fake.test' });
    await until(() => fake.messagesIn('!secret:fake.test').length === 1, 'the notice');
    expect(fake.messagesIn('!secret:fake.test')[0]?.texts).toEqual([encryptedNotice]);
  });

  it('gives one message when a send’s answer is lost: the retry reuses the transaction id', async () => {
    const chat = chatService();
    startListener(chat);
    fake.loseSendAnswers = 1;
    fake.send({ from: owner, text: '/help' });
    await until(() => fake.loseSendAnswers === 0, 'the first answer lost');
    fake.send({ from: owner, text: 'after' });
    await until(async () => (await storedTexts(chat)).includes('after'), 'the next message stored');
    expect(fake.messagesIn(fake.dmRoom(owner)).map((message) => message.texts.at(-1))).toEqual([
      expect.stringContaining('/new'),
    ]);
  });

  it('reads every message that came while it was away, more than a homeserver’s default timeline of 10', async () => {
    const chat = chatService();
    const texts = Array.from({ length: 30 }, (_, index) => `message ${index}`);
    for (const text of texts) fake.send({ from: owner, text });
    startListener(chat);
    await until(async () => (await storedTexts(chat)).length === texts.length, 'all 30 stored');
    expect(await storedTexts(chat)).toEqual(texts);
    expect(logs.filter((line) => line.includes('more new events'))).toEqual([]);
  });

  it('waits out a homeserver that is down and goes on where it was', async () => {
    const chat = chatService();
    fake.down = true;
    startListener(chat);
    fake.send({ from: owner, text: 'while it was down' });
    await until(() => logs.some((line) => line.startsWith('warn ') && line.includes('502')), 'the outage logged');
    fake.down = false;
    await until(async () => (await storedTexts(chat)).includes('while it was down'), 'the message stored');
  });

  it('idles without an access token', async () => {
    startListener(chatService(), { noToken: true });
    await until(() => logs.some((line) => line.includes('the Matrix bot is off')), 'the idle line');
    expect(fake.unauthorized).toBe(0);
  });
});

describe('the Matrix sync position', () => {
  it('moves only when the last event of a batch is acknowledged: a restart mid-batch gets the batch again', async () => {
    const file = path.join(root, 'data', 'chat', 'matrix', 'chat.sync.json');
    const open = () =>
      MatrixAdapter.open({
        api: new MatrixClientApi({ homeserver: fake.homeserver, accessToken: fake.token }),
        pollTimeoutMs: 0,
        allowedUsers: [owner],
        logger,
        file,
      });
    const signal = new AbortController().signal;
    const first = fake.send({ from: owner, text: 'one' });
    const second = fake.send({ from: owner, text: 'two' });
    const adapter = await open();
    const batch = await adapter.receive({ cursor: 0, signal });
    expect(batch.map((delivery) => delivery.event.id)).toEqual([`mx-${first}`, `mx-${second}`]);
    await adapter.acknowledge(batch[0] as (typeof batch)[number]);

    const again = await (await open()).receive({ cursor: 0, signal });
    expect(again.map((delivery) => delivery.event.id)).toEqual([`mx-${first}`, `mx-${second}`]);
    const restarted = await open();
    const last = await restarted.receive({ cursor: 0, signal });
    for (const delivery of last) await restarted.acknowledge(delivery);
    expect(await (await open()).receive({ cursor: 0, signal })).toEqual([]);
  });
});

describe('MatrixAdapter.classify', () => {
  it('takes 401 and M_UNKNOWN_TOKEN as refused credentials, 5xx, 429 and the network as an outage, other 4xx as refused', async () => {
    const adapter = await MatrixAdapter.open({
      api: new MatrixClientApi({ homeserver: fake.homeserver, accessToken: fake.token }),
      pollTimeoutMs: 0,
      allowedUsers: [],
      logger,
      file: path.join(root, 'sync.json'),
    });
    const error = (status: number, errcode: string, retryAfterMs?: number) =>
      new MatrixApiError({ endpoint: 'send', status, errcode, error: 'x', ...(retryAfterMs ? { retryAfterMs } : {}) });
    expect(adapter.classify(error(401, 'M_UNKNOWN_TOKEN')).kind).toBe('bad_credentials');
    expect(adapter.classify(error(403, 'M_UNKNOWN_TOKEN')).kind).toBe('bad_credentials');
    expect(adapter.classify(error(429, 'M_LIMIT_EXCEEDED', 2500))).toEqual({ kind: 'transient', retryAfterMs: 2500 });
    expect(adapter.classify(error(502, 'M_UNKNOWN'))).toEqual({ kind: 'transient' });
    expect(adapter.classify(new MatrixNetworkError('sync', 'ECONNREFUSED'))).toEqual({ kind: 'transient' });
    expect(adapter.classify(error(413, 'M_TOO_LARGE'))).toEqual({ kind: 'refused' });
    expect(adapter.classify(error(403, 'M_FORBIDDEN'))).toEqual({ kind: 'refused' });
  });
});
