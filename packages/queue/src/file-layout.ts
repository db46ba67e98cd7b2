import path from 'node:path';

import type { TaskName, TaskState } from './interfaces.ts';
import { decodeTaskName, maxTaskTypeLength } from './task-name.ts';

export { type TaskState, taskStates } from './interfaces.ts';

// The file backend's layout, private to this package: one directory per state (`tmp/` holds writes in progress and
// is not a state), one YAML file per task, its name the index (see task-name.ts).

export interface QueuePaths extends Record<TaskState, string> {
  root: string;
  tmp: string;
  pending: string;
  active: string;
  done: string;
  failed: string;
  /** One heartbeat file per running worker: the lease behind every task it holds in active/. */
  workers: string;
  /**
   * One empty-ish marker per parked claim (a held task waiting for the owner or its children, none of its code
   * running), named as its claim is in active/, `{name}@{owner}.yaml`: recovery finds it by the claim's name.
   */
  parked: string;
}

export function queuePaths(root: string): QueuePaths {
  return {
    root,
    tmp: path.join(root, 'tmp'),
    pending: path.join(root, 'pending'),
    active: path.join(root, 'active'),
    done: path.join(root, 'done'),
    failed: path.join(root, 'failed'),
    workers: path.join(root, 'workers'),
    parked: path.join(root, 'parked'),
  };
}

/** The suffix of the file that says why a file is in failed/ when the file itself could not be read as a task. */
export const reasonSuffix = '.error.txt';

/** Names a person's editor or another tool leaves around while it writes; never tasks, never quarantined. */
export function isScratchName(fileName: string): boolean {
  return (
    fileName.startsWith('.') ||
    fileName.endsWith('~') ||
    fileName.endsWith('.swp') ||
    fileName.endsWith('.tmp') ||
    fileName.endsWith('.part') ||
    fileName.endsWith(reasonSuffix)
  );
}

/**
 * A claimed task's name in active/: its pending name with the claimer's worker id before `.yaml`,
 * `{name}@{owner}.yaml`, so a claim is one rename and recovery still knows whose it is. While a recovery pass
 * returns it, it is renamed `{name}@{owner}+{token}.yaml` first: only one recoverer can win that rename. A name
 * without `@` is a claim of the layout before (its owner recorded inside the file).
 */
export interface ActiveName {
  /** The task's name in pending/, done/ and failed/. */
  taskFileName: string;
  /** The claimer's worker id; undefined for the layout before. */
  ownerId: string | undefined;
  /** Set while a recovery pass is returning it. */
  recoveryToken: string | undefined;
}

/** A file name's limit on every filesystem we run on (ext4, xfs, btrfs, apfs, tmpfs), in bytes. */
const maxFileNameBytes = 255;
/** `{p}_{YYYYMMDDTHHMMSSmmmZ}_{id}--{fingerprint}--{type}.yaml` with the longest type: 173 bytes. */
const maxTaskFileNameBytes =
  '0_20261122T154501123Z_'.length + 26 + '--'.length + 16 + '--'.length + maxTaskTypeLength + 5;
/**
 * The longest worker id: what the longest active name, `{name}@{owner}+{token}.yaml` with the longest type, leaves
 * within {@link maxFileNameBytes} (72). Worker ids are ASCII, so characters are bytes.
 */
export const maxWorkerIdLength = maxFileNameBytes - maxTaskFileNameBytes - '@'.length - '+12345678'.length;

/** Throws a RangeError naming the rule when `ownerId` cannot be put into an active/ name. */
export function assertWorkerId(ownerId: string): void {
  if (!/^[A-Za-z0-9][A-Za-z0-9-]*$/.test(ownerId) || ownerId.length > maxWorkerIdLength) {
    throw new RangeError(
      `Expected a worker id of at most ${maxWorkerIdLength} letters, digits and dashes (not starting with a dash), got \`${ownerId}\``,
    );
  }
}

const activePattern = /^(.+)@([A-Za-z0-9][A-Za-z0-9-]*)(?:\+([0-9a-f]{8}))?\.yaml$/;

export function activeFileName(taskFileName: string, ownerId: string, recoveryToken?: string): string {
  assertWorkerId(ownerId);
  return `${taskFileName.slice(0, -'.yaml'.length)}@${ownerId}${recoveryToken === undefined ? '' : `+${recoveryToken}`}.yaml`;
}

export function parseActiveName(fileName: string): ActiveName {
  const match = activePattern.exec(fileName);
  if (!match) return { taskFileName: fileName, ownerId: undefined, recoveryToken: undefined };
  return { taskFileName: `${match[1]}.yaml`, ownerId: match[2], recoveryToken: match[3] };
}

/** What a file name in a state's directory says about its task; undefined when it is not a task's name. */
export function decodeStateName(state: TaskState, fileName: string): TaskName | undefined {
  return decodeTaskName(state === 'active' ? parseActiveName(fileName).taskFileName : fileName);
}
