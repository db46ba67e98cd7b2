import { mkdtemp, readFile, rm, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { FileNoteStore, type NoteStore, PauseStore, pauseNotePath } from '@assistant/notes';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { pauseReader } from './pause-reader.ts';

let root: string;
let notes: FileNoteStore;
let reads: number;
let counting: NoteStore;
let nowMs: number;

beforeEach(async () => {
  root = await mkdtemp(path.join(tmpdir(), 'pause-reader-'));
  notes = new FileNoteStore({ root });
  reads = 0;
  nowMs = 1_000_000;
  // Our own interface, wrapped to count how often the note is really read.
  counting = Object.create(notes, {
    read: {
      value: (notePath: string) => {
        reads += 1;
        return notes.read(notePath);
      },
    },
  }) as NoteStore;
});
afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

describe('pauseReader', () => {
  it('reads the note again only when its file changed, and sees each pause and resume at once', async () => {
    const read = pauseReader({ notes: counting, file: path.join(root, pauseNotePath), now: () => nowMs });
    expect((await read()).entries).toEqual([]);
    expect((await read()).entries).toEqual([]);
    expect(reads).toBe(1);
    const store = new PauseStore({ notes });
    await store.pause({ kind: 'instance', name: 'personal', by: 'cli' });
    expect((await read()).entries.map((entry) => entry.name)).toEqual(['personal']);
    expect(await read()).toMatchObject({ entries: [{ name: 'personal' }] });
    expect(reads).toBe(2);
    await store.resume({ kind: 'instance', name: 'personal' });
    expect((await read()).entries).toEqual([]);
    expect(reads).toBe(3);
  });

  it('sees a hand edit that keeps the size, and reads again after a second whatever the file says', async () => {
    const file = path.join(root, pauseNotePath);
    const read = pauseReader({ notes: counting, file, now: () => nowMs });
    await new PauseStore({ notes }).pause({ kind: 'instance', name: 'aaaa', by: 'cli' });
    expect((await read()).entries.map((entry) => entry.name)).toEqual(['aaaa']);
    // Rewritten in place, same length: the inode and size stay, the modification time moves (set here, so that the
    // test does not depend on the clock having ticked since the pause was written).
    await writeFile(file, (await readFile(file, 'utf8')).replace('aaaa', 'bbbb'));
    await utimes(file, new Date('2001-01-01T00:00:00Z'), new Date('2001-01-01T00:00:00Z'));
    expect((await read()).entries.map((entry) => entry.name)).toEqual(['bbbb']);
    const before = reads;
    await read();
    expect(reads).toBe(before);
    nowMs += 1_000;
    await read();
    expect(reads).toBe(before + 1);
  });

  it('reports a broken note as broken, as the store does', async () => {
    const file = path.join(root, pauseNotePath);
    const read = pauseReader({ notes: counting, file, now: () => nowMs });
    await new PauseStore({ notes }).pause({ kind: 'instance', name: 'x', by: 'cli' });
    await writeFile(file, '---\ninstances: [\n---\n');
    expect((await read()).broken).toMatch(/system\/paused\.md/);
  });
});
