import { createHash, randomBytes } from 'node:crypto';
import type { Stats } from 'node:fs';
import { type FileHandle, link, open, rename, stat, unlink } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

/** A lock this old was left by a crashed writer, or by one stalled so long that it no longer counts as holding it. */
const lockStaleMs = 10_000;
/** How long a release waits for a lock another process has moved aside for a moment (see `release`). */
const releaseAttempts = 50;

/**
 * Runs `action` holding `{file}.lock`, a file created with O_EXCL and kept open while `action` runs. Only
 * Assistant's own writers take it; a person's editor does not, which is why note updates also compare hashes.
 * Exported for other files Assistant rewrites whole under a short lock (the chat turn lease).
 *
 * A lock older than 10 s is a crashed (or stalled) holder's and is broken, without ever removing a newer one:
 * - A waiter that judged the lock stale renames it to a name of its own and checks that what it moved is the file
 *   it judged (same inode and mtime). Another waiter may have broken that one first and made a fresh lock in
 *   between: then the fresh lock is put back with link(), which, unlike rename, fails instead of replacing a lock
 *   made in the meantime, and the waiter waits on.
 * - A release moves the lock aside the same way and removes it only when it is the holder's own file (the inode of
 *   the descriptor the holder keeps open, so the number cannot have been reused). A holder stalled past 10 s whose
 *   lock was broken puts the new owner's lock back and leaves it.
 * What plain files cannot close: a lock made by a third process in the instant a fresh lock is moved aside is not
 * replaced when the fresh one is put back, so both run; it takes a stale lock, three writers at once and a gap of
 * one system call. A crash between a move and the removal that follows leaves a `{file}.lock.<hex>.stale` or
 * `.release` file, which nothing reads.
 */
export async function withFileLock<T>(file: string, action: () => Promise<T>): Promise<T> {
  const lock = lockPathOf(file);
  const handle = await acquire(lock);
  try {
    return await action();
  } finally {
    await release(lock, handle);
  }
}

/** The longest name a file system takes, in bytes, and what the lock adds to it (`.lock.<12 hex>.release`). */
const maxNameBytes = 255;
const lockSuffixBytes = '.lock.000000000000.release'.length;

/**
 * `{file}.lock`; for a file whose name leaves no room for the lock's own suffixes (a name of more than 229 bytes),
 * `.{hash of the name}.lock` beside it instead, so every name the file system takes can be locked.
 */
function lockPathOf(file: string): string {
  const name = path.basename(file);
  if (Buffer.byteLength(name, 'utf8') + lockSuffixBytes <= maxNameBytes) return `${file}.lock`;
  return path.join(path.dirname(file), `.${createHash('sha256').update(name).digest('hex').slice(0, 32)}.lock`);
}

async function acquire(lock: string): Promise<FileHandle> {
  for (let waitMs = 1; ; waitMs = Math.min(waitMs * 2, 50)) {
    try {
      return await open(lock, 'wx', 0o600);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      const seen = await stat(lock).catch(() => undefined);
      if (seen && Date.now() - seen.mtimeMs > lockStaleMs) await breakStale(lock, seen);
      else await sleep(waitMs);
    }
  }
}

/** Removes the lock judged stale as `seen`, and only that file: anything else found in its place is put back. */
async function breakStale(lock: string, seen: Stats): Promise<void> {
  const aside = `${lock}.${randomBytes(6).toString('hex')}.stale`;
  try {
    await rename(lock, aside);
  } catch (error) {
    // Someone else broke it, or its holder released it, since we looked.
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw error;
  }
  const moved = await stat(aside);
  try {
    if (!sameFile(moved, seen) || moved.mtimeMs !== seen.mtimeMs) await putBack(aside, lock);
  } finally {
    await unlink(aside).catch(() => {});
  }
}

/**
 * Removes the lock if it is still ours: the inode of the descriptor we keep open (so its number cannot have been
 * reused), then closes the descriptor. When our lock was broken while we stalled, the lock in its place is the new
 * owner's: it is put back and left.
 */
async function release(lock: string, handle: FileHandle): Promise<void> {
  const aside = `${lock}.${randomBytes(6).toString('hex')}.release`;
  let closed = false;
  try {
    for (let attempt = 1; ; attempt++) {
      // Steps that do not depend on each other run at once: the lock's cost is on every note update.
      const [ours, moved] = await Promise.all([handle.stat(), moveAside(lock, aside)]);
      if (moved && sameFile(moved, ours)) {
        closed = true;
        await Promise.all([unlink(aside), handle.close()]);
        return;
      }
      if (moved) {
        await putBack(aside, lock).finally(() => unlink(aside).catch(() => {}));
        return;
      }
      // Nothing at the lock's name. Ours has no name left: it was broken, there is nothing to release. Ours still
      // has one: a waiter holds it under its own name for a moment (see breakStale), and removes it or puts it back.
      if (ours.nlink === 0 || attempt >= releaseAttempts) return;
      await sleep(Math.min(attempt, 20));
    }
  } finally {
    if (!closed) await handle.close();
  }
}

/** Renames the lock to `aside` and returns what was moved, or undefined when there was no lock. */
async function moveAside(lock: string, aside: string): Promise<Stats | undefined> {
  try {
    await rename(lock, aside);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
  return stat(aside);
}

/** Links a lock moved aside back to its name, unless a newer lock has taken the name since (that one stays). */
async function putBack(aside: string, lock: string): Promise<void> {
  try {
    await link(aside, lock);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  }
}

function sameFile(left: Stats, right: Stats): boolean {
  return left.ino === right.ino && left.dev === right.dev;
}
