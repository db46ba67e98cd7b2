import { describe, expect, it } from 'vitest';
import { DirectorySyncs, isCompleteTmpText, parseTaskTmpName, type SyncHandle, taskTmpName } from './durable-write.ts';

/** A directory whose fsyncs end when the test says: each call is recorded with what had happened before it. */
function fakeDirectory() {
  const events: string[] = [];
  const pending: (() => void)[] = [];
  const open = async (directory: string): Promise<SyncHandle> => ({
    sync: () => {
      events.push(`fsync ${directory}`);
      return new Promise<void>((resolve) => pending.push(resolve));
    },
    close: async () => {},
  });
  /** Ends the oldest fsync still running and lets every promise waiting on it move on. */
  const finishOne = async () => {
    for (let turn = 0; turn < 20 && pending.length === 0; turn++) await new Promise((resolve) => setImmediate(resolve));
    pending.shift()?.();
    for (let turn = 0; turn < 20; turn++) await new Promise((resolve) => setImmediate(resolve));
  };
  return { events, open, finishOne, running: () => pending.length };
}

describe('DirectorySyncs', () => {
  it('serves the callers that arrive while an fsync runs with one fsync that starts after them', async () => {
    const directory = fakeDirectory();
    const syncs = new DirectorySyncs(directory.open);
    const done: string[] = [];
    const first = syncs.sync('/q/pending').then(() => done.push('first'));
    for (let turn = 0; turn < 5 && directory.running() === 0; turn++) {
      await new Promise((resolve) => setImmediate(resolve));
    }
    expect(directory.events).toEqual(['fsync /q/pending']);
    // Arriving while it runs: their renames may come after it began, so they wait for the next one, together.
    directory.events.push('rename 2', 'rename 3', 'rename 4');
    const later = ['second', 'third', 'fourth'].map((label) => syncs.sync('/q/pending').then(() => done.push(label)));
    await directory.finishOne();
    await first;
    expect(done).toEqual(['first']);
    await directory.finishOne();
    await Promise.all(later);
    expect(done).toEqual(['first', 'second', 'third', 'fourth']);
    expect(directory.events).toEqual(['fsync /q/pending', 'rename 2', 'rename 3', 'rename 4', 'fsync /q/pending']);
  });

  it('keeps directories apart and starts afresh once idle', async () => {
    const directory = fakeDirectory();
    const syncs = new DirectorySyncs(directory.open);
    const both = Promise.all([syncs.sync('/q/pending'), syncs.sync('/q/done')]);
    await directory.finishOne();
    await directory.finishOne();
    await both;
    const again = syncs.sync('/q/pending');
    await directory.finishOne();
    await again;
    expect(directory.events.sort()).toEqual(['fsync /q/done', 'fsync /q/pending', 'fsync /q/pending']);
  });

  it('passes an fsync error to every caller it served', async () => {
    const syncs = new DirectorySyncs(async () => ({
      sync: () => Promise.reject(new Error('EIO')),
      close: async () => {},
    }));
    await expect(Promise.all([syncs.sync('/q/pending'), syncs.sync('/q/pending')])).rejects.toThrow('EIO');
    await expect(syncs.sync('/q/pending')).rejects.toThrow('EIO');
  });
});

describe('taskTmpName', () => {
  it('names where a task file goes and what it holds in full', () => {
    const fileName = '5_20261122T154501123Z_01m81zbz7e0rvw1d46qzvhsksj--b2ddc0673723193f--email.inbox.check.yaml';
    const text = 'id: 01m81zbz7e0rvw1d46qzvhsksj\npayload: {a: 1}\n';
    const parsed = parseTaskTmpName(taskTmpName('done', fileName, text));
    expect(parsed).toMatchObject({ state: 'done', fileName });
    expect(isCompleteTmpText(parsed?.digest ?? '', text)).toBe(true);
    expect(isCompleteTmpText(parsed?.digest ?? '', text.slice(0, 20))).toBe(false);
    expect(isCompleteTmpText(parsed?.digest ?? '', '')).toBe(false);
    expect(parseTaskTmpName('1234-0123456789abcdef.tmp')).toBeUndefined();
    expect(
      taskTmpName(
        'pending',
        `5_20261122T154501123Z_01m81zbz7e0rvw1d46qzvhsksj--b2ddc0673723193f--${'a'.repeat(100)}.yaml`,
        text,
      ).length,
    ).toBeLessThanOrEqual(255);
  });
});
