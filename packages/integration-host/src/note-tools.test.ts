import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { FileNoteStore } from '@assistant/notes';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { noteTools } from './note-tools.ts';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'assistant-note-tools-'));
});
afterEach(() => rm(dir, { recursive: true, force: true }));

describe('search_notes', () => {
  it("finds the owner's notes by their text, and not the agent transcripts that repeat the query", async () => {
    const notes = new FileNoteStore({ root: dir });
    await notes.create('people/ann.md', { data: { title: 'Ann' }, body: 'customer since 2021; likes lentils' });
    await notes.create('transcripts/01abc.md', {
      data: { title: 'system.agent 01abc' },
      body: 'Find who likes lentils',
    });
    const [search, read] = noteTools(notes);
    const found = await search?.run({ query: 'LENTILS' }, undefined as never);
    expect(found).toEqual([{ path: 'people/ann.md', title: 'Ann' }]);
    // A transcript is still read by its path.
    expect(await read?.run({ path: 'transcripts/01abc.md' }, undefined as never)).toMatchObject({
      body: 'Find who likes lentils',
    });
  });
});
