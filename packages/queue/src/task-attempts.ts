import { scrubSecrets } from '@assistant/errors';
import { backoffDelayMs } from './backoff.ts';
import type { QueuePolicy } from './queue-config.ts';
import { DelayedError, UnrecoverableError } from './task-errors.ts';
import type { Task } from './task-file.ts';

/**
 * What a handler's error makes of a claimed task, the same for every backend: `DelayedError` puts it back until its
 * time without counting the attempt; `UnrecoverableError`, or any error once attempts are spent, fails it; anything
 * else retries it after the backoff. Each attempt's error is kept in the history. `message` is the line to log
 * (none for a failure: the worker logs that).
 */
export type FailureDecision =
  | { outcome: 'delayed' | 'retrying'; task: Task; readyAtMs: number; message: string }
  | { outcome: 'failed'; task: Task };

export function decideFailure(task: Task, error: unknown, policy: QueuePolicy, nowMs: number): FailureDecision {
  const finishedAt = new Date(nowMs).toISOString();
  const taskError = toTaskError(error);
  if (error instanceof DelayedError) {
    const readyAtMs = Math.max(nowMs, Math.floor(error.untilMs));
    return {
      outcome: 'delayed',
      task: { ...task, attempts: task.attempts - 1 },
      readyAtMs,
      message: `task ${task.id} (${task.type}) delayed until ${new Date(readyAtMs).toISOString()}: ${taskError.message}`,
    };
  }
  const history = [...task.history, ...attemptOf(task, finishedAt, taskError)];
  if (error instanceof UnrecoverableError || task.attempts >= task.maxAttempts) {
    return { outcome: 'failed', task: { ...task, history, finishedAt, error: taskError } };
  }
  const readyAtMs = nowMs + backoffDelayMs(policy.backoff, task.attempts);
  return {
    outcome: 'retrying',
    task: { ...task, history },
    readyAtMs,
    message: `task ${task.id} (${task.type}) attempt ${task.attempts} of ${task.maxAttempts} failed (${taskError.message}); retrying at ${new Date(readyAtMs).toISOString()}`,
  };
}

/**
 * An error as a task records it, scrubbed of every loaded secret (an LLM endpoint that echoes the Authorization
 * header in its error body must not put the token into failed/ or the history).
 */
export function toTaskError(error: unknown): { type: string; message: string; stack?: string } {
  if (error instanceof Error) {
    return {
      type: scrubSecrets(error.name),
      message: scrubSecrets(error.message),
      ...(error.stack ? { stack: scrubSecrets(error.stack) } : {}),
    };
  }
  return { type: 'Error', message: scrubSecrets(describeThrown(error)) };
}

/** Text for a thrown value that is not an Error: `{"code":42}` says more than `[object Object]`. */
function describeThrown(value: unknown): string {
  if (typeof value === 'string') return value;
  if (value !== null && typeof value === 'object') {
    try {
      const json = JSON.stringify(value);
      if (json !== undefined) return `non-Error thrown: ${json.length > 500 ? `${json.slice(0, 500)}…` : json}`;
    } catch {
      // A cycle or a throwing toJSON: fall back to String().
    }
  }
  return `non-Error thrown: ${String(value)}`;
}

/** The error recorded for an attempt whose worker vanished without finishing it. */
export function workerDiedError(task: Task): { type: string; message: string } {
  const worker = task.worker;
  return {
    type: 'WorkerDied',
    message: worker
      ? `worker died: ${worker.id} (pid ${worker.pid} on ${worker.host}) stopped while running it`
      : 'worker died: a worker claimed it and stopped before recording itself',
  };
}

/**
 * The error recorded when a task's worker vanished while the task was parked (waiting for the owner or for its
 * children, none of its code running): it spends no attempt and does not count toward poison (see poison.ts).
 */
export function workerDiedWhileWaitingError(ownerId: string): { type: string; message: string } {
  return {
    type: 'WorkerDiedWhileWaiting',
    message: `worker died: ${ownerId} stopped while the task was waiting (parked, none of its code running); no attempt spent`,
  };
}

/** The history entry for the attempt `task` records as started, ended by `error`. */
export function attemptOf(task: Task, finishedAt: string, error: { type: string; message: string; stack?: string }) {
  if (task.startedAt === undefined) return [];
  return [
    {
      attempt: task.attempts,
      startedAt: task.startedAt,
      finishedAt,
      ...(task.worker ? { worker: task.worker.id } : {}),
      error,
    },
  ];
}
