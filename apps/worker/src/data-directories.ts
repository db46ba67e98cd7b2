import type { ConfigPaths } from '@assistant/config';
import { dataDirectories, type MadePrivate, makeDirectoriesPrivate } from '@assistant/process';

// The list lives beside makeDirectoriesPrivate, so the server makes the same directories private.
export { dataDirectories, queueDirectoryNames } from '@assistant/process';

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
