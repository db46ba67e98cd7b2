import type { TaskQueue } from './interfaces.ts';
import { taskIdPattern } from './task-id.ts';

/** What can be done to many failed tasks at once. */
export const bulkTaskActions = ['retry', 'delete'] as const;
export type BulkTaskAction = (typeof bulkTaskActions)[number];

export interface BulkTaskActionOptions {
  queue: TaskQueue;
  action: BulkTaskAction;
  /** The tasks, by id: only failed ones are acted on. */
  ids: readonly string[];
}

export interface BulkTaskActionResult {
  /** Each task acted on: retried (with where it is now) or deleted. */
  done: { id: string; path?: string }[];
  /** Each task left as it was, and why (not failed any more, no such task, not a task id). */
  refused: { id: string; reason: string }[];
}

/**
 * Retries or deletes failed tasks by id, one by one (the Tasks page's bulk buttons, `POST /api/tasks/bulk`, and
 * `assistant task retry --state failed`). Only a task still in failed/ is touched: one retried or running meanwhile is
 * refused and said so, never deleted; one task's problem does not stop the rest.
 */
export async function runBulkTaskAction(options: BulkTaskActionOptions): Promise<BulkTaskActionResult> {
  const result: BulkTaskActionResult = { done: [], refused: [] };
  for (const id of new Set(options.ids)) {
    if (!taskIdPattern.test(id)) {
      result.refused.push({ id, reason: 'not a task id: 26 lower-case letters and digits' });
      continue;
    }
    try {
      if (options.action === 'retry') {
        // retry() itself moves only a failed task (CONFLICT otherwise).
        const record = await options.queue.retry(id);
        result.done.push({ id, path: record.location });
        continue;
      }
      const record = await options.queue.get(id);
      if (!record) {
        result.refused.push({ id, reason: `no task with id ${id}` });
        continue;
      }
      if (record.state !== 'failed') {
        result.refused.push({ id, reason: `task ${id} is ${record.state}, not failed: only failed tasks are deleted` });
        continue;
      }
      if (await options.queue.remove(id)) result.done.push({ id });
      else result.refused.push({ id, reason: `task ${id} was gone already` });
    } catch (error) {
      result.refused.push({ id, reason: error instanceof Error ? error.message : String(error) });
    }
  }
  return result;
}
