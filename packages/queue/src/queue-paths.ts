import path from 'node:path';

/** The states a task can be in; `tmp/` holds writes in progress and is not a state. */
export const taskStates = ['pending', 'active', 'done', 'failed'] as const;
export type TaskState = (typeof taskStates)[number];

export interface QueuePaths {
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
