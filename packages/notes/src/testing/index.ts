/**
 * The behaviour every NoteStore must have, as one vitest suite: `describeNoteStoreContract(name, backend)`. It uses
 * the store only through the interface, and edits the files on disk directly where a person's editor would, so an
 * HTTP store proves that the server's conflict check sees those edits exactly as a local store does. Run it from a
 * test file:
 *
 *   describeNoteStoreContract('FileNoteStore', async () => ({ store, root, cleanup }));
 */
import { mkdir, readFile, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { NotePathError } from '../note-path.ts';
import { BrokenNoteError, NoteConflictError, type NoteStore } from '../note-store.ts';

export interface NoteStoreContractBackend {
  store: NoteStore;
  /** The folder the store's notes are in, on this machine's disk (for a remote store: the server's). */
  root: string;
  /** A folder outside `root` the suite may write to, to check that nothing reaches it. */
  outside: string;
  cleanup(): Promise<void>;
}

const handWritten = `---
# hand-written header
subject: "Re: lunch?"   # quoted by hand
status: new
---

# Lunch

See you at noon.
`;

export function describeNoteStoreContract(name: string, createBackend: () => Promise<NoteStoreContractBackend>): void {
  describe(`NoteStore contract: ${name}`, () => {
    let backend: NoteStoreContractBackend;
    let store: NoteStore;
    const onDisk = (notePath: string) => path.join(backend.root, ...notePath.split('/'));
    /** A person saving the file in their editor: no lock, no API. */
    const personWrites = async (notePath: string, text: string) => {
      await mkdir(path.dirname(onDisk(notePath)), { recursive: true });
      await writeFile(onDisk(notePath), text);
    };

    beforeEach(async () => {
      backend = await createBackend();
      store = backend.store;
    });
    afterEach(async () => {
      await backend.cleanup();
    });

    it('creates, reads, lists, moves and deletes notes', async () => {
      const created = await store.create('email/personal/1.md', { data: { subject: 'Hi', uid: 1 }, body: '# Hi\n' });
      expect(created).toMatchObject({ path: 'email/personal/1.md', data: { subject: 'Hi', uid: 1 }, body: '# Hi\n' });
      expect(await readFile(onDisk('email/personal/1.md'), 'utf8')).toBe('---\nsubject: Hi\nuid: 1\n---\n# Hi\n');
      expect(await store.read('email/personal/1.md')).toEqual(created);
      await expect(store.create('email/personal/1.md', { data: {} })).rejects.toMatchObject({ code: 'EEXIST' });
      await store.create('email/personal/2.md', { data: { uid: 2 } });
      expect(await store.list('email')).toEqual(['email/personal/1.md', 'email/personal/2.md']);
      await store.move('email/personal/2.md', 'archive/2.md');
      expect(await store.list()).toEqual(['archive/2.md', 'email/personal/1.md']);
      expect(await store.listFolder('')).toEqual({ folders: ['archive', 'email'], notes: [] });
      expect(await store.listFolder('email/personal')).toEqual({ folders: [], notes: ['email/personal/1.md'] });
      expect(await store.listFolder('nowhere')).toBeUndefined();
      expect(await store.delete('archive/2.md')).toBe(true);
      expect(await store.delete('archive/2.md')).toBe(false);
      expect(await store.read('archive/2.md')).toBeUndefined();
      expect(await store.readText('archive/2.md')).toBeUndefined();
      expect(await store.list('nowhere')).toEqual([]);
    });

    it('updates a hand-edited note without touching what it did not change, and removes a key set to undefined', async () => {
      await personWrites('lunch.md', handWritten);
      const note = await store.read('lunch.md');
      const written = await store.update('lunch.md', {
        set: { status: 'read', actions_taken: ['archive'] },
        basedOn: note,
      });
      const expected = handWritten.replace('status: new\n', 'status: read\nactions_taken:\n  - archive\n');
      expect(await readFile(onDisk('lunch.md'), 'utf8')).toBe(expected);
      expect(written.data).toEqual({ subject: 'Re: lunch?', status: 'read', actions_taken: ['archive'] });
      expect(written).toEqual(await store.read('lunch.md'));
      await store.update('lunch.md', { set: { actions_taken: undefined } });
      expect(await readFile(onDisk('lunch.md'), 'utf8')).toBe(handWritten.replace('status: new', 'status: read'));
    });

    it("re-applies an update on top of a person's edit made since the read, when they touch different keys", async () => {
      await personWrites('lunch.md', handWritten);
      const note = await store.read('lunch.md');
      await personWrites('lunch.md', handWritten.replace('Re: lunch?', 'Lunch on Friday'));
      await store.update('lunch.md', { set: { status: 'read' }, basedOn: note });
      const text = await readFile(onDisk('lunch.md'), 'utf8');
      expect(text).toContain('subject: "Lunch on Friday"   # quoted by hand');
      expect(text).toContain('status: read');
    });

    it('refuses an update whose keys a person changed since the read, naming file and keys, and writes nothing', async () => {
      await personWrites('lunch.md', handWritten);
      const note = await store.read('lunch.md');
      const edited = handWritten.replace('status: new', 'status: keep');
      await personWrites('lunch.md', edited);
      const error = await store
        .update('lunch.md', { set: { status: 'read', seen: true }, basedOn: note })
        .catch((caught: unknown) => caught);
      expect(error).toBeInstanceOf(NoteConflictError);
      expect(error).toMatchObject({ path: 'lunch.md', keys: ['status'] });
      expect((error as Error).message).toBe(
        'lunch.md was changed on disk since it was read, and the change touches `status`',
      );
      expect(await readFile(onDisk('lunch.md'), 'utf8')).toBe(edited);
      // Replacing the body conflicts with a body edit, too.
      const again = await store.read('lunch.md');
      await personWrites('lunch.md', `${edited}More.\n`);
      await expect(store.update('lunch.md', { body: 'mine\n', basedOn: again })).rejects.toMatchObject({
        keys: ['(body)'],
      });
    });

    it('decides a change from the note as it is: concurrent increments are not lost, a throw writes nothing', async () => {
      await store.create('counter.md', { data: { count: 0 } });
      await Promise.all(
        Array.from({ length: 5 }, () =>
          store.update('counter.md', { change: (current) => ({ set: { count: Number(current.data.count) + 1 } }) }),
        ),
      );
      expect((await store.read('counter.md'))?.data.count).toBe(5);
      await expect(
        store.update('counter.md', {
          change: () => {
            throw new Error('no');
          },
        }),
      ).rejects.toThrow('no');
      expect((await store.read('counter.md'))?.data.count).toBe(5);
      // A change sees a person's edit made before it ran.
      await personWrites('counter.md', '---\ncount: 40 # by hand\n---\n');
      await store.update('counter.md', { change: (current) => ({ set: { count: Number(current.data.count) + 1 } }) });
      expect(await readFile(onDisk('counter.md'), 'utf8')).toBe('---\ncount: 41 # by hand\n---\n');
      await expect(store.update('missing.md', { set: { a: 1 } })).rejects.toMatchObject({ code: 'ENOENT' });
      await expect(store.update('missing.md', { change: () => ({ set: { a: 1 } }) })).rejects.toMatchObject({
        code: 'ENOENT',
      });
    });

    it('reports a broken note with path and line, skips it in queries, and never overwrites it', async () => {
      const broken = '---\nsubject: ok\nstatus: [unclosed\n---\nbody\n';
      await personWrites('broken.md', broken);
      await store.create('good.md', { data: { status: 'new' } });
      const error = await store.read('broken.md').catch((caught: unknown) => caught);
      expect(error).toBeInstanceOf(BrokenNoteError);
      expect(error).toMatchObject({ path: 'broken.md' });
      expect((error as BrokenNoteError).line).toBeGreaterThanOrEqual(3);
      expect((error as Error).message).toMatch(/^broken\.md:[34]:\d+: /);
      await expect(store.update('broken.md', { set: { status: 'x' } })).rejects.toBeInstanceOf(BrokenNoteError);
      expect((await store.readText('broken.md'))?.text).toBe(broken);
      const reported: string[] = [];
      const found = await store.query({
        where: (data) => data.status === 'new',
        onBroken: (problem) => reported.push(problem.path),
      });
      expect(found.map((note) => note.path)).toEqual(['good.md']);
      expect(reported).toEqual(['broken.md']);
      expect(await readFile(onDisk('broken.md'), 'utf8')).toBe(broken);
    });

    it('queries a folder by field conditions or a predicate', async () => {
      await store.create('mail/a.md', { data: { status: 'new', score: 0.9, date: '2026-03-01' } });
      await store.create('mail/b.md', { data: { status: 'read', score: 0.2, date: '2026-01-01' } });
      await store.create('other/c.md', { data: { status: 'new' } });
      const paths = async (options: Parameters<NoteStore['query']>[0]) =>
        (await store.query(options)).map((note) => note.path);
      expect(await paths({ folder: 'mail' })).toEqual(['mail/a.md', 'mail/b.md']);
      expect(await paths({ where: { status: 'new' } })).toEqual(['mail/a.md', 'other/c.md']);
      expect(await paths({ folder: 'mail', where: { score: { gte: 0.5 }, date: { lt: '2026-12-01' } } })).toEqual([
        'mail/a.md',
      ]);
      expect(await paths({ where: { score: { exists: false } } })).toEqual(['other/c.md']);
      expect(await paths({ where: (data) => data.status === 'read' })).toEqual(['mail/b.md']);
      const [note] = await store.query({ folder: 'other' });
      expect(note).toEqual(await store.read('other/c.md'));
    });

    it('replaces the whole text only when the file is still the version read', async () => {
      await store.create('a.md', { data: { status: 'new' }, body: 'Hi\n' });
      const read = await store.readText('a.md');
      expect(read).toMatchObject({ path: 'a.md', text: '---\nstatus: new\n---\nHi\n' });
      const text = '---\n# a comment\nstatus: done # why\n---\nHello\n';
      const written = await store.replaceText('a.md', { text, basedOnHash: read?.hash ?? '' });
      expect(written.data).toEqual({ status: 'done' });
      expect(await readFile(onDisk('a.md'), 'utf8')).toBe(text);
      await personWrites('a.md', '---\nstatus: changed\n---\nBy hand\n');
      await expect(
        store.replaceText('a.md', { text: '---\nstatus: mine\n---\n', basedOnHash: written.hash }),
      ).rejects.toMatchObject({ path: 'a.md', keys: ['(file)'] });
      const current = await store.readText('a.md');
      await expect(
        store.replaceText('a.md', { text: '---\nbad: [x\n---\n', basedOnHash: current?.hash ?? '' }),
      ).rejects.toBeInstanceOf(BrokenNoteError);
      expect(await readFile(onDisk('a.md'), 'utf8')).toBe('---\nstatus: changed\n---\nBy hand\n');
    });

    it('refuses paths that leave the notes folder, including through a symlink, and writes nothing outside', async () => {
      await writeFile(path.join(backend.outside, 'passwd'), 'root:x:0:0\n');
      await store.listFolder('');
      await symlink(backend.outside, path.join(backend.root, 'escape'));
      for (const notePath of ['../../etc/passwd', '/etc/passwd', '../x.md', 'escape/passwd', 'escape/new.md']) {
        await expect(store.read(notePath), notePath).rejects.toBeInstanceOf(NotePathError);
      }
      await expect(store.create('escape/new.md', { data: { a: 1 } })).rejects.toBeInstanceOf(NotePathError);
      await expect(store.update('../passwd', { set: { a: 1 } })).rejects.toBeInstanceOf(NotePathError);
      await expect(store.move('escape/passwd', 'stolen.md')).rejects.toBeInstanceOf(NotePathError);
      await expect(store.listFolder('escape')).rejects.toBeInstanceOf(NotePathError);
      await expect(store.list('../')).rejects.toBeInstanceOf(NotePathError);
      expect(await readFile(path.join(backend.outside, 'passwd'), 'utf8')).toBe('root:x:0:0\n');
    });
  });
}
