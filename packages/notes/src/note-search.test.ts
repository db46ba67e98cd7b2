import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { noteContainsText, searchNotes } from './note-search.ts';
import { FileNoteStore } from './note-store.ts';

let root: string;
let store: FileNoteStore;

beforeEach(async () => {
  root = await mkdtemp(path.join(os.tmpdir(), 'assistant-search-'));
  store = new FileNoteStore({ root });
});
afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

describe('searchNotes', () => {
  it('pages the notes matching text and fields, sorted, with the total, skipping broken ones', async () => {
    for (let index = 0; index < 12; index++) {
      await store.create(`mail/${String(index).padStart(2, '0')}.md`, {
        data: { status: index % 2 === 0 ? 'new' : 'read', n: index },
        body: index % 3 === 0 ? 'About LUNCH\n' : 'other\n',
      });
    }
    await store.create('other/lunch.md', { data: { status: 'new' }, body: 'lunch\n' });
    await writeFile(path.join(root, 'mail/broken.md'), '---\nstatus: [new\n---\nlunch\n');
    const broken: string[] = [];
    const result = await searchNotes(store, {
      folder: 'mail',
      text: 'lunch',
      where: { status: 'new' },
      limit: 1,
      offset: 1,
      onBroken: (error) => broken.push(error.path),
    });
    // 0, 6 match both (3 and 9 are `read`).
    expect(result.total).toBe(2);
    expect(result.notes.map((note) => note.path)).toEqual(['mail/06.md']);
    expect(broken).toEqual(['mail/broken.md']);
    const all = await searchNotes(store, { where: { n: { gte: 10 } } });
    expect(all.notes.map((note) => note.path)).toEqual(['mail/10.md', 'mail/11.md']);
  });

  it('matches text in the frontmatter as well as the body, in any case', () => {
    expect(noteContainsText({ data: { subject: 'Quarterly Report' }, body: '' }, 'quarterly')).toBe(true);
    expect(noteContainsText({ data: {}, body: 'Nothing' }, 'report')).toBe(false);
  });
});
