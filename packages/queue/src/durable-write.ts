import { randomBytes } from 'node:crypto';
import { open, rename, unlink } from 'node:fs/promises';
import path from 'node:path';

/**
 * `os`: each file is fsynced before it is renamed into place, so a task is never half-written; the rename itself
 * reaches the disk when the OS flushes (seconds), so a power cut can undo the last moves but never corrupt a file.
 * `strict`: the directory is fsynced after every rename too, so a move is on disk when the call returns.
 */
export type Durability = 'os' | 'strict';

export interface WriteFileDurablyOptions {
  /** Where the file is written before it is renamed into place: the queue's tmp/, on the same filesystem. */
  tmpDir: string;
  target: string;
  text: string;
  durability: Durability;
}

/** Writes `text` to a fresh file in tmpDir, fsyncs it, and renames it over `target`: readers see all or nothing. */
export async function writeFileDurably(options: WriteFileDurablyOptions): Promise<void> {
  // A short name of its own, not the target's: a target name near the 255-byte limit must not overflow it. The
  // `.tmp` ending marks it as scratch; recovery sweeps what a crash left in tmp/ by age.
  const tmp = path.join(options.tmpDir, `${process.pid}-${randomBytes(8).toString('hex')}.tmp`);
  // 0o600: payloads hold mail and issue text, which is nobody else's business on a shared machine.
  const handle = await open(tmp, 'wx', 0o600);
  try {
    await handle.writeFile(options.text);
    await handle.sync();
  } catch (error) {
    await handle.close();
    await unlink(tmp).catch(() => {});
    throw error;
  }
  await handle.close();
  try {
    await rename(tmp, options.target);
  } catch (error) {
    await unlink(tmp).catch(() => {});
    throw error;
  }
  if (options.durability === 'strict') await syncDirectory(path.dirname(options.target));
}

/** Makes the directory's entries (renames, unlinks) durable. */
export async function syncDirectory(directory: string): Promise<void> {
  const handle = await open(directory, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}
