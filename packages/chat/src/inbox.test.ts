import { mkdtemp, readdir, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { isAssistantError } from '@assistant/errors';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ChatInbox } from './inbox.ts';

let root: string;
let inbox: ChatInbox;

beforeEach(async () => {
  root = await mkdtemp(path.join(os.tmpdir(), 'assistant-inbox-'));
  inbox = new ChatInbox({ directory: path.join(root, 'inbox') });
});

afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

const stored = async (conversationId: string) =>
  (await readdir(path.join(root, 'inbox', conversationId, 'messages'))).filter((name) => !name.startsWith('.'));

describe('ChatInbox', () => {
  it('stores a message before answering, and a resend with the same client id is the same message', async () => {
    const first = await inbox.accept('c1', { text: 'hello', clientId: 'phone-1', mode: 'steer' });
    expect(first).toEqual({ id: expect.stringMatching(/^m[a-z0-9]+$/), duplicate: false });
    expect(await stored('c1')).toHaveLength(1);

    // Another ChatInbox over the same folder stands in for a restarted process.
    const restarted = new ChatInbox({ directory: path.join(root, 'inbox') });
    expect(await restarted.accept('c1', { text: 'hello', clientId: 'phone-1' })).toEqual({
      id: first.id,
      duplicate: true,
    });
    expect(await restarted.accept('c2', { text: 'hello', clientId: 'phone-1' })).toMatchObject({ duplicate: false });
    const without = await restarted.accept('c1', { text: 'hello' });
    expect(without.duplicate).toBe(false);
    expect(await restarted.pending('c1')).toEqual([
      { id: first.id, conversationId: 'c1', text: 'hello', at: expect.any(String), clientId: 'phone-1', mode: 'steer' },
      { id: without.id, conversationId: 'c1', text: 'hello', at: expect.any(String) },
    ]);
  });

  it('keeps pending in order and records each answer exactly once', async () => {
    const ids: string[] = [];
    for (const text of ['one', 'two', 'three']) ids.push((await inbox.accept('c1', { text })).id);
    expect((await inbox.pending('c1')).map((message) => message.text)).toEqual(['one', 'two', 'three']);

    await inbox.markAnswered('c1', { ids: ids.slice(0, 2), replyId: 'r1' });
    expect((await inbox.pending('c1')).map((message) => message.text)).toEqual(['three']);
    expect(await inbox.answeredBy('c1', ids[0] ?? '')).toMatchObject({ id: ids[0], replyId: 'r1' });
    // Marking again with the same reply (a rerun after a crash) changes nothing; with another reply it is refused.
    await inbox.markAnswered('c1', { ids: ids.slice(0, 2), replyId: 'r1' });
    await expect(inbox.markAnswered('c1', { ids: [ids[1] ?? ''], replyId: 'r2' })).rejects.toSatisfy(
      (error) => isAssistantError(error, 'CHAT_ALREADY_ANSWERED') && /answered by r1, not r2/.test(error.message),
    );
    await expect(inbox.markAnswered('c1', { ids: ['m-nothing'], replyId: 'r3' })).rejects.toSatisfy((error) =>
      isAssistantError(error, 'CHAT_INPUT_INVALID'),
    );
    expect(await inbox.answeredBy('c1', ids[2] ?? '')).toBeUndefined();
  });

  it('refuses text over the size cap, a full conversation and bad input, storing nothing', async () => {
    const small = new ChatInbox({ directory: path.join(root, 'inbox'), maxTextBytes: 8, maxPending: 2 });
    await expect(small.accept('c1', { text: 'ééééé' })).rejects.toSatisfy(
      (error) =>
        isAssistantError(error, 'CHAT_MESSAGE_TOO_LARGE') && /at most 8 bytes of UTF-8, got 10/.test(error.message),
    );
    const first = await small.accept('c1', { text: 'a', clientId: 'x' });
    await small.accept('c1', { text: 'b' });
    await expect(small.accept('c1', { text: 'c' })).rejects.toSatisfy(
      (error) => isAssistantError(error, 'CHAT_PENDING_FULL') && /2 messages not yet answered/.test(error.message),
    );
    // A resend of a stored message is still answered when the conversation is full.
    expect(await small.accept('c1', { text: 'a', clientId: 'x' })).toEqual({ id: first.id, duplicate: true });
    await small.markAnswered('c1', { ids: [first.id], replyId: 'r1' });
    expect((await small.accept('c1', { text: 'c' })).duplicate).toBe(false);

    await expect(small.accept('c1', { text: '  \n ' })).rejects.toSatisfy((error) =>
      isAssistantError(error, 'CHAT_INPUT_INVALID'),
    );
    await expect(small.accept('../c1', { text: 'x' })).rejects.toSatisfy((error) =>
      isAssistantError(error, 'CHAT_INPUT_INVALID'),
    );
    // @ts-expect-error: a mode from outside, not checked by the compiler
    await expect(small.accept('c1', { text: 'x', mode: 'now' })).rejects.toThrow(/got "now"/);
    expect(await stored('c1')).toHaveLength(3);
  });

  it('stores 200 messages from 10 concurrent clients with random retries exactly once each, in order per client', async () => {
    const clients = 10;
    const perClient = 20;
    let seed = 42;
    const random = () => {
      seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
      return seed / 2 ** 31;
    };
    const acknowledged = new Map<string, string>();
    const roomy = new ChatInbox({ directory: path.join(root, 'inbox'), maxPending: 1000 });
    await Promise.all(
      Array.from({ length: clients }, async (_, client) => {
        for (let index = 0; index < perClient; index++) {
          const clientId = `client-${client}-${index}`;
          const text = `message ${index} from client ${client}`;
          // A client that resends (a lost acknowledgement, a double tap): some resends race the first send,
          // some come after it.
          const attempts = 1 + Math.floor(random() * 3);
          const racing = Array.from({ length: attempts }, () => roomy.accept('busy', { text, clientId }));
          const results = await Promise.all(racing);
          const later = random() < 0.3 ? [await roomy.accept('busy', { text, clientId })] : [];
          const all = [...results, ...later];
          expect(new Set(all.map((result) => result.id)).size).toBe(1);
          expect(all.filter((result) => !result.duplicate)).toHaveLength(1);
          acknowledged.set(clientId, all[0]?.id ?? '');
        }
      }),
    );
    const messages = await roomy.messages('busy');
    expect(messages).toHaveLength(clients * perClient);
    expect(await stored('busy')).toHaveLength(clients * perClient);
    expect(new Set(messages.map((message) => message.clientId)).size).toBe(clients * perClient);
    for (const message of messages) expect(acknowledged.get(message.clientId ?? '')).toBe(message.id);
    for (let client = 0; client < clients; client++) {
      const order = messages
        .filter((message) => message.clientId?.startsWith(`client-${client}-`))
        .map((message) => message.text);
      expect(order).toEqual(Array.from({ length: perClient }, (_, index) => `message ${index} from client ${client}`));
    }
  });
});
