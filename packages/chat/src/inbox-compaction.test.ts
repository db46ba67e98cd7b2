import { mkdtemp, readdir, rm, unlink } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ChatInbox } from './inbox.ts';

let root: string;
let clock: Date;
/**
 * Each test's clock starts past where the last one ended: message ids carry their time and never go back within a
 * process (newMessageId), as the real clock does not.
 */
let base = Date.parse('2027-01-01T08:00:00.000Z');
let inbox: ChatInbox;
const day = 24 * 3_600_000;

beforeEach(async () => {
  root = await mkdtemp(path.join(os.tmpdir(), 'assistant-inbox-compaction-'));
  base += 2 * 365 * 24 * 3_600_000;
  clock = new Date(base);
  inbox = new ChatInbox({ directory: path.join(root, 'inbox'), now: () => clock });
});

afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

const files = async (conversationId: string, kind: 'messages' | 'answered') =>
  (await readdir(path.join(root, 'inbox', conversationId, kind)).catch(() => [])).filter(
    (name) => !name.startsWith('.'),
  );

describe('ChatInbox compaction', () => {
  it('removes answered messages past the retention, keeps newer ones and never an unanswered one', async () => {
    const old = await inbox.accept('c1', { text: 'old, answered', clientId: 'phone-1' });
    const oldPlain = await inbox.accept('c1', { text: 'old, answered, no client id' });
    const waiting = await inbox.accept('c1', { text: 'old, never answered', clientId: 'phone-2' });
    await inbox.markAnswered('c1', { ids: [old.id, oldPlain.id], replyId: 'm-reply-1' });
    clock = new Date(clock.getTime() + 6 * day);
    const recent = await inbox.accept('c1', { text: 'recent, answered', clientId: 'phone-3' });
    await inbox.markAnswered('c1', { ids: [recent.id], replyId: 'm-reply-2' });
    clock = new Date(clock.getTime() + 2 * day);

    expect(await inbox.conversations()).toEqual(['c1']);
    expect(await inbox.compact('c1', { answeredRetentionMs: 7 * day })).toEqual({ removed: 2 });
    expect((await inbox.messages('c1')).map((message) => message.id)).toEqual([waiting.id, recent.id]);
    expect(await inbox.pending('c1')).toEqual([expect.objectContaining({ id: waiting.id })]);
    expect(await files('c1', 'answered')).toEqual([`${recent.id}.json`]);
    // Nothing more to do on a second pass; a year on, the unanswered message is still there.
    expect(await inbox.compact('c1', { answeredRetentionMs: 7 * day })).toEqual({ removed: 0 });
    clock = new Date(clock.getTime() + 365 * day);
    expect(await inbox.compact('c1', { answeredRetentionMs: 7 * day })).toEqual({ removed: 1 });
    expect((await inbox.pending('c1')).map((message) => message.id)).toEqual([waiting.id]);
  });

  it('deduplicates a resend within the window and takes one after it as a new message', async () => {
    const first = await inbox.accept('c1', { text: 'hello', clientId: 'phone-1' });
    await inbox.markAnswered('c1', { ids: [first.id], replyId: 'm-reply-1' });
    clock = new Date(clock.getTime() + 6 * day);
    await inbox.compact('c1', { answeredRetentionMs: 7 * day });
    // Within the window: the same message, answered, not pending again.
    expect(await inbox.accept('c1', { text: 'hello', clientId: 'phone-1' })).toEqual({ id: first.id, duplicate: true });
    expect(await inbox.pending('c1')).toEqual([]);

    clock = new Date(clock.getTime() + 2 * day);
    expect(await inbox.compact('c1', { answeredRetentionMs: 7 * day })).toEqual({ removed: 1 });
    const resend = await inbox.accept('c1', { text: 'hello', clientId: 'phone-1' });
    expect(resend.duplicate).toBe(false);
    expect(resend.id).not.toBe(first.id);
    expect((await inbox.pending('c1')).map((message) => message.id)).toEqual([resend.id]);
  });

  it('a crash between removing a message and its record leaves the record alone, removed by the next pass', async () => {
    const first = await inbox.accept('c1', { text: 'hello', clientId: 'phone-1' });
    await inbox.markAnswered('c1', { ids: [first.id], replyId: 'm-reply-1' });
    clock = new Date(clock.getTime() + 8 * day);
    // The state a crash after the first unlink leaves: the message gone, its answered record still there.
    const [messageFile] = await files('c1', 'messages');
    await unlink(path.join(root, 'inbox', 'c1', 'messages', messageFile as string));
    expect(await inbox.pending('c1')).toEqual([]);
    expect(await inbox.compact('c1', { answeredRetentionMs: 7 * day })).toEqual({ removed: 0 });
    expect(await files('c1', 'answered')).toEqual([]);
    expect(await files('c1', 'messages')).toEqual([]);
  });
});
