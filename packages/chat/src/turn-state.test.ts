import { mkdir, mkdtemp, readdir, rm, utimes, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type TurnState, TurnStates } from './turn-state.ts';

let root: string;
let clock: number;
let turns: TurnStates;

beforeEach(async () => {
  root = await mkdtemp(path.join(os.tmpdir(), 'assistant-turns-'));
  clock = Date.parse('2026-11-23T18:00:00.000Z');
  turns = new TurnStates({ directory: path.join(root, 'turns'), staleMs: 10_000, now: () => clock });
});

afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

/** A state file as another process wrote it. */
async function writeState(state: Partial<TurnState> & { task: string }): Promise<void> {
  const at = new Date(clock).toISOString();
  const full: TurnState = {
    conversation: 'c1',
    owner: { host: os.hostname(), pid: process.pid },
    batch: ['m1'],
    started_at: at,
    heartbeat_at: at,
    ...state,
  };
  await mkdir(turns.directory, { recursive: true });
  await writeFile(turns.file('c1'), JSON.stringify(full));
}

describe('TurnStates', () => {
  it('gives the lease to one task at a time; the holder resumes it, another is told busy', async () => {
    let batchCalls = 0;
    const first = await turns.acquire('c1', {
      task: 't1',
      batch: (previous) => {
        batchCalls += 1;
        expect(previous).toBeUndefined();
        return ['m1', 'm2'];
      },
    });
    expect(first).toMatchObject({
      status: 'acquired',
      resumed: false,
      state: { conversation: 'c1', task: 't1', batch: ['m1', 'm2'], owner: { pid: process.pid } },
    });
    expect(first).not.toHaveProperty('previous');
    expect(await turns.running('c1')).toMatchObject({ task: 't1' });

    const other = await turns.acquire('c1', { task: 't2', batch: () => ['m3'] });
    expect(other).toMatchObject({ status: 'busy', holder: { task: 't1', batch: ['m1', 'm2'] } });

    // The same task again (a retry, a restarted worker): its recorded batch, without asking for a new one.
    clock += 1_000;
    const again = await turns.acquire('c1', { task: 't1', batch: () => ['never'] });
    expect(again).toMatchObject({ status: 'acquired', resumed: true, state: { batch: ['m1', 'm2'] } });
    expect(again.status === 'acquired' && again.state.heartbeat_at).toBe(new Date(clock).toISOString());
    expect(batchCalls).toBe(1);
  });

  it('takes over from a holder whose process is gone, and from one whose heartbeat went stale', async () => {
    await writeState({ task: 'dead', owner: { host: os.hostname(), pid: 2147483646 }, batch: ['m1', 'm2'] });
    const read = await turns.read('c1');
    expect(read && turns.isLive(read)).toBe(false);
    expect(await turns.running('c1')).toBeUndefined();
    const taken = await turns.acquire('c1', {
      task: 't2',
      batch: (previous) => previous?.batch ?? [],
    });
    expect(taken).toMatchObject({
      status: 'acquired',
      resumed: false,
      previous: { task: 'dead', batch: ['m1', 'm2'] },
      state: { task: 't2', batch: ['m1', 'm2'] },
    });

    // Another host's holder is judged by its heartbeat only.
    await writeState({ task: 'remote', owner: { host: 'elsewhere.invalid', pid: 1 } });
    expect(await turns.acquire('c1', { task: 't3', batch: () => ['m9'] })).toMatchObject({ status: 'busy' });
    clock += 10_001;
    expect(await turns.acquire('c1', { task: 't3', batch: () => ['m9'] })).toMatchObject({
      status: 'acquired',
      previous: { task: 'remote' },
      state: { task: 't3', batch: ['m9'] },
    });
  });

  it('updates the holder’s state and heartbeat; a task that lost the lease gets CHAT_TURN_LOST', async () => {
    await turns.acquire('c1', { task: 't1', batch: () => ['m1'] });
    clock += 2_000;
    const question = { id: 'q1', text: 'Which one?', asked_at: new Date(clock).toISOString() };
    const updated = await turns.update('c1', 't1', (state) => ({ ...state, batch: [...state.batch, 'm2'], question }));
    expect(updated).toMatchObject({ batch: ['m1', 'm2'], question, heartbeat_at: new Date(clock).toISOString() });
    expect(await turns.read('c1')).toEqual(updated);

    // t1 went quiet for longer than staleMs: t2 takes the lease, and t1's next heartbeat finds it lost.
    clock += 10_001;
    expect(await turns.acquire('c1', { task: 't2', batch: (previous) => previous?.batch ?? [] })).toMatchObject({
      status: 'acquired',
      state: { task: 't2', batch: ['m1', 'm2'] },
    });
    await expect(turns.update('c1', 't1')).rejects.toMatchObject({ code: 'CHAT_TURN_LOST' });
    await rm(turns.file('c1'));
    await expect(turns.update('c1', 't2')).rejects.toMatchObject({ code: 'CHAT_TURN_LOST' });
  });

  it('releases only the lease the task holds, and leaves no lock files behind', async () => {
    await turns.acquire('c1', { task: 't1', batch: () => ['m1'] });
    await turns.release('c1', 't2');
    expect(await turns.read('c1')).toMatchObject({ task: 't1' });
    await turns.release('c1', 't1');
    expect(await turns.read('c1')).toBeUndefined();
    expect(await turns.acquire('c1', { task: 't2', batch: () => ['m2'] })).toMatchObject({
      status: 'acquired',
      resumed: false,
    });
    expect(await readdir(path.join(root, 'turns'))).toEqual(['c1.json']);
  });

  it('reads a file that is not a turn state as no turn, and a lock left by a dead process is broken', async () => {
    await writeFile(path.join(root, 'ignored'), '');
    await turns.acquire('c1', { task: 't1', batch: () => [] });
    await writeFile(turns.file('c1'), 'not json');
    expect(await turns.read('c1')).toBeUndefined();
    await writeFile(turns.file('c1'), JSON.stringify({ task: 'only this' }));
    expect(await turns.read('c1')).toBeUndefined();
    // The mutex file of a process that died while holding it, ten seconds old.
    const lock = `${turns.file('c1')}.lock`;
    await writeFile(lock, '');
    const old = new Date(Date.now() - 10_000);
    await utimes(lock, old, old);
    expect(await turns.acquire('c1', { task: 't2', batch: () => ['m1'] })).toMatchObject({ status: 'acquired' });
    expect(await readdir(turns.directory)).toEqual(['c1.json']);
  });
});
