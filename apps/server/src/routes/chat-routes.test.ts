import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { ChatService } from '@assistant/chat';
import { type LoadedConfig, loadConfig } from '@assistant/config';
import { FileNoteStore } from '@assistant/notes';
import { openFileTaskQueue, type TaskQueue } from '@assistant/queue';
import { ControlFiles } from '@assistant/steering';
import type { InjectOptions } from 'fastify';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createServer } from '../create-server.ts';
import type { AssistantServer } from '../server-type.ts';

const token = 'test-token-for-the-chat-routes-0123456789ab';
const authorization = `Bearer ${token}`;

function inject(app: AssistantServer, options: InjectOptions) {
  return app.inject({ ...options, headers: { authorization, ...options.headers } });
}

let dir: string;
let config: LoadedConfig;
let queue: TaskQueue;
let chat: ChatService;

beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'assistant-chat-routes-'));
  await writeFile(path.join(dir, 'config.yaml'), 'data_dir: ./data\nserver:\n  port: 0\n');
  config = (await loadConfig({ configPath: path.join(dir, 'config.yaml') })).config;
  queue = await openFileTaskQueue({ directory: config.paths.queue, dataDirectory: config.paths.dataDir });
  chat = new ChatService({
    notes: new FileNoteStore({ root: config.paths.notes }),
    dataDir: config.paths.dataDir,
    controlRoot: config.paths.control,
    queue,
    maxPending: 3,
  });
});
afterEach(async () => {
  await queue.close();
  await rm(dir, { recursive: true, force: true });
});

async function server(options: { chat?: ChatService } = {}) {
  const app = createServer({ config, token, ...options });
  await app.ready();
  return app;
}

async function turnPayloads(): Promise<unknown[]> {
  const payloads = [];
  for (const entry of await queue.list({ type: 'chat.turn' })) {
    const record = entry.name ? await queue.get(entry.name.id) : undefined;
    if (record?.task) payloads.push({ ...(record.task.payload as object), priority: record.task.priority });
  }
  return payloads;
}

describe('/api/chats', () => {
  it('creates, lists, reads and posts to conversations of channel api, peer owner', async () => {
    await using app = await server();
    const first = await inject(app, { method: 'POST', url: '/api/chats', payload: { title: 'Invoices' } });
    expect(first.statusCode).toBe(201);
    expect(first.json()).toMatchObject({ id: expect.stringMatching(/^c/), title: 'Invoices', channel: 'api' });
    expect(first.json()).toMatchObject({ peer: 'owner', mode: 'followup', path: `chats/${first.json().id}.md` });
    // A body-less POST starts one too, in the mode asked for.
    const second = await inject(app, { method: 'POST', url: '/api/chats' });
    expect(second.statusCode).toBe(201);
    const third = await inject(app, { method: 'POST', url: '/api/chats', payload: { mode: 'collect' } });
    expect(third.json().mode).toBe('collect');

    const posted = await inject(app, {
      method: 'POST',
      url: `/api/chats/${first.json().id}/messages`,
      payload: { text: "what's urgent?", client_id: 'k-1' },
    });
    expect(posted.statusCode).toBe(202);
    expect(posted.json()).toEqual({ id: expect.stringMatching(/^m/), delivery: 'started', duplicate: false });
    const resent = await inject(app, {
      method: 'POST',
      url: `/api/chats/${first.json().id}/messages`,
      payload: { text: "what's urgent?", client_id: 'k-1' },
    });
    expect(resent.json()).toEqual({ id: posted.json().id, delivery: 'started', duplicate: true });
    expect(await turnPayloads()).toContainEqual({
      conversation: first.json().id,
      message: posted.json().id,
      priority: 1,
    });

    const read = await inject(app, { method: 'GET', url: `/api/chats/${first.json().id}` });
    expect(read.statusCode).toBe(200);
    expect(read.json()).toMatchObject({
      id: first.json().id,
      title: 'Invoices',
      mode: 'followup',
      channel: 'api',
      peer: 'owner',
      problems: [],
      messages: [{ id: posted.json().id, role: 'user', text: "what's urgent?", status: 'pending' }],
    });

    // The answer written to the transcript moves the conversation to the top of the list.
    const transcript = new ChatService({
      notes: new FileNoteStore({ root: config.paths.notes }),
      dataDir: config.paths.dataDir,
      controlRoot: config.paths.control,
      queue,
    });
    const newest = (await transcript.list())[0]?.updated ?? '';
    while (new Date().toISOString() <= newest) await new Promise((resolve) => setTimeout(resolve, 2));
    await transcript.conversations.appendMessage(first.json().id, {
      id: posted.json().id,
      role: 'user',
      text: "what's urgent?",
    });
    await transcript.conversations.appendMessage(first.json().id, {
      role: 'assistant',
      text: 'Nothing.',
      reply_to: [posted.json().id],
    });
    const listed = await inject(app, { method: 'GET', url: '/api/chats' });
    expect(listed.statusCode).toBe(200);
    expect(listed.json().broken).toEqual([]);
    expect(listed.json().chats.map((entry: { id: string }) => entry.id)[0]).toBe(first.json().id);
    expect(listed.json().chats).toHaveLength(3);
    const answered = (await inject(app, { method: 'GET', url: `/api/chats/${first.json().id}` })).json();
    expect(answered.messages).toEqual([
      expect.objectContaining({ id: posted.json().id, status: 'answered' }),
      expect.objectContaining({ role: 'assistant', text: 'Nothing.', reply_to: [posted.json().id] }),
    ]);
  });

  it('refuses bad input with the chat error codes, and says when a message was not stored', async () => {
    await using app = await server({ chat });
    const { id } = (await inject(app, { method: 'POST', url: '/api/chats', payload: {} })).json();
    const post = (payload: unknown, conversation = id) =>
      inject(app, { method: 'POST', url: `/api/chats/${conversation}/messages`, payload: payload as object });
    const refusals = [
      [await post({ text: 'hello' }, 'c-nothing-here'), 404, 'CHAT_NOT_FOUND'],
      [await inject(app, { method: 'GET', url: '/api/chats/c-nothing-here' }), 404, 'CHAT_NOT_FOUND'],
      [await inject(app, { method: 'GET', url: '/api/chats/NOT_AN_ID' }), 400, 'CHAT_INPUT_INVALID'],
      [await post({ text: 'hello' }, 'Nope'), 400, 'CHAT_INPUT_INVALID'],
      [await post({ text: '   ' }), 400, 'CHAT_INPUT_INVALID'],
      [await post({ text: 'hello', mode: 'shout' }), 400, 'CHAT_INPUT_INVALID'],
      [await post({ text: 'hello', client_id: '' }), 400, 'CHAT_INPUT_INVALID'],
      [await post({ message: 'hello' }), 400, 'CHAT_INPUT_INVALID'],
      [await post({ text: 'x'.repeat(40_000) }), 413, 'CHAT_MESSAGE_TOO_LARGE'],
      [await inject(app, { method: 'POST', url: '/api/chats', payload: { mode: 'loud' } }), 400, 'CHAT_INPUT_INVALID'],
      [await inject(app, { method: 'POST', url: '/api/chats', payload: { title: 'a\nb' } }), 400, 'CHAT_INPUT_INVALID'],
    ] as const;
    for (const [response, status, code] of refusals) {
      expect({ status: response.statusCode, code: response.json().error.code }).toEqual({ status, code });
    }
    expect((await chat.get(id)).messages).toEqual([]);

    for (const text of ['one', 'two', 'three']) expect((await post({ text })).statusCode).toBe(202);
    const full = await post({ text: 'four' });
    expect(full.statusCode).toBe(429);
    expect(full.json().error).toMatchObject({ code: 'CHAT_PENDING_FULL' });
    expect(full.json().error.message).toContain('this one was not stored');
    expect((await chat.get(id)).messages.map((message) => message.text)).toEqual(['one', 'two', 'three']);
  });

  it('stops the running turn of a conversation, and answers null when none runs', async () => {
    await using app = await server({ chat });
    const { id } = (await chat.create({ channel: 'api' })) as { id: string };
    const none = await inject(app, { method: 'POST', url: `/api/chats/${id}/stop` });
    expect({ status: none.statusCode, body: none.json() }).toEqual({ status: 200, body: { task: null } });
    const task = '0'.repeat(26);
    const message = await chat.post(id, { text: 'long job' });
    expect((await chat.turns.acquire(id, { task, batch: () => [message.id] })).status).toBe('acquired');
    const stopped = await inject(app, { method: 'POST', url: `/api/chats/${id}/stop` });
    expect(stopped.json()).toEqual({ task });
    const requests = await new ControlFiles({ root: config.paths.control, taskId: task }).pending();
    expect(requests.map((entry) => entry.request?.action)).toEqual(['stop']);
    const missing = await inject(app, { method: 'POST', url: '/api/chats/c-gone/stop' });
    expect(missing.json().error.code).toBe('CHAT_NOT_FOUND');
  });

  it('forks a conversation from a message into a new api conversation, leaving the original as it was', async () => {
    await using app = await server();
    const original = await chat.create({ title: 'Trip', channel: 'telegram', peer: '7', mode: 'collect' });
    await chat.conversations.appendMessage(original.id, { id: 'm1', role: 'user', text: 'Train or plane?' });
    await chat.conversations.appendMessage(original.id, {
      id: 'm2',
      role: 'assistant',
      text: 'The train.',
      reply_to: ['m1'],
    });
    await chat.conversations.appendMessage(original.id, { id: 'm3', role: 'user', text: 'Book it.' });
    const file = path.join(config.paths.notes, original.path);
    const before = await readFile(file);

    const forked = await inject(app, {
      method: 'POST',
      url: `/api/chats/${original.id}/fork`,
      payload: { message: 'm2' },
    });
    expect(forked.statusCode).toBe(201);
    const fork = forked.json();
    expect(fork).toMatchObject({
      id: expect.stringMatching(/^c/),
      title: 'Trip (fork)',
      channel: 'api',
      peer: 'owner',
      mode: 'collect',
      persona: 'assistant',
      forked_from: { conversation: original.id, message: 'm2' },
    });
    expect(await readFile(file)).toEqual(before);
    const read = (await inject(app, { method: 'GET', url: `/api/chats/${fork.id}` })).json();
    expect(read.messages.map((message: { id: string }) => message.id)).toEqual(['m1', 'm2']);
    expect(read.forked_from).toEqual({ conversation: original.id, message: 'm2' });
    // The fork itself runs nothing: the owner's next message there does.
    expect(await turnPayloads()).toEqual([]);

    const refused = async (url: string, payload: unknown) => {
      const response = await inject(app, { method: 'POST', url, payload: payload as never });
      return [response.statusCode, response.json().error.code];
    };
    expect(await refused('/api/chats/nope/fork', { message: 'm1' })).toEqual([404, 'CHAT_NOT_FOUND']);
    expect(await refused(`/api/chats/${original.id}/fork`, { message: 'm9' })).toEqual([404, 'CHAT_MESSAGE_NOT_FOUND']);
    expect(await refused(`/api/chats/${original.id}/fork`, { message: 'M 1' })).toEqual([400, 'CHAT_INPUT_INVALID']);
    expect(await refused(`/api/chats/${original.id}/fork`, {})).toEqual([400, 'CHAT_INPUT_INVALID']);
  });

  it('is in the OpenAPI document, behind the token', async () => {
    await using app = await server();
    const document = (await inject(app, { method: 'GET', url: '/docs/openapi.json' })).json();
    const operations = Object.entries(document.paths as Record<string, Record<string, unknown>>)
      .filter(([route]) => route.startsWith('/api/chats'))
      .flatMap(([route, methods]) => Object.keys(methods).map((method) => `${method.toUpperCase()} ${route}`));
    expect(operations.sort()).toEqual(
      [
        'GET /api/chats',
        'POST /api/chats',
        'GET /api/chats/{id}',
        'POST /api/chats/{id}/messages',
        'POST /api/chats/{id}/stop',
        'POST /api/chats/{id}/fork',
        'GET /api/chats/{id}/events',
      ].sort(),
    );
    expect(document.paths['/api/chats/{id}/messages'].post.responses).toHaveProperty('429');
    expect(document.paths['/api/chats/{id}/messages'].post.requestBody.required).toBe(true);
    expect(document.paths['/api/chats'].post.requestBody.required).toBe(false);
    const anonymous = await app.inject({ method: 'GET', url: '/api/chats' });
    expect(anonymous.statusCode).toBe(401);
  });
});

/** One server-sent event as the stream carried it. */
interface SseEvent {
  event: string;
  id: string;
  data: Record<string, unknown>;
}

/** Reads a `text/event-stream` response event by event; comments (heartbeats) are skipped. */
function sseReader(response: Response) {
  if (!response.body) throw new Error('the event stream has no body');
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  const queued: SseEvent[] = [];
  return {
    /** The next `count` events, or an error naming how many arrived when none came for `timeoutMs`. */
    async take(count: number, timeoutMs = 10_000): Promise<SseEvent[]> {
      const taken: SseEvent[] = [];
      while (taken.length < count) {
        const next = queued.shift();
        if (next) {
          taken.push(next);
          continue;
        }
        let timer: NodeJS.Timeout | undefined;
        const chunk = await Promise.race([
          reader.read(),
          new Promise<never>((_resolve, reject) => {
            timer = setTimeout(
              () => reject(new Error(`waited ${timeoutMs} ms for event ${taken.length + 1} of ${count}`)),
              timeoutMs,
            );
          }),
        ]).finally(() => clearTimeout(timer));
        if (chunk.done) throw new Error(`the stream ended after ${taken.length} of ${count} events`);
        buffer += decoder.decode(chunk.value, { stream: true });
        for (let end = buffer.indexOf('\n\n'); end !== -1; end = buffer.indexOf('\n\n')) {
          const frame = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          const fields = new Map<string, string>();
          for (const line of frame.split('\n')) {
            if (line.startsWith(':')) continue;
            const colon = line.indexOf(': ');
            if (colon > 0) fields.set(line.slice(0, colon), line.slice(colon + 2));
          }
          if (!fields.has('event')) continue;
          queued.push({
            event: fields.get('event') ?? '',
            id: fields.get('id') ?? '',
            data: JSON.parse(fields.get('data') ?? 'null'),
          });
        }
      }
      return taken;
    },
    /** Resolves once the server ends the stream (events still unread are dropped). */
    async ended(timeoutMs = 10_000): Promise<void> {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        let timer: NodeJS.Timeout | undefined;
        const chunk = await Promise.race([
          reader.read(),
          new Promise<never>((_resolve, reject) => {
            timer = setTimeout(
              () => reject(new Error(`waited ${timeoutMs} ms for the server to end the stream`)),
              Math.max(1, deadline - Date.now()),
            );
          }),
        ]).finally(() => clearTimeout(timer));
        if (chunk.done) return;
      }
    },
    cancel: () => reader.cancel(),
  };
}

describe('GET /api/chats/:id/events', () => {
  it('streams the log in order with offsets as ids, resumes after Last-Event-ID, and ends as the server closes', async () => {
    const app = await server({ chat });
    let closed = false;
    try {
      const address = await app.listen({ host: '127.0.0.1', port: 0 });
      const { id } = await chat.create({ channel: 'api' });
      await chat.events.append(id, { type: 'message', message: { id: 'm-old', role: 'user', text: 'before' } });
      const open = (headers: Record<string, string> = {}, query = '') =>
        fetch(`${address}/api/chats/${id}/events${query}`, { headers: { authorization, ...headers } });

      // From the end by default: what was written before the stream opened is not sent.
      const live = await open();
      expect(live.status).toBe(200);
      expect(live.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
      const liveEvents = sseReader(live);
      const written: number[] = [];
      written.push(await chat.events.append(id, { type: 'turn_started', turn: 't1', reply_to: ['m-old'] }));
      for (const text of ['Noth', 'ing ', 'urgent.']) {
        written.push(await chat.events.append(id, { type: 'token', step: 1, text }));
      }
      const firstFour = await liveEvents.take(4);
      expect(firstFour.map((event) => event.event)).toEqual(['turn_started', 'token', 'token', 'token']);
      expect(firstFour.map((event) => Number(event.id))).toEqual(written);
      expect(firstFour.map((event) => event.data.text ?? null)).toEqual([null, 'Noth', 'ing ', 'urgent.']);
      await liveEvents.cancel();

      // Written while no client listened: a reconnect with the last id gets exactly these, once.
      const lastSeen = firstFour[1]?.id ?? '';
      written.push(await chat.events.append(id, { type: 'step', tool: 'search_notes', status: 'finished' }));
      written.push(await chat.events.append(id, { type: 'turn_done', reply: 'm-r', reply_to: ['m-old'] }));
      const resumed = sseReader(await open({ 'last-event-id': lastSeen }, '?from=0'));
      const rest = await resumed.take(4);
      expect(rest.map((event) => event.event)).toEqual(['token', 'token', 'step', 'turn_done']);
      expect(rest.map((event) => Number(event.id))).toEqual(written.slice(2));

      // `?from=0` replays the whole log.
      const replay = sseReader(await open({}, '?from=0'));
      const all = await replay.take(7);
      expect(all.map((event) => event.event)).toEqual([
        'message',
        'turn_started',
        'token',
        'token',
        'token',
        'step',
        'turn_done',
      ]);
      await replay.cancel();

      const notAnOffset = await open({ 'last-event-id': 'abc' });
      expect({
        status: notAnOffset.status,
        code: ((await notAnOffset.json()) as { error: { code: string } }).error.code,
      }).toEqual({
        status: 400,
        code: 'CHAT_INPUT_INVALID',
      });
      const missing = await fetch(`${address}/api/chats/c-missing/events`, { headers: { authorization } });
      expect(missing.status).toBe(404);

      // An open stream does not hold the server's close: it ends, and the close completes.
      const closing = app.close().then(() => {
        closed = true;
      });
      await resumed.ended();
      await closing;
    } finally {
      if (!closed) await app.close();
    }
  });

  it('refuses a client its stream beyond server.event_streams_per_client with 429 and retry-after', async () => {
    await writeFile(
      path.join(dir, 'config.yaml'),
      'data_dir: ./data\nserver:\n  port: 0\n  event_streams_per_client: 3\n',
    );
    config = (await loadConfig({ configPath: path.join(dir, 'config.yaml') })).config;
    const app = await server({ chat });
    try {
      const address = await app.listen({ host: '127.0.0.1', port: 0 });
      const { id } = await chat.create({ channel: 'api' });
      const open = () => fetch(`${address}/api/chats/${id}/events`, { headers: { authorization } });
      // Chat streams and dashboard streams count together: two of one, one of the other.
      const held = [await open(), await open(), await fetch(`${address}/live`, { headers: { authorization } })];
      expect(held.map((response) => response.status)).toEqual([200, 200, 200]);

      const refused = await open();
      expect(refused.status).toBe(429);
      expect(refused.headers.get('retry-after')).toBe('10');
      const body = (await refused.json()) as { error: { code: string; message: string } };
      expect(body.error.code).toBe('EVENT_STREAMS_FULL');
      expect(body.error.message).toMatch(/already has 3 event streams open.*event_streams_per_client allows \(3\)/);
      const liveRefused = await fetch(`${address}/live`, { headers: { authorization } });
      expect(liveRefused.status).toBe(429);
      await liveRefused.body?.cancel();

      // A stream that ends gives its place back; events still reach the streams held.
      await held[0]?.body?.cancel();
      const again = await waitForStatus(open, 200);
      const events = sseReader(again);
      await chat.events.append(id, { type: 'token', step: 1, text: 'hi' });
      expect((await events.take(1)).map((event) => event.data.text)).toEqual(['hi']);
      await events.cancel();
      await held[1]?.body?.cancel();
      await held[2]?.body?.cancel();
    } finally {
      await app.close();
    }
  });
});

/** Opens until the answer has `status` (a freed stream is uncounted once the server saw the client go), bounded. */
async function waitForStatus(open: () => Promise<Response>, status: number): Promise<Response> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const response = await open();
    if (response.status === status) return response;
    await response.body?.cancel();
    if (Date.now() > deadline) throw new Error(`waited 10 s for an answer ${status}, last ${response.status}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
