import type { Stats } from 'node:fs';
import { type FileHandle, mkdtemp, open, readdir, rm, stat, utimes, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { withFileLock } from './file-lock.ts';

// `stat` and `rename` are wrapped so that a test can hold a process right after one of them: the races between
// waiters and holders, which otherwise need luck, are driven step by step. Without a hook they are the real ones.
let statHook: ((file: string, found: Stats) => Promise<void>) | undefined;
let renameHook: ((from: string, to: string, error: unknown) => Promise<void>) | undefined;
vi.mock('node:fs/promises', async (importOriginal) => {
  const actual = await importOriginal<typeof import('node:fs/promises')>();
  return {
    ...actual,
    stat: async (file: string) => {
      const found = await actual.stat(file);
      await statHook?.(file, found);
      return found;
    },
    rename: async (from: string, to: string) => {
      const error = await actual.rename(from, to).then(
        () => undefined,
        (failure: unknown) => failure ?? new Error('rename failed'),
      );
      await renameHook?.(from, to, error);
      if (error) throw error;
    },
  };
});

let root: string;
let file: string;
let lock: string;

beforeEach(async () => {
  root = await mkdtemp(path.join(os.tmpdir(), 'assistant-lock-'));
  file = path.join(root, 'note.md');
  lock = `${file}.lock`;
});
afterEach(async () => {
  statHook = undefined;
  renameHook = undefined;
  await rm(root, { recursive: true, force: true });
});

function deferred<T = void>(): { promise: Promise<T>; resolve: (value: T) => void } {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((settle) => {
    resolve = settle;
  });
  return { promise, resolve };
}

/** Waits for `promise`, failing with `what` after 10 s instead of hanging until the test's timeout. */
async function within<T>(promise: Promise<T>, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`waited 10 s for ${what}`)), 10_000);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** Makes the lock look like a crashed writer's: 20 s old. */
async function age(file: string): Promise<void> {
  const old = new Date(Date.now() - 20_000);
  await utimes(file, old, old);
}

describe('withFileLock', () => {
  it('runs actions on one file one at a time and leaves no files behind', async () => {
    let inside = 0;
    let most = 0;
    await Promise.all(
      Array.from({ length: 10 }, () =>
        withFileLock(file, async () => {
          most = Math.max(most, ++inside);
          await new Promise((resolve) => setImmediate(resolve));
          inside--;
        }),
      ),
    );
    expect(most).toBe(1);
    expect(await readdir(root)).toEqual([]);
  });

  it("breaks a crashed writer's lock", async () => {
    await writeFile(lock, '');
    await age(lock);
    expect(await withFileLock(file, async () => 'ran')).toBe('ran');
    expect(await readdir(root)).toEqual([]);
  });

  it('lets only one of two waiters that both judged a lock stale take it', async () => {
    await writeFile(lock, '');
    await age(lock);
    // Both waiters look at the lock and see it stale; each is held there until the test lets it go on.
    const held: { resume: () => void }[] = [];
    const bothHeld = deferred();
    const secondLooksAgain = deferred();
    let secondLetGo = false;
    statHook = async (looked, found) => {
      if (looked !== lock) return;
      if (held.length < 2 && Date.now() - found.mtimeMs > 10_000) {
        const resume = deferred();
        held.push({ resume: () => resume.resolve() });
        if (held.length === 2) bothHeld.resolve();
        await resume.promise;
      } else if (secondLetGo) {
        secondLooksAgain.resolve();
      }
    };
    let inside = 0;
    let most = 0;
    const firstInside = deferred<number>();
    const secondInside = deferred();
    const firstMayLeave = deferred();
    const run = () =>
      withFileLock(file, async () => {
        most = Math.max(most, ++inside);
        if (inside === 1 && most === 1) {
          firstInside.resolve((await stat(lock)).ino);
          await firstMayLeave.promise;
        } else {
          secondInside.resolve();
        }
        inside--;
      });
    const waiters = [run(), run()];
    await within(bothHeld.promise, 'both waiters to see the stale lock');
    // The first breaks the stale lock and takes a fresh one of its own.
    held[0]?.resume();
    const firstLock = await within(firstInside.promise, 'the first waiter to take the lock');
    // Only now does the second act on what it saw: a stale lock that is no longer there.
    secondLetGo = true;
    held[1]?.resume();
    await within(
      Promise.race([secondInside.promise, secondLooksAgain.promise]),
      'the second waiter to take the lock or to look at it again',
    );
    expect(most).toBe(1);
    expect((await stat(lock)).ino).toBe(firstLock);
    firstMayLeave.resolve();
    await within(Promise.all(waiters), 'both actions to finish');
    expect(most).toBe(1);
    expect(await readdir(root)).toEqual([]);
  });

  it("a holder stalled past 10 s, whose lock was broken, does not remove the new owner's lock", async () => {
    const stalled = deferred();
    const firstMayLeave = deferred();
    const first = withFileLock(file, async () => {
      await age(lock);
      stalled.resolve();
      await firstMayLeave.promise;
    });
    await within(stalled.promise, 'the first holder to stall');
    const secondInside = deferred<number>();
    const secondMayLeave = deferred();
    const second = withFileLock(file, async () => {
      secondInside.resolve((await stat(lock)).ino);
      await secondMayLeave.promise;
    });
    const secondLock = await within(secondInside.promise, "the second to break the stalled holder's lock");
    firstMayLeave.resolve();
    await within(first, 'the stalled holder to finish');
    // The second still holds the lock: a third writer must wait for it.
    expect((await stat(lock)).ino).toBe(secondLock);
    secondMayLeave.resolve();
    await within(second, 'the second holder to finish');
    expect(await readdir(root)).toEqual([]);
  });

  it('a holder releasing while a waiter has its fresh lock moved aside waits for it to be put back, then removes it', async () => {
    await writeFile(lock, '');
    await age(lock);
    // The waiter sees the crashed writer's lock stale and is held before it acts.
    const waiterSawStale = deferred();
    const resumeWaiter = deferred();
    const waiterMovedLock = deferred();
    const resumeWaiterAside = deferred();
    const waiterLooksAgain = deferred();
    let phase: 'judging' | 'breaking' | 'waiting' | 'done' = 'judging';
    statHook = async (looked, found) => {
      if (phase === 'judging' && looked === lock && Date.now() - found.mtimeMs > 10_000) {
        phase = 'breaking';
        waiterSawStale.resolve();
        await resumeWaiter.promise;
      } else if (phase === 'breaking' && looked.startsWith(`${lock}.`)) {
        // The waiter has moved what is at the lock's name aside (the holder's fresh lock) and looks at it.
        phase = 'waiting';
        waiterMovedLock.resolve();
        await resumeWaiterAside.promise;
      } else if (phase === 'waiting' && looked === lock) {
        phase = 'done';
        waiterLooksAgain.resolve();
      }
    };
    const waiterInside = deferred();
    const waiter = withFileLock(file, async () => {
      waiterInside.resolve();
    });
    await within(waiterSawStale.promise, 'the waiter to see the stale lock');
    // Another process breaks the stale lock first, and a holder takes a fresh one.
    await rm(lock);
    const holderInside = deferred<FileHandle>();
    const holderMayLeave = deferred();
    const holder = withFileLock(file, async () => {
      // Kept open by the test to follow the holder's lock file under any name, and to keep its inode from reuse.
      holderInside.resolve(await open(lock, 'r'));
      await holderMayLeave.promise;
    });
    await using holderLock = await within(holderInside.promise, 'the holder to take a fresh lock');
    resumeWaiter.resolve();
    await within(waiterMovedLock.promise, "the waiter to move the holder's lock aside");
    // The holder releases while its lock is away; once its attempt to move the lock has failed, the waiter goes on.
    renameHook = async (from, _to, error) => {
      if (from === lock && error) resumeWaiterAside.resolve();
    };
    holderMayLeave.resolve();
    await within(holder, 'the holder to finish');
    await within(Promise.race([waiterInside.promise, waiterLooksAgain.promise]), 'the waiter to put the lock back');
    // The holder's lock is not left behind with nobody holding it (it would block every writer for 10 s): the file
    // has no name left.
    expect((await holderLock.stat()).nlink).toBe(0);
    await within(waiter, 'the waiter to take the lock and finish');
    expect(await readdir(root)).toEqual([]);
  });
});
