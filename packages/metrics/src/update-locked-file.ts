import { randomBytes } from 'node:crypto';
import { mkdir, open, rename, rmdir, stat, unlink } from 'node:fs/promises';
import path from 'node:path';

/** A lock older than this is left by a process that died holding it: taken over. */
const staleLockMs = 30_000;

/**
 * Replaces a JSON file under a lock directory (`<file>.lock`, so the server and the worker writing at once do not
 * lose each other's counts): read, change, write to a temporary file, fsync, rename over the file. A crash at any
 * point leaves the old file or the new one, never a torn one. Resolves `false` (writing nothing) when the lock is
 * busy: the caller keeps what it meant to add for its next write. Private like every file under data/ (0600 files,
 * 0700 directories).
 */
export async function updateLockedFile<Value>(options: {
  file: string;
  read: (file: string) => Promise<Value>;
  update: (current: Value) => Value;
}): Promise<boolean> {
  await mkdir(path.dirname(options.file), { recursive: true, mode: 0o700 });
  const lock = `${options.file}.lock`;
  try {
    await mkdir(lock, { mode: 0o700 });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    const held = await stat(lock).catch(() => undefined);
    if (held && Date.now() - held.mtimeMs < staleLockMs) return false;
    // Taken over by renaming it away first: of two processes that find it stale, one rename wins.
    const away = `${lock}.stale-${randomBytes(4).toString('hex')}`;
    try {
      await rename(lock, away);
      await rmdir(away);
      await mkdir(lock, { mode: 0o700 });
    } catch {
      return false;
    }
  }
  try {
    const value = options.update(await options.read(options.file));
    const temporary = `${options.file}.${randomBytes(4).toString('hex')}.tmp`;
    const handle = await open(temporary, 'w', 0o600);
    try {
      await handle.writeFile(`${JSON.stringify(value)}\n`);
      await handle.sync();
    } finally {
      await handle.close();
    }
    try {
      await rename(temporary, options.file);
    } catch (error) {
      await unlink(temporary).catch(() => {});
      throw error;
    }
    return true;
  } finally {
    await rmdir(lock).catch(() => {});
  }
}
