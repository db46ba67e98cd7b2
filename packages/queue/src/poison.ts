import type { TaskAttempt, TaskError } from './task-file.ts';

/**
 * How many times a task's worker may die while running it before the task is failed as poison rather than run again.
 * Two: one death can be bad luck (an out-of-memory kill, a power cut, an unrelated bug in another task); a second
 * while running the same task means the task itself brings the worker down (a handler that exits the process, an
 * endless synchronous loop the watchdog kills, an MCP answer that crashes it), and a third run would only do it again.
 * A death while the task was parked (`WorkerDiedWhileWaiting`: waiting for the owner or its children, none of its code
 * running) is not counted: the task cannot have caused it (decision 0062).
 */
export const poisonWorkerDeaths = 2;

/** What recovery does with a task whose worker died while running it. */
export type WorkerDeathDecision = { outcome: 'requeue' } | { outcome: 'poisoned'; error: TaskError };

/**
 * Decides, from the history of a task whose worker just died (that death's `WorkerDied` entry already in it), whether
 * it may run again or is poison: failed with `poison: its worker died while running it N times`. The same rule for
 * every backend; spent attempts are the caller's other reason to fail it.
 */
export function decideAfterWorkerDied(history: readonly Pick<TaskAttempt, 'error'>[]): WorkerDeathDecision {
  const deaths = history.filter((attempt) => attempt.error.type === 'WorkerDied').length;
  if (deaths < poisonWorkerDeaths) return { outcome: 'requeue' };
  return {
    outcome: 'poisoned',
    error: { type: 'PoisonTask', message: `poison: its worker died while running it ${deaths} times` },
  };
}
