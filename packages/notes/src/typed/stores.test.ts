import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FileNoteStore } from '../note-store.ts';
import { emailStore, pullRequestStore, serviceResultStore, transcriptStore } from './stores.ts';
import { InvalidNoteError } from './typed-note-store.ts';

let root: string;
let store: FileNoteStore;
const closers: (() => Promise<void>)[] = [];

beforeEach(async () => {
  root = await mkdtemp(path.join(os.tmpdir(), 'assistant-typed-'));
  store = new FileNoteStore({ root });
});
afterEach(async () => {
  for (const close of closers.splice(0)) await close();
  await rm(root, { recursive: true, force: true });
});

/** Polls the index until `find` returns something, as the watcher reports a hand edit; fails naming `what`. */
async function eventually<T>(find: () => Promise<T[]>, what: string, timeoutMs = 10_000): Promise<T[]> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const found = await find();
    if (found.length > 0) return found;
    if (Date.now() > deadline) throw new Error(`waited ${timeoutMs} ms for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe('typed note stores', () => {
  it('save, find by id through the index, and record each action once', async () => {
    await store.create('email/personal/7.md', { data: { message_id: '<old@x>', uid: 7 } });
    const mail = emailStore(store, 'personal');
    await mail.open();
    closers.push(() => mail.close());
    expect((await mail.findBy('uid', 7)).map((note) => note.path)).toEqual(['email/personal/7.md']);

    const notePath = mail.pathFor({ uid: 8, message_id: '<a@example.com>' });
    expect(notePath).toBe('email/personal/8.md');
    await mail.save(notePath, { message_id: '<a@example.com>', uid: 8, subject: 'Hello' }, '# Hello\n');
    expect((await mail.findBy('message_id', '<a@example.com>')).map((note) => note.path)).toEqual([notePath]);

    await mail.recordAction(notePath, 'archive', 'task-1');
    await mail.recordAction(notePath, 'archive', 'task-2');
    expect(await mail.hasTaken(notePath, 'archive')).toBe(true);
    expect(await mail.hasTaken(notePath, 'label')).toBe(false);
    expect((await mail.read(notePath))?.data.actions_taken).toEqual([
      { action: 'archive', at: expect.any(String), task: 'task-1' },
    ]);
  });

  it('sees notes written by hand through the watch, and reports notes that fail their schema', async () => {
    const mail = emailStore(store, 'personal');
    await mail.open();
    closers.push(() => mail.close());
    await writeFile(path.join(root, 'email/personal/9.md'), '---\nmessage_id: "<hand@x>"\n---\n');
    expect(
      (await eventually(() => mail.findBy('message_id', '<hand@x>'), 'the index to pick up the hand-written note')).map(
        (note) => note.path,
      ),
    ).toEqual(['email/personal/9.md']);
    await writeFile(path.join(root, 'email/personal/bad.md'), '---\nuid: 3\n---\n');
    await expect(mail.read('email/personal/bad.md')).rejects.toThrow(InvalidNoteError);
    await expect(mail.read('email/personal/bad.md')).rejects.toThrow(/^email\/personal\/bad\.md: message_id: /);
  });

  it('lay notes out where the design says', () => {
    expect(pullRequestStore(store, 'work').pathFor({ repository: 'acme/app', number: 12 })).toBe(
      'github/work/acme/app/pulls/12.md',
    );
    expect(
      serviceResultStore(store, 'research', 'search').pathFor({
        task: '01m81zbz7e0rvw1d46qzvhsksj',
        finished_at: '2026-11-22T12:00:01.123Z',
      }),
    ).toBe('services/research/search/20261122T120001Z__01m81zbz7e0rvw1d46qzvhsksj.md');
    expect(transcriptStore(store).pathFor({ kind: 'agent', id: 'a/b' })).toBe('transcripts/agent/a_b.md');
  });
});
