import { chmod, mkdir, stat } from 'node:fs/promises';
import path from 'node:path';
import type { ConfigPaths } from '@assistant/config';

/** The queue's state directories, in the order a task moves through them. */
export const queueDirectoryNames = ['tmp', 'pending', 'active', 'done', 'failed'] as const;

/**
 * Every directory the server and the worker write to: the data dir, the queue and its states, notes, logs, control.
 * Both make them private at start (see makeDirectoriesPrivate).
 */
export function dataDirectories(paths: ConfigPaths): string[] {
  return [
    paths.dataDir,
    paths.queue,
    ...queueDirectoryNames.map((name) => path.join(paths.queue, name)),
    paths.notes,
    paths.logs,
    paths.control,
  ];
}

/** A directory whose group and other permissions were taken away, and the mode it had. */
export interface MadePrivate {
  directory: string;
  /** The permission bits it had, e.g. `0o755`. */
  fromMode: number;
}

/**
 * Creates each directory 0700 when it is missing, and takes group and other permissions away from one that exists
 * with them (a `data/` that came with a git clone is 0755). Data holds mail, transcripts and the API token: it is
 * the owner's alone. A directory owned by another user is left as it is (chmod would fail, and it is not ours to
 * change). Returns what was changed, for a log line.
 */
export async function makeDirectoriesPrivate(directories: readonly string[]): Promise<MadePrivate[]> {
  const changed: MadePrivate[] = [];
  for (const directory of directories) {
    await mkdir(directory, { recursive: true, mode: 0o700 });
    if (process.platform === 'win32') continue;
    const info = await stat(directory);
    const mode = info.mode & 0o777;
    if ((mode & 0o077) === 0 || info.uid !== process.getuid?.()) continue;
    await chmod(directory, mode & 0o700);
    changed.push({ directory, fromMode: mode });
  }
  return changed;
}
