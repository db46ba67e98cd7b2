import path from 'node:path';

import type { TaskName, TaskState } from './interfaces.ts';
import { decodeTaskName } from './task-name.ts';

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

/** What a file name in a state's directory says about its task; undefined when it is not a task's name. */
export function decodeStateName(_state: TaskState, fileName: string): TaskName | undefined {
  return decodeTaskName(fileName);
}
