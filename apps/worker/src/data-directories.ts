import path from 'node:path';
import type { ConfigPaths } from '@assistant/config';
import { type MadePrivate, makeDirectoriesPrivate } from '@assistant/process';

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

/**
 * Creates the data directories that are missing (0700), and makes existing ones the owner's alone (group and other
 * permissions removed; their contents are left as they are). Returns the directories whose modes changed.
 */
export async function ensureDataDirectories(options: EnsureDataDirectoriesOptions): Promise<MadePrivate[]> {
  return makeDirectoriesPrivate(dataDirectories(options.paths));
}
