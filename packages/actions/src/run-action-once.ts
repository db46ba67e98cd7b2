import type { NoteStore } from '@assistant/notes';
import { DelayedError, RetryableError, UnrecoverableError } from '@assistant/queue';

/** One entry of an item note's `actions_started`: an action that cannot be undone, recorded as it began. */
export interface ActionStarted {
  action: string;
  task: string;
  at: string;
  /** Set when the action threw: it may or may not have happened. */
  failed_at?: string;
  error?: string;
}

export interface RunActionOnceOptions {
  notes: NoteStore;
  /** The item's note, relative to the notes root. */
  notePath: string;
  /** The action's key (`unsubscribe`, `move:"Bills"`), as in the act payload. */
  key: string;
  /** The task running it, for the record. */
  task: string;
  nowMs?: number;
}

/**
 * Throw from an action run by `runActionOnce` when it certainly did not happen: the SMTP server refused the
 * connection, the login or the message with a reply, DNS did not answer, the web server was unreachable or said
 * "try later". The record that it started is removed, so the task can take it again. With `retryAtMs` (an outage:
 * a server down or saying "try later") the task waits until then without spending an attempt, however long the
 * outage lasts; without it (the server said no) it is retried after its backoff while attempts remain.
 */
export class ActionNotTakenError extends RetryableError {
  override name = 'ActionNotTakenError';
  readonly retryAtMs: number | undefined;

  constructor(message: string, options: { cause?: unknown; retryAtMs?: number } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.retryAtMs = options.retryAtMs;
  }
}

export type RunActionOnceResult<T> = { ran: true; value: T } | { ran: false; startedAt: string; task: string };

/**
 * Runs an action that cannot be undone at most once per item. Under the item note's lock it looks for `key` in the
 * note's `actions_started`; when it is there, the action began before (in this task, a retry of it or another task)
 * and `run` is not called. Otherwise the key is recorded first and `run` called after: a crash in between leaves the
 * action recorded and not done, which is the safe side. A `run` that throws ActionNotTakenError certainly did nothing:
 * its record is removed and the task retried. Any other failure may have done its deed (a timeout after the mail went
 * out), so it is written on the entry and the task fails without retries; a person who knows it did not happen
 * removes the entry (and the one in `actions_taken`) and asks again.
 */
export async function runActionOnce<T>(
  options: RunActionOnceOptions,
  run: () => Promise<T>,
): Promise<RunActionOnceResult<T>> {
  const at = new Date(options.nowMs ?? Date.now()).toISOString();
  let earlier: ActionStarted | undefined;
  await options.notes.update(options.notePath, {
    change: (current) => {
      const list = startedList(current.data.actions_started);
      earlier = list.find((entry) => entry.action === options.key);
      if (earlier) return {};
      const entry: ActionStarted = { action: options.key, task: options.task, at };
      return { set: { actions_started: [...list, entry] as never } };
    },
  });
  if (earlier) return { ran: false, startedAt: earlier.at, task: earlier.task };
  try {
    return { ran: true, value: await run() };
  } catch (error) {
    const mine = (entry: ActionStarted) =>
      entry.action === options.key && entry.task === options.task && entry.at === at;
    const message = error instanceof Error ? error.message : String(error);
    if (error instanceof ActionNotTakenError) {
      // Nothing happened: forget that it started, so the retry takes it.
      const forgotten = await options.notes
        .update(options.notePath, {
          change: (current) => ({
            set: {
              actions_started: startedList(current.data.actions_started).filter((entry) => !mine(entry)) as never,
            },
          }),
        })
        .then(
          () => true,
          () => false,
        );
      if (forgotten) {
        if (error.retryAtMs !== undefined) throw new DelayedError(error.retryAtMs, `${message}; trying again later`);
        throw error;
      }
      // The record stays, so a retry would find it and skip the action as taken: fail for a person to look at instead.
      throw new UnrecoverableError(
        `\`${options.key}\` was not taken (${message}), and its record in ${options.notePath} could not be removed: remove its entries from actions_started and actions_taken and ask again`,
        { cause: error },
      );
    }
    await options.notes
      .update(options.notePath, {
        change: (current) => ({
          set: {
            actions_started: startedList(current.data.actions_started).map((entry) =>
              mine(entry) ? { ...entry, failed_at: new Date().toISOString(), error: message } : entry,
            ) as never,
          },
        }),
      })
      .catch(() => {});
    throw new UnrecoverableError(
      `\`${options.key}\` failed and may have happened anyway, so it is not retried: ${message} (to try again, remove its entries from actions_started and actions_taken in ${options.notePath})`,
      { cause: error },
    );
  }
}

function startedList(value: unknown): ActionStarted[] {
  if (!Array.isArray(value)) return [];
  return value.filter(
    (entry): entry is ActionStarted =>
      entry !== null && typeof entry === 'object' && typeof (entry as { action?: unknown }).action === 'string',
  );
}
