import { AssistantError } from '@assistant/errors';
import type { TaskQueue, TaskState } from './interfaces.ts';

export interface MigrateTasksOptions {
  source: TaskQueue;
  target: TaskQueue;
  /** Count what would move, move nothing. @default false */
  dryRun?: boolean;
  /** Told about each task as it moves (or would). */
  onTask?: (id: string, state: TaskState, outcome: 'moved' | 'already there' | 'left') => void;
}

export interface MigrateReport {
  /** Tasks now in the target (and gone from the source), per state they were in. */
  moved: Record<TaskState, number>;
  /** Tasks the target had already (a migration run again after it stopped halfway): removed from the source. */
  alreadyThere: number;
  /** Tasks still active in the source after recovery (a worker's claim within its grace): run again later. */
  leftActive: string[];
  /** Things in the source that are not tasks at all (a stray file): left where they are. */
  unreadable: string[];
}

/**
 * Moves every task from one backend to another, keeping ids, attempts, history and results: pending, done and failed
 * as they are, and active tasks of workers that are gone as pending (recovery first counts the attempt they spent).
 * Each task is put in the target before it is removed from the source, so a migration stopped at any point loses
 * nothing: run again, it finds the copies already there and only removes them from the source.
 * Refused (CONFLICT) while a worker is alive on the source: a task it holds could finish on the old backend after
 * its copy started on the new one.
 */
export async function migrateTasks(options: MigrateTasksOptions): Promise<MigrateReport> {
  const { source, target } = options;
  const alive = (await source.workers.list()).filter((worker) => worker.alive);
  if (alive.length > 0) {
    throw new AssistantError(
      'CONFLICT',
      `${alive.length} worker${alive.length === 1 ? ' is' : 's are'} running on the queue being migrated (${alive
        .map((worker) => worker.id)
        .join(', ')})`,
      { hint: 'stop the worker (and `assistant start`) before migrating, then run the migration again' },
    );
  }
  const report: MigrateReport = {
    moved: { pending: 0, active: 0, done: 0, failed: 0 },
    alreadyThere: 0,
    leftActive: [],
    unreadable: [],
  };
  if (!options.dryRun) await source.recover();
  // Pending first: what still has to run is safe before the history is.
  for (const state of ['pending', 'active', 'failed', 'done'] as const satisfies readonly TaskState[]) {
    for (const entry of await source.list({ state })) {
      const id = entry.name?.id;
      if (id === undefined) {
        report.unreadable.push(entry.location);
        continue;
      }
      if (state === 'active' && !options.dryRun) {
        report.leftActive.push(id);
        options.onTask?.(id, state, 'left');
        continue;
      }
      if (options.dryRun) {
        report.moved[state] += 1;
        options.onTask?.(id, state, 'moved');
        continue;
      }
      const record = await source.get(id);
      // Moved on since the listing (a retry by hand, a prune): the next run picks it up where it is now.
      if (!record) continue;
      if (!record.task) {
        report.unreadable.push(record.location);
        continue;
      }
      const outcome = await target.importTask(record.task, record.state);
      await source.remove(id);
      if (outcome === 'exists') report.alreadyThere += 1;
      else report.moved[record.state] += 1;
      options.onTask?.(id, record.state, outcome === 'exists' ? 'already there' : 'moved');
    }
  }
  return report;
}
