import type { HumanLogEntry } from '@assistant/notes';
import { type JsonValue, type Task, UnrecoverableError } from '@assistant/queue';
import type { Logger } from 'pino';
import * as z from 'zod';

/** What a handler gets to run one task. */
export interface TaskContext {
  task: Task;
  payload: JsonValue;
  /** Aborted on timeout and on shutdown; handlers pass it to everything they await. */
  signal: AbortSignal;
  logger: Logger;
  /**
   * Writes a line to today's human log, the breadcrumb a person reads: what happened and why. The source defaults
   * to the task's integration and type.
   */
  human: (message: string, details?: Omit<HumanLogEntry, 'message' | 'source'> & { source?: string }) => Promise<void>;
}

/** Runs one task and returns its result (plain JSON data). Throw RetryableError, UnrecoverableError or DelayedError to steer it. */
export type TaskHandler = (context: TaskContext) => Promise<unknown>;

const sleepPayload = z.strictObject({ ms: z.int().min(0).max(86_400_000) });

/**
 * Diagnostic task types, there until the runtime brings integrations: `system.echo` returns its payload,
 * `system.sleep` (`{ms}`) waits and can be stopped. They prove a queue and a worker end to end.
 */
export function builtinHandlers(): Map<string, TaskHandler> {
  return new Map<string, TaskHandler>([
    [
      'system.echo',
      async ({ payload, task, human }) => {
        await human(`echoed task ${task.id}`, { reason: 'system.echo returns its payload' });
        return payload;
      },
    ],
    [
      'system.sleep',
      async ({ payload, signal }) => {
        const checked = sleepPayload.safeParse(payload);
        // The same payload fails the same way on every attempt: fail it now rather than retry it.
        if (!checked.success) {
          const issue = checked.error.issues[0];
          const where = issue?.path.length ? `payload.${issue.path.join('.')}` : 'payload';
          throw new UnrecoverableError(
            `system.sleep expects a payload like {"ms": 1000} (0 to 86400000 ms); ${where}: ${issue?.message}`,
          );
        }
        const { ms } = checked.data;
        await new Promise<void>((resolve, reject) => {
          const timer = setTimeout(() => {
            signal.removeEventListener('abort', onAbort);
            resolve();
          }, ms);
          const onAbort = () => {
            clearTimeout(timer);
            reject(signal.reason instanceof Error ? signal.reason : new Error(String(signal.reason)));
          };
          if (signal.aborted) onAbort();
          else signal.addEventListener('abort', onAbort, { once: true });
        });
        return { sleptMs: ms };
      },
    ],
  ]);
}
