import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FileNoteStore } from './note-store.ts';
import { describePause, findPause, PauseStore, pauseNotePath } from './pauses.ts';

let root: string;
let pauses: PauseStore;

beforeEach(async () => {
  root = await mkdtemp(path.join(os.tmpdir(), 'assistant-pauses-'));
  pauses = new PauseStore({ notes: new FileNoteStore({ root }) });
});
afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

const file = () => path.join(root, pauseNotePath);

describe('PauseStore', () => {
  it('records who paused what, when and why in a note the owner can read, and resumes by removing the entry', async () => {
    expect(await pauses.read()).toEqual({ entries: [], problems: [] });
    const nowMs = Date.parse('2026-11-28T10:00:00Z');
    const first = await pauses.pause({ kind: 'instance', name: 'mail', by: 'cli', reason: 'on holiday', nowMs });
    expect(first.already).toBe(false);
    await pauses.pause({ kind: 'rule', name: 'mail/inbox/archive robots', by: 'api', nowMs });
    const again = await pauses.pause({ kind: 'instance', name: 'mail', by: 'dashboard', nowMs: nowMs + 1 });
    expect(again).toMatchObject({ already: true, entry: { by: 'cli', reason: 'on holiday' } });
    const text = await readFile(file(), 'utf8');
    expect(text).toContain('# Paused');
    expect(text).toMatch(
      /instances:\n {2}mail:\n {4}by: cli\n {4}at: 2026-11-28T10:00:00.000Z\n {4}reason: on holiday/,
    );
    const state = await pauses.read();
    expect(findPause(state, 'instance', 'mail')).toEqual({
      kind: 'instance',
      name: 'mail',
      by: 'cli',
      at: '2026-11-28T10:00:00.000Z',
      reason: 'on holiday',
    });
    expect(describePause(findPause(state, 'rule', 'mail/inbox/archive robots') ?? { kind: 'rule', name: '' })).toBe(
      'paused by api at 2026-11-28T10:00:00.000Z',
    );
    expect(await pauses.resume({ kind: 'instance', name: 'mail' })).toMatchObject({ name: 'mail' });
    expect(await pauses.resume({ kind: 'instance', name: 'mail' })).toBeUndefined();
    expect((await pauses.read()).entries.map((entry) => `${entry.kind}:${entry.name}`)).toEqual([
      'rule:mail/inbox/archive robots',
    ]);
  });

  it('reads what the owner wrote by hand: bare names, lists, a reason alone, comments kept on the next write', async () => {
    await mkdir(path.dirname(file()), { recursive: true });
    await writeFile(
      file(),
      '---\n# paused by hand\ninstances:\n  mail:\n  work: on holiday\nschedules: [github]\nrules:\n  bad: 3\n---\nmy notes\n',
    );
    const state = await pauses.read();
    expect(state.entries).toEqual([
      { kind: 'instance', name: 'mail' },
      { kind: 'instance', name: 'work', reason: 'on holiday' },
      { kind: 'schedule', name: 'github' },
    ]);
    expect(state.problems).toEqual([expect.stringContaining('`rules.bad` should be {by, at, reason}, got 3')]);
    await pauses.resume({ kind: 'schedule', name: 'github' });
    await pauses.pause({ kind: 'schedule', name: 'mail', by: 'cli' });
    const text = await readFile(file(), 'utf8');
    expect(text).toContain('# paused by hand');
    expect(text).toContain('my notes');
    expect(
      (await pauses.read()).entries.filter((entry) => entry.kind === 'schedule').map((entry) => entry.name),
    ).toEqual(['mail']);
  });

  it('reports a broken note and never overwrites it', async () => {
    await mkdir(path.dirname(file()), { recursive: true });
    const broken = '---\ninstances: {mail\n---\n';
    await writeFile(file(), broken);
    expect((await pauses.read()).broken).toMatch(/^system\/paused\.md:\d+:\d+: /);
    await expect(pauses.pause({ kind: 'instance', name: 'x', by: 'cli' })).rejects.toThrow(/system\/paused\.md:\d+/);
    expect(await readFile(file(), 'utf8')).toBe(broken);
  });
});
