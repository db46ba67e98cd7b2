import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import type { ConfigPaths } from '@assistant/config';

/** The queue's state directories, in the order a task moves through them. */
export const queueDirectoryNames = ['tmp', 'pending', 'active', 'done', 'failed'] as const;

/** Every directory the worker writes to: the data dir, the queue and its states, notes, logs, control. */
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

export interface EnsureDataDirectoriesOptions {
  paths: ConfigPaths;
}

/** Creates the data directories that are missing; existing ones and their contents are left as they are. */
export async function ensureDataDirectories(options: EnsureDataDirectoriesOptions): Promise<string[]> {
  const directories = dataDirectories(options.paths);
  for (const directory of directories) await mkdir(directory, { recursive: true, mode: 0o700 });
  return directories;
}
