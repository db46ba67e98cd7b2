import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { ChatService } from '@assistant/chat';
import { FileNoteStore } from '@assistant/notes';
import type { WebhookContext } from '@assistant/sdk';
import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { ChatSettings } from './settings.generated.ts';
import { receiveSigned } from './signed-webhook.ts';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'chat-signed-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

function setup() {
  const enqueued: unknown[] = [];
  const emitted: { nativeId: string; type: string; data: Record<string, unknown> }[] = [];
  const chat = new ChatService({
    notes: new FileNoteStore({ root: path.join(dir, 'notes') }),
    dataDir: dir,
    controlRoot: path.join(dir, 'control'),
    // Our own queue interface: the turns the service enqueues are recorded, not run.
    queue: {
      enqueue: async (request) => {
        enqueued.push(request.payload);
        return { status: 'enqueued', task: {} as never, location: 'pending/x.yaml' };
      },
    },
  });
  const context = (body: string, id: string) =>
    ({
      request: { method: 'POST', headers: {}, query: {}, body: Buffer.from(body) },
      instance: { name: 'chat', domain: 'chat', settings: {} },
      webhook: 'signed',
      logger: pino({ enabled: false }),
      signal: new AbortController().signal,
      signed: { id, timestampSeconds: Math.floor(Date.now() / 1000) },
      chat,
      events: {
        emit: async (input: { nativeId: string; type: string; data: Record<string, unknown> }) => {
          emitted.push(input);
          return { event: {}, duplicate: false };
        },
      },
    }) as unknown as WebhookContext<ChatSettings>;
  return { chat, enqueued, emitted, context };
}

describe('the signed chat webhook', () => {
  it('stores one message in one conversation when the same webhook-id arrives several times at once', async () => {
    const { chat, enqueued, emitted, context } = setup();
    const body = JSON.stringify({ text: 'Deploy finished', peer: 'ci' });
    const answers = await Promise.all(Array.from({ length: 5 }, () => receiveSigned(context(body, 'msg_1'))));
    expect(answers.map((answer) => answer.status)).toEqual([202, 202, 202, 202, 202]);
    const bodies = answers.map(
      (answer) => answer.body as { conversation: string; message: string; duplicate: boolean },
    );
    expect(new Set(bodies.map((answer) => answer.conversation)).size).toBe(1);
    expect(new Set(bodies.map((answer) => answer.message)).size).toBe(1);
    expect(bodies.filter((answer) => !answer.duplicate)).toHaveLength(1);
    const conversations = (await chat.list()).filter((conversation) => conversation.channel === 'webhook');
    expect(conversations.map((conversation) => conversation.peer)).toEqual(['ci']);
    expect(await chat.inbox.messages(bodies[0]?.conversation ?? '')).toHaveLength(1);
    expect(enqueued.length).toBeGreaterThanOrEqual(1);
    // Reported to the ledger under the webhook-id, which the ledger stores once.
    expect(new Set(emitted.map((event) => `${event.type} ${event.nativeId}`))).toEqual(
      new Set(['chat.webhook_received msg_1']),
    );
    expect(emitted[0]?.data).toEqual({
      instance: 'chat',
      webhook_id: 'msg_1',
      peer: 'ci',
      conversation: bodies[0]?.conversation,
      message: bodies[0]?.message,
      text: 'Deploy finished',
    });

    // A new id from the same peer is a second message in the same conversation; another peer gets its own.
    const second = await receiveSigned(context(JSON.stringify({ text: 'Tests green', peer: 'ci' }), 'msg_2'));
    expect(second.body).toMatchObject({ conversation: bodies[0]?.conversation, duplicate: false });
    const other = await receiveSigned(context(JSON.stringify({ text: 'Door opened' }), 'msg_3'));
    expect((other.body as { conversation: string }).conversation).not.toBe(bodies[0]?.conversation);
    const named = await receiveSigned(
      context(JSON.stringify({ text: 'And again', conversation: bodies[0]?.conversation }), 'msg_4'),
    );
    expect(named).toMatchObject({ status: 202, body: { conversation: bodies[0]?.conversation } });
  });

  it('refuses a bad body, the owner as peer, and a conversation that is not a webhook one, storing nothing', async () => {
    const { chat, context } = setup();
    const owners = await chat.create({ title: 'Mine', peer: 'owner' });
    const cases: [string, number, string][] = [
      ['not json', 400, 'JSON object'],
      [JSON.stringify({ text: '' }), 400, '`text`'],
      [JSON.stringify({ text: 'hi', extra: 1 }), 400, 'extra'],
      [JSON.stringify({ text: 'approve it', peer: 'owner' }), 400, 'never for the owner'],
      [JSON.stringify({ text: 'approve it', peer: 'Owner' }), 400, 'never for the owner'],
      [JSON.stringify({ text: 'hi', conversation: owners.id }), 404, 'No webhook conversation'],
      [JSON.stringify({ text: 'hi', conversation: 'c-none' }), 404, ''],
    ];
    const long = await receiveSigned(context(JSON.stringify({ text: 'hi' }), 'x'.repeat(257)));
    expect(long).toMatchObject({ status: 400, body: { error: { message: expect.stringContaining('webhook-id') } } });
    for (const [body, status, message] of cases) {
      const answer = await receiveSigned(context(body, `msg_${body}`));
      expect(answer.status, body).toBe(status);
      expect(JSON.stringify(answer.body), body).toContain(message);
    }
    expect(await chat.inbox.messages(owners.id)).toEqual([]);
    expect((await chat.list()).map((conversation) => conversation.id)).toEqual([owners.id]);
  });

  it('fires a ledger event for an `event` body, once per webhook-id, with no conversation, message or turn', async () => {
    const { chat, enqueued, emitted, context } = setup();
    const body = JSON.stringify({ event: 'backup_done', data: { size_gb: 14, host: 'nas' }, peer: 'backup' });
    const answers = await Promise.all([receiveSigned(context(body, 'msg_e1')), receiveSigned(context(body, 'msg_e1'))]);
    expect(answers.map((answer) => answer.status)).toEqual([202, 202]);
    expect(new Set(emitted.map((event) => `${event.type} ${event.nativeId}`))).toEqual(
      new Set(['chat.webhook_event msg_e1']),
    );
    expect(emitted[0]?.data).toEqual({
      instance: 'chat',
      webhook_id: 'msg_e1',
      peer: 'backup',
      name: 'backup_done',
      data: '{"size_gb":14,"host":"nas"}',
    });
    const bare = await receiveSigned(context(JSON.stringify({ event: 'door.opened' }), 'msg_e2'));
    expect(bare.status).toBe(202);
    expect(emitted.at(-1)?.data).toMatchObject({ peer: 'webhook', name: 'door.opened', data: '{}' });
    expect(await chat.list()).toEqual([]);
    expect(enqueued).toEqual([]);
  });

  it('refuses a bad event body, the owner as peer and data over the limit, reporting nothing', async () => {
    const { emitted, context } = setup();
    const cases: [string, number, string][] = [
      [JSON.stringify({ event: '' }), 400, '`event`'],
      [JSON.stringify({ event: 'Backup Done' }), 400, 'lowercase'],
      [JSON.stringify({ event: 'x', text: 'both' }), 400, 'text'],
      [JSON.stringify({ event: 'x', data: [1, 2] }), 400, 'data'],
      [JSON.stringify({ event: 'x', peer: 'owner' }), 400, 'never for the owner'],
      [JSON.stringify({ event: 'x', data: { blob: 'y'.repeat(20_000) } }), 413, 'at most 16384'],
    ];
    for (const [body, status, message] of cases) {
      const answer = await receiveSigned(context(body, `msg_${body.slice(0, 40)}`));
      expect(answer.status, body).toBe(status);
      expect(JSON.stringify(answer.body), body).toContain(message);
    }
    expect(emitted).toEqual([]);
  });
});
