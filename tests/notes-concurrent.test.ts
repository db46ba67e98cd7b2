// Edits from another process between the store's read and its write: none is lost, and a real conflict is named.
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { FileNoteStore, NoteConflictError } from '@assistant/notes';
import { describe, expect, it } from 'vitest';
import { repoRoot, runNode } from './helpers/node-process.ts';
import { tempDir } from './helpers/temp-dir.ts';

const editor = path.join(repoRoot, 'tests/fixtures/note-editor.ts');
const edit = async (root: string, ...args: string[]) => {
  const run = await runNode({ args: [editor, root, ...args] });
  expect(run.stderr).toBe('');
  expect(run.code).toBe(0);
};

describe('FileNoteStore across processes', () => {
  it('applies an update on top of another process’s edit of other keys, and refuses one to the same key', async () => {
    await using dir = await tempDir();
    const store = new FileNoteStore({ root: dir.path });
    await store.create('mail/1.md', { data: { status: 'new', label: 'none' }, body: 'Hello\n' });

    const read = await store.read('mail/1.md');
    await edit(dir.path, 'mail/1.md', 'label', 'family');
    await store.update('mail/1.md', { set: { status: 'read' }, basedOn: read });
    expect((await store.read('mail/1.md'))?.data).toEqual({ status: 'read', label: 'family' });

    const again = await store.read('mail/1.md');
    await edit(dir.path, 'mail/1.md', 'status', 'archived');
    await expect(store.update('mail/1.md', { set: { status: 'flagged' }, basedOn: again })).rejects.toThrow(
      NoteConflictError,
    );
    expect((await store.read('mail/1.md'))?.data.status).toBe('archived');
  });

  it('loses no edit when two processes update the same note as fast as they can', async () => {
    await using dir = await tempDir();
    const store = new FileNoteStore({ root: dir.path });
    await store.create('busy.md', { data: { title: 'busy' }, body: 'text\n' });
    await Promise.all([edit(dir.path, 'busy.md', 'a', 'x', '100'), edit(dir.path, 'busy.md', 'b', 'y', '100')]);
    const data = (await store.read('busy.md'))?.data ?? {};
    for (let index = 1; index <= 100; index++) {
      expect(data[`a-${index}`]).toBe('x');
      expect(data[`b-${index}`]).toBe('y');
    }
    expect(await readFile(path.join(dir.path, 'busy.md'), 'utf8')).toMatch(/^---\ntitle: busy\n/);
  });
});
