import { mkdir, mkdtemp, readdir, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { NoteNameTooLongError, NotePathError } from './note-path.ts';
import { BrokenNoteError, FileNoteStore, NoteConflictError } from './note-store.ts';
import { describeNoteStoreContract } from './testing/index.ts';

let root: string;
let outside: string;
let store: FileNoteStore;

beforeEach(async () => {
  root = await mkdtemp(path.join(os.tmpdir(), 'assistant-notes-'));
  outside = await mkdtemp(path.join(os.tmpdir(), 'assistant-outside-'));
  store = new FileNoteStore({ root });
});
afterEach(async () => {
  await rm(root, { recursive: true, force: true });
  await rm(outside, { recursive: true, force: true });
});

const handWritten = `---
# hand-written header
subject: "Re: lunch?"   # quoted by hand
status: new
---

# Lunch

See you at noon.
`;

describe('FileNoteStore', () => {
  it('creates, reads, lists, moves and deletes notes', async () => {
    const created = await store.create('email/personal/1.md', { data: { subject: 'Hi', uid: 1 }, body: '# Hi\n' });
    expect(created.data).toEqual({ subject: 'Hi', uid: 1 });
    expect(await readFile(path.join(root, 'email/personal/1.md'), 'utf8')).toBe(
      '---\nsubject: Hi\nuid: 1\n---\n# Hi\n',
    );
    await expect(store.create('email/personal/1.md', { data: {} })).rejects.toThrow(/EEXIST/);
    await store.create('email/personal/2.md', { data: { uid: 2 } });
    expect(await store.list('email')).toEqual(['email/personal/1.md', 'email/personal/2.md']);
    await store.move('email/personal/2.md', 'archive/2.md');
    expect(await store.list()).toEqual(['archive/2.md', 'email/personal/1.md']);
    expect(await store.delete('archive/2.md')).toBe(true);
    expect(await store.read('archive/2.md')).toBeUndefined();
  });

  it('updates a hand-edited note without touching what it did not change', async () => {
    await writeFile(path.join(root, 'lunch.md'), handWritten);
    const note = await store.read('lunch.md');
    await store.update('lunch.md', { set: { status: 'read', actions_taken: ['archive'] }, basedOn: note });
    expect(await readFile(path.join(root, 'lunch.md'), 'utf8')).toBe(
      handWritten.replace('status: new\n', 'status: read\nactions_taken:\n  - archive\n'),
    );
  });

  it('re-applies an update on top of an edit made since the read, when they touch different keys', async () => {
    await writeFile(path.join(root, 'lunch.md'), handWritten);
    const note = await store.read('lunch.md');
    // The person saves in their editor between the system's read and write.
    await writeFile(path.join(root, 'lunch.md'), handWritten.replace('Re: lunch?', 'Lunch on Friday'));
    await store.update('lunch.md', { set: { status: 'read' }, basedOn: note });
    const text = await readFile(path.join(root, 'lunch.md'), 'utf8');
    expect(text).toContain('subject: "Lunch on Friday"   # quoted by hand');
    expect(text).toContain('status: read');
  });

  it('hole 11: a change decided from the note on disk runs under its lock: concurrent increments are not lost', async () => {
    await store.create('counter.md', { data: { count: 0 } });
    await Promise.all(
      Array.from({ length: 20 }, () =>
        store.update('counter.md', { change: (current) => ({ set: { count: Number(current.data.count) + 1 } }) }),
      ),
    );
    expect((await store.read('counter.md'))?.data.count).toBe(20);
    // A change that throws writes nothing and the error reaches the caller.
    await expect(
      store.update('counter.md', {
        change: () => {
          throw new Error('no');
        },
      }),
    ).rejects.toThrow('no');
    expect((await store.read('counter.md'))?.data.count).toBe(20);
  });

  it('reads back what is on disk after an update whose change callback altered the note it was handed', async () => {
    await store.create('mutated.md', { data: { subject: 'Lunch', count: 1 }, body: 'Hi.\n' });
    const written = await store.update('mutated.md', {
      change: (current) => {
        // A careless callback: this note is its own copy, not what the file holds.
        current.data.subject = 'changed in memory only';
        delete current.data.count;
        return { set: { status: 'read' } };
      },
    });
    const expected = { subject: 'Lunch', count: 1, status: 'read' };
    expect(written.data).toEqual(expected);
    expect((await store.read('mutated.md'))?.data).toEqual(expected);
    expect(await readFile(path.join(root, 'mutated.md'), 'utf8')).toBe(
      '---\nsubject: Lunch\ncount: 1\nstatus: read\n---\nHi.\n',
    );
  });

  it('refuses an update whose keys were changed on disk since the read, naming file and keys', async () => {
    await writeFile(path.join(root, 'lunch.md'), handWritten);
    const note = await store.read('lunch.md');
    const edited = handWritten.replace('status: new', 'status: keep');
    await writeFile(path.join(root, 'lunch.md'), edited);
    const update = store.update('lunch.md', { set: { status: 'read' }, basedOn: note });
    await expect(update).rejects.toThrow(NoteConflictError);
    await expect(store.update('lunch.md', { set: { status: 'read' }, basedOn: note })).rejects.toThrow(
      'lunch.md was changed on disk since it was read, and the change touches `status`',
    );
    expect(await readFile(path.join(root, 'lunch.md'), 'utf8')).toBe(edited);
    // Replacing the body conflicts with a body edit, too.
    const again = await store.read('lunch.md');
    await writeFile(path.join(root, 'lunch.md'), `${edited}More.\n`);
    await expect(store.update('lunch.md', { body: 'mine\n', basedOn: again })).rejects.toThrow(/`\(body\)`/);
  });

  it('reports a broken note with path and line, skips it in queries, and never overwrites it', async () => {
    const broken = '---\nsubject: ok\nstatus: [unclosed\n---\nbody\n';
    await writeFile(path.join(root, 'broken.md'), broken);
    await store.create('good.md', { data: { status: 'new' } });
    await expect(store.read('broken.md')).rejects.toThrow(BrokenNoteError);
    await expect(store.read('broken.md')).rejects.toThrow(/^broken\.md:[34]:\d+: /);
    await expect(store.update('broken.md', { set: { status: 'x' } })).rejects.toThrow(BrokenNoteError);
    const reported: string[] = [];
    const found = await store.query({
      where: (data) => data.status === 'new',
      onBroken: (error) => reported.push(error.path),
    });
    expect(found.map((note) => note.path)).toEqual(['good.md']);
    expect(reported).toEqual(['broken.md']);
    expect(await readFile(path.join(root, 'broken.md'), 'utf8')).toBe(broken);
  });

  it('refuses a name over 255 bytes as a bad path naming the limit, on every operation, before the file system does', async () => {
    // 128 two-byte letters: 128 characters, 256 bytes.
    const long = 'é'.repeat(128);
    for (const notePath of [`${long}.md`, `${long}/a.md`, `a/${'x'.repeat(256)}`]) {
      await expect(store.read(notePath), notePath).rejects.toThrow(NoteNameTooLongError);
      await expect(store.read(notePath), notePath).rejects.toThrow(/at most 255 bytes/);
    }
    await expect(store.create(`${long}.md`, { data: { a: 1 } })).rejects.toBeInstanceOf(NotePathError);
    await expect(store.listFolder(long)).rejects.toBeInstanceOf(NotePathError);
    await expect(store.list(long)).rejects.toBeInstanceOf(NotePathError);
    // 255 bytes is a name the file system takes: it is written (its temporary file and lock have names that fit).
    const longest = `${'x'.repeat(252)}.md`;
    await store.create(longest, { data: { a: 1 } });
    await store.update(longest, { set: { a: 2 } });
    expect((await store.read(longest))?.data.a).toBe(2);
    // A path whose names are each short enough but whose whole is over PATH_MAX is a bad path too.
    const deep = Array.from({ length: 20 }, () => 'y'.repeat(250)).join('/');
    await expect(store.read(`${deep}.md`)).rejects.toBeInstanceOf(NotePathError);
  });

  it('refuses paths that leave the notes folder, including through a symlink', async () => {
    await writeFile(path.join(outside, 'passwd'), 'root:x:0:0\n');
    await symlink(outside, path.join(root, 'escape'));
    await mkdir(path.join(root, 'inside'));
    for (const notePath of ['../../etc/passwd', '/etc/passwd', 'a/../../x.md', 'escape/passwd', 'escape/new.md']) {
      await expect(store.read(notePath), notePath).rejects.toThrow(NotePathError);
    }
    await expect(store.create('escape/new.md', { data: { a: 1 } })).rejects.toThrow(NotePathError);
    expect(await readFile(path.join(outside, 'passwd'), 'utf8')).toBe('root:x:0:0\n');
  });

  // The store makes its root and resolves its real path once (not at every call): what happens to the root after that.
  it('keeps working when its root is removed while it runs: nothing there to read, and a new note makes it again', async () => {
    await store.create('a.md', { data: { n: 1 } });
    await rm(root, { recursive: true, force: true });
    expect(await store.read('email/personal/1.md')).toBeUndefined();
    expect(await store.list()).toEqual([]);
    await store.create('email/personal/1.md', { data: { n: 2 } });
    expect((await store.read('email/personal/1.md'))?.data).toEqual({ n: 2 });
    expect((await store.listFolder())?.folders).toEqual(['email']);
  });

  it('refuses every path once its root is replaced by a link to elsewhere while it runs', async () => {
    await store.create('a.md', { data: { n: 1 } });
    await writeFile(path.join(outside, 'a.md'), '---\nsecret: 1\n---\n');
    await rm(root, { recursive: true, force: true });
    await symlink(outside, root);
    await expect(store.read('a.md')).rejects.toThrow(NotePathError);
    await expect(store.create('b.md', { data: { n: 2 } })).rejects.toThrow(NotePathError);
    await expect(store.create('new/b.md', { data: { n: 2 } })).rejects.toThrow(NotePathError);
    expect((await readdir(outside)).sort()).toEqual(['a.md']);
  });
});

describe('FileNoteStore whole-text edits', () => {
  it('replaces the text as written, comments and all, when the file is the version read', async () => {
    await store.create('a.md', { data: { status: 'new' }, body: 'Hi\n' });
    const read = await store.readText('a.md');
    const text = '---\n# a comment\nstatus: done # why\n---\nHello\n';
    const written = await store.replaceText('a.md', { text, basedOnHash: read?.hash ?? '' });
    expect(written.data).toEqual({ status: 'done' });
    expect(await readFile(path.join(root, 'a.md'), 'utf8')).toBe(text);
  });

  it('refuses a save based on an older version and writes nothing', async () => {
    await store.create('a.md', { data: { status: 'new' }, body: 'Hi\n' });
    const read = await store.readText('a.md');
    await writeFile(path.join(root, 'a.md'), '---\nstatus: changed\n---\nBy hand\n');
    await expect(
      store.replaceText('a.md', { text: '---\nstatus: mine\n---\n', basedOnHash: read?.hash ?? '' }),
    ).rejects.toBeInstanceOf(NoteConflictError);
    expect(await readFile(path.join(root, 'a.md'), 'utf8')).toBe('---\nstatus: changed\n---\nBy hand\n');
  });

  it('refuses frontmatter that does not parse, with its line in the file', async () => {
    await store.create('a.md', { data: { status: 'new' } });
    const read = await store.readText('a.md');
    const error = await store
      .replaceText('a.md', { text: '---\nstatus: new\nbad: [x\n---\n', basedOnHash: read?.hash ?? '' })
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(BrokenNoteError);
    expect((error as BrokenNoteError).line).toBeGreaterThanOrEqual(3);
    expect(await store.readText('a.md')).toEqual(read);
  });

  it('reads a broken note as text, and lists one folder without walking the tree', async () => {
    await mkdir(path.join(root, 'mail/sub'), { recursive: true });
    await writeFile(path.join(root, 'mail/b.md'), '---\nx: [\n---\n');
    await writeFile(path.join(root, 'mail/a.md'), 'plain\n');
    await writeFile(path.join(root, 'mail/.hidden.md'), '');
    await writeFile(path.join(root, 'mail/sub/deep.md'), '');
    await writeFile(path.join(root, 'mail/image.png'), '');
    expect((await store.readText('mail/b.md'))?.text).toBe('---\nx: [\n---\n');
    await expect(store.read('mail/b.md')).rejects.toBeInstanceOf(BrokenNoteError);
    expect(await store.listFolder('mail')).toEqual({ folders: ['mail/sub'], notes: ['mail/a.md', 'mail/b.md'] });
    expect(await store.listFolder('')).toEqual({ folders: ['mail'], notes: [] });
    expect(await store.listFolder('nowhere')).toBeUndefined();
    expect(await new FileNoteStore({ root: path.join(root, 'fresh') }).listFolder('')).toEqual({
      folders: [],
      notes: [],
    });
    await symlink(outside, path.join(root, 'out'));
    await expect(store.listFolder('out')).rejects.toBeInstanceOf(NotePathError);
    await expect(store.readText('../x.md')).rejects.toBeInstanceOf(NotePathError);
  });
});

describeNoteStoreContract('FileNoteStore', async () => {
  const notesRoot = await mkdtemp(path.join(os.tmpdir(), 'assistant-notes-contract-'));
  const elsewhere = await mkdtemp(path.join(os.tmpdir(), 'assistant-outside-'));
  return {
    store: new FileNoteStore({ root: notesRoot }),
    root: notesRoot,
    outside: elsewhere,
    cleanup: async () => {
      await rm(notesRoot, { recursive: true, force: true });
      await rm(elsewhere, { recursive: true, force: true });
    },
  };
});
