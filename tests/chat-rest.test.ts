// 200 chat messages from 10 concurrent clients over real loopback HTTP, each sent with a client id and retried at
// random (requests abandoned mid-flight, answers resent): exactly 200 messages are stored, each once. And the real
// server process: the turns of messages stored before a crash enqueued at start, an event stream that does not hold
// its stop.
import path from 'node:path';
import { ChatEventLog, ChatInbox, ChatService } from '@assistant/chat';
import { loadConfig } from '@assistant/config';
import { FileNoteStore } from '@assistant/notes';
import { openFileTaskQueue } from '@assistant/queue';
import { createServer } from '@assistant/server';
import { describe, expect, it } from 'vitest';
import * as z from 'zod';
import { fetchWithToken, readApiToken } from './helpers/api-token.ts';
import { freePort } from './helpers/free-port.ts';
import { cliMain, startNode } from './helpers/node-process.ts';
import { tempDir } from './helpers/temp-dir.ts';
import { waitUntil } from './helpers/wait-until.ts';

const clients = 10;
const perClient = 20;
/** Below the inbox's 100 pending messages per conversation, so no message is refused for being one too many. */
const conversations = 4;

/** A small seeded generator (mulberry32), so a failing run can be replayed with its seed. */
function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let value = state;
    value = Math.imul(value ^ (value >>> 15), value | 1);
    value ^= value + Math.imul(value ^ (value >>> 7), value | 61);
    return ((value ^ (value >>> 14)) >>> 0) / 4294967296;
  };
}

const accepted = z.object({ id: z.string(), delivery: z.string(), duplicate: z.boolean() });

describe('POST /api/chats/:id/messages under concurrent clients that retry', () => {
  it('stores exactly 200 messages from 10 clients with client ids and random retries', async () => {
    const seed = Number(process.env.CHAT_REST_SEED ?? Date.now() % 1_000_000);
    await using dir = await tempDir();
    const configPath = await dir.write('config.yaml', 'data_dir: ./data\nserver:\n  port: 0\n');
    const { config } = await loadConfig({ configPath });
    const token = 'test-token-for-the-chat-rest-test-0123456';
    await using app = createServer({ config, token });
    const address = await app.listen({ host: '127.0.0.1', port: 0 });
    const headers = { 'content-type': 'application/json', authorization: `Bearer ${token}` };

    const ids: string[] = [];
    for (let index = 0; index < conversations; index += 1) {
      const response = await fetch(`${address}/api/chats`, {
        method: 'POST',
        headers,
        body: JSON.stringify({ title: `load ${index}` }),
      });
      expect(response.status).toBe(201);
      ids.push(z.object({ id: z.string() }).parse(await response.json()).id);
    }

    /** Every id the server answered for a client id: a retry must get the first one back. */
    const answers = new Map<string, Set<string>>();
    const statuses = new Map<string, number>();
    let abandoned = 0;
    const count = (key: string) => statuses.set(key, (statuses.get(key) ?? 0) + 1);

    const client = async (number: number) => {
      const next = random(seed + number);
      const conversation = ids[number % conversations] ?? '';
      for (let index = 0; index < perClient; index += 1) {
        const clientId = `client-${number}-${index}`;
        const body = JSON.stringify({ text: `message ${index} of client ${number}`, client_id: clientId });
        // Send until an answer arrives, abandoning some attempts mid-flight (the server may or may not have stored
        // the message), then sometimes resend once more after the answer, as a client that missed it would.
        let answered = false;
        let resends = next() < 0.3 ? 1 : 0;
        for (let attempt = 0; !answered || resends > 0; attempt += 1) {
          if (attempt > 50) throw new Error(`${clientId}: no answer after 50 attempts`);
          if (answered) resends -= 1;
          const abort = new AbortController();
          const abandon = !answered && next() < 0.25;
          const timer = abandon ? setTimeout(() => abort.abort(), Math.floor(next() * 8)) : undefined;
          try {
            const response = await fetch(`${address}/api/chats/${conversation}/messages`, {
              method: 'POST',
              headers,
              body,
              signal: abort.signal,
            });
            const parsed = accepted.parse(await response.json());
            count(`${response.status} ${parsed.duplicate ? 'duplicate' : 'new'}`);
            expect(response.status).toBe(202);
            answers.set(clientId, (answers.get(clientId) ?? new Set()).add(parsed.id));
            answered = true;
          } catch (error) {
            if (!abort.signal.aborted) throw error;
            abandoned += 1;
          } finally {
            clearTimeout(timer);
          }
        }
      }
    };
    await Promise.all(Array.from({ length: clients }, (_, number) => client(number)));

    const context = `seed ${seed}, ${abandoned} requests abandoned, answers ${JSON.stringify(Object.fromEntries(statuses))}`;
    expect(answers.size, context).toBe(clients * perClient);
    const split = [...answers].filter(([, seen]) => seen.size !== 1).map(([clientId]) => clientId);
    expect(split, `client ids answered with more than one message id (${context})`).toEqual([]);
    expect(statuses.get('202 new'), context).toBeLessThanOrEqual(clients * perClient);

    // On disk: exactly one stored message per client id, each the id its client was given, each with one event.
    const inbox = new ChatInbox({ directory: path.join(config.paths.dataDir, 'chat', 'inbox') });
    const events = new ChatEventLog({ directory: path.join(config.paths.dataDir, 'chat', 'events') });
    const stored: string[] = [];
    const eventIds: string[] = [];
    for (const conversation of ids) {
      stored.push(...(await inbox.messages(conversation)).map((message) => message.id));
      const { entries } = await events.read(conversation);
      eventIds.push(
        ...entries
          .filter((entry) => entry.event.type === 'message')
          .map((entry) => (entry.event.message as { id: string }).id),
      );
    }
    const given = [...answers.values()].map((seen) => [...seen][0]);
    expect(stored, context).toHaveLength(clients * perClient);
    expect(new Set(stored), context).toEqual(new Set(given));
    expect(eventIds.sort(), context).toEqual([...stored].sort());

    // And every stored message has its turn on the queue.
    const queue = await openFileTaskQueue({
      directory: config.paths.queue,
      dataDirectory: config.paths.dataDir,
      settings: config.queue,
    });
    try {
      const turned = new Set<string>();
      for (const entry of await queue.list({ type: 'chat.turn', limit: 10_000 })) {
        const record = entry.name ? await queue.get(entry.name.id) : undefined;
        turned.add(String((record?.task?.payload as { message?: string } | undefined)?.message));
      }
      expect(turned, context).toEqual(new Set(stored));
    } finally {
      await queue.close();
    }
  });
});

/**
 * Reads a stream until `until` holds for all text read (or, with `'end'`, until it ends), failing with `what` after
 * `timeoutMs` even while a read is blocked.
 */
async function readUntil(
  reader: ReadableStreamDefaultReader<Uint8Array>,
  until: ((text: string) => boolean) | 'end',
  what: string,
  timeoutMs = 10_000,
): Promise<string> {
  const decoder = new TextDecoder();
  let text = '';
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(
      () => reject(new Error(`waited ${timeoutMs} ms for ${what}; read ${JSON.stringify(text)}`)),
      timeoutMs,
    );
  });
  try {
    for (;;) {
      const chunk = await Promise.race([reader.read(), deadline]);
      if (chunk.done) {
        if (until === 'end') return text;
        throw new Error(`the stream ended before ${what}; read ${JSON.stringify(text)}`);
      }
      text += decoder.decode(chunk.value, { stream: true });
      if (until !== 'end' && until(text)) return text;
    }
  } finally {
    clearTimeout(timer);
  }
}

describe('assistant serve and chat', () => {
  it('enqueues the turn of a message stored before a crash, streams events, and stops with a stream open', async () => {
    await using dir = await tempDir();
    const port = await freePort();
    const configPath = await dir.write('config.yaml', `data_dir: ./data\nserver:\n  port: ${port}\n`);
    const { config } = await loadConfig({ configPath });
    const queue = await openFileTaskQueue({ directory: config.paths.queue, dataDirectory: config.paths.dataDir });
    try {
      // A message the inbox stored before the server died, its turn never enqueued.
      const chat = new ChatService({
        notes: new FileNoteStore({ root: config.paths.notes }),
        dataDir: config.paths.dataDir,
        controlRoot: config.paths.control,
        queue,
      });
      const { id: conversation } = await chat.create({ channel: 'api' });
      const stored = await chat.inbox.accept(conversation, { text: 'stored, then the server died' });
      expect(await queue.list({ type: 'chat.turn' })).toEqual([]);

      const server = startNode({ args: [cliMain, 'serve', '--config', configPath], cwd: dir.path });
      try {
        await server.waitForOutput(/listening on/);
        const turns = await waitUntil(
          async () => {
            const found = [];
            for (const entry of await queue.list({ type: 'chat.turn' })) {
              const record = entry.name ? await queue.get(entry.name.id) : undefined;
              if (record?.task) found.push(record.task.payload);
            }
            return found.length > 0 ? found : undefined;
          },
          { what: 'the server to enqueue the turn of the stored message' },
        );
        expect(turns).toEqual([{ conversation, message: stored.id }]);

        const api = fetchWithToken(await readApiToken(config.paths.dataDir));
        const stream = await api(`http://127.0.0.1:${port}/api/chats/${conversation}/events`);
        expect(stream.status).toBe(200);
        const reader = stream.body?.getReader();
        if (!reader) throw new Error('the event stream has no body');
        let received = '';
        const offset = await chat.events.append(conversation, { type: 'token', step: 1, text: 'Hello' });
        received += await readUntil(reader, (text) => text.includes('event: token'), 'the token event on the stream');
        expect(received).toContain(`event: token\nid: ${offset}\ndata: `);

        // SIGTERM with the stream open: the server ends it and exits, rather than wait for the client.
        server.child.kill('SIGTERM');
        const exit = await server.exited;
        expect({ code: exit.code, signal: exit.signal }).toEqual({ code: 0, signal: null });
        await readUntil(reader, 'end', 'the server to end the event stream');
      } finally {
        if (server.child.exitCode === null && server.child.signalCode === null) server.child.kill('SIGKILL');
        await server.exited;
      }
    } finally {
      await queue.close();
    }
  });
});
