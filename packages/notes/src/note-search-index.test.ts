import { mkdir, mkdtemp, rm, unlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { searchNotes } from './note-search.ts';
import { NoteSearchIndex } from './note-search-index.ts';
import { FileNoteStore } from './note-store.ts';

let root: string;
let store: FileNoteStore;
let index: NoteSearchIndex;

beforeEach(async () => {
  root = await mkdtemp(path.join(os.tmpdir(), 'assistant-search-index-'));
  store = new FileNoteStore({ root });
  index = new NoteSearchIndex({ store });
});
afterEach(async () => {
  await index.close();
  await rm(root, { recursive: true, force: true });
});

describe('NoteSearchIndex', () => {
  it('answers as searchNotes does, and follows edits by hand and through the store', async () => {
    await store.create('mail/a.md', { data: { status: 'new', subject: 'Lunch' }, body: 'see you\n' });
    await store.create('mail/b.md', { data: { status: 'read' }, body: 'lunch again\n' });
    await store.create('mailbox/c.md', { data: { status: 'new' }, body: 'lunch\n' });
    await mkdir(path.join(root, 'mail'), { recursive: true });
    await writeFile(path.join(root, 'mail/broken.md'), '---\nx: [\n---\n');
    expect(index.ready).toBe(false);
    await index.start();
    expect(index.ready).toBe(true);
    for (const query of [
      { folder: 'mail', text: 'LUNCH' },
      { where: { status: 'new' } },
      { folder: 'mail', where: { status: 'new' }, text: 'lunch' },
      { text: 'lunch', offset: 1, limit: 1 },
    ]) {
      const { broken: _broken, ...fromIndex } = index.search(query);
      expect(fromIndex, JSON.stringify(query)).toEqual(await searchNotes(store, query));
    }
    expect(index.search({ folder: 'mail' }).broken).toBe(1);
    expect(index.search({ folder: 'mailbox' }).broken).toBe(0);

    // A change by hand arrives through the watch.
    await writeFile(path.join(root, 'mail/b.md'), '---\nstatus: new\n---\nby hand\n');
    await expect.poll(() => index.search({ where: { status: 'new' } }).total, { timeout: 5_000 }).toBe(3);
    await unlink(path.join(root, 'mail/a.md'));
    await expect.poll(() => index.search({ text: 'see you' }).total, { timeout: 5_000 }).toBe(0);
    // A writer that refreshes sees its own write at once.
    await store.create('mail/d.md', { data: { status: 'fresh' } });
    await index.refresh('mail/d.md');
    expect(index.search({ where: { status: 'fresh' } }).notes.map((note) => note.path)).toEqual(['mail/d.md']);
  });
});
