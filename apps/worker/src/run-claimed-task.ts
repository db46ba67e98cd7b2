import { actionFailureOf, checkActTask, recordActionOutcome, withdrawTaskToolCalls } from '@assistant/actions';
import { HandlerLoadError, type TaskHandler } from '@assistant/integration-host';
import { findModelUnavailable } from '@assistant/llm';
import { describePause, findPause, type PauseState, PauseStore } from '@assistant/notes';
import {
  type ClaimedTask,
  DelayedError,
  type FailOutcome,
  type JsonValue,
  outageDelay,
  RetryableError,
  type Task,
  type TaskConsumer,
  toTaskError,
  UnrecoverableError,
} from '@assistant/queue';
import type { Logger } from 'pino';
import { createHandlerContext, type TaskSlot } from './create-handler-context.ts';
import type { OutageLog } from './outage-log.ts';
import { timerDelayMs } from './timer-delay.ts';
import type { WorkerServices } from './worker-services.ts';

/** Finds the handler of a task type; undefined when none handles it, a rejection when its module is broken. */
export interface HandlerLookup {
  get(type: string): TaskHandler | undefined | Promise<TaskHandler | undefined>;
}

/**
 * How long a task of a paused integration instance waits in pending/ before it is looked at again: it runs within
 * this long of the instance being resumed. Not an attempt: a pause can last days without failing anything.
 */
const pausedRecheckMs = 30_000;

/** The shortest wait for an unavailable model: a retry time already past must not spin the task. */
const minimumModelWaitMs = 1_000;

/** A task that ran past its policy's `timeout`. Retryable: the next attempt may be quicker (a slow API, a busy LLM). */
class TaskTimeoutError extends RetryableError {
  override name = 'TaskTimeoutError';
}

/**
 * How a task's run ended: `released` went back to pending/ unrun because the worker stopped; `unrecorded` means the
 * outcome could not be written (disk full, permissions), so the file stays where it was and recovery will see it.
 */
export type TaskOutcome = 'done' | 'retrying' | 'delayed' | 'failed' | 'released' | 'unrecorded';

/** One finished run of a task, as metrics and circuit breakers see it. */
export interface TaskOutcomeReport {
  type: string;
  outcome: TaskOutcome;
  durationMs: number;
  /** The error's message, for outcomes other than done and released. */
  error?: string;
  /**
   * The task failed with an UnrecoverableError: the fault is in this one task (its input, a refused action, a
   * missing handler), not in what its type depends on, so it says nothing to the type's breaker.
   */
  unrecoverable?: boolean;
}

export interface RunClaimedTaskOptions {
  claimed: ClaimedTask;
  consumer: TaskConsumer;
  /** The handler of a type: a Map, or the registry's, which imports each handler module on first use. */
  handlers: HandlerLookup;
  services: WorkerServices;
  logger: Logger;
  /** Told every outcome, for metrics and circuit breakers; errors it throws are logged and ignored. */
  onOutcome?: (report: TaskOutcomeReport) => Promise<void> | void;
  /** Runs after a task reached done/ (service result routes); must not throw. */
  afterDone?: (task: Task, result: JsonValue, logger: Logger) => Promise<void>;
  /** Aborted when the worker stops waiting for running tasks at shutdown: the task goes back to pending/. */
  stopSignal: AbortSignal;
  /**
   * Called once the handler has returned or thrown, before the outcome is written: the worker may start the next
   * handler while this one's outcome goes to disk.
   */
  onHandlerSettled?: () => void;
  /** The task's worker slot, which its agent loops give back while they wait for the owner. */
  slot?: TaskSlot;
  /**
   * Where retries caused by a dependency that is down are counted: the first of an outage is a WARN line, the rest
   * debug, and the next success of the same type and instance ends it. Without it, retries are debug lines.
   */
  outages?: OutageLog;
}

/**
 * Runs one claimed task with its handler under the type's timeout and records the outcome: done/, a retry, a
 * delay, failed/, or back to pending/ when the worker stops it. Never rejects: a worker must outlive its tasks.
 */
export async function runClaimedTask(options: RunClaimedTaskOptions): Promise<TaskOutcome> {
  const { claimed, consumer, stopSignal } = options;
  const { task } = claimed;
  const timeoutMs = options.services.queue.policyFor(task.type).timeoutMs;
  // A timer cleared when the task ends: AbortSignal.timeout's cannot be, and kept every finished task's signal (and
  // what hung on it) alive until its timeout, thousands of them through a big backlog.
  const timeoutController = new AbortController();
  const timeoutTimer = setTimeout(
    () => timeoutController.abort(new DOMException('The operation timed out.', 'TimeoutError')),
    timerDelayMs(timeoutMs),
  );
  timeoutTimer.unref();
  const timeout = timeoutController.signal;
  const signal = AbortSignal.any([stopSignal, timeout]);
  const logger = options.logger.child({ task: task.id, type: task.type });
  const label = `task ${task.id} (${task.type})`;
  const startedMs = performance.now();
  // Per-task lines are debug: a batch of 20 mails is 80 tasks, which the worker sums up in one line (TaskSummary).
  logger.debug(`${label} started, attempt ${task.attempts} of ${task.maxAttempts}`);
  // Awaited before returning, so a worker that exits when idle has recorded every outcome first.
  const reports: Promise<void>[] = [];
  const finished = (outcome: TaskOutcome, error?: unknown) => {
    const durationMs = Math.round(performance.now() - startedMs);
    reports.push(
      report(options, logger, {
        type: task.type,
        outcome,
        durationMs,
        ...(error === undefined ? {} : { error: toTaskError(error).message }),
        ...(error instanceof UnrecoverableError ? { unrecoverable: true } : {}),
      }),
    );
    return { outcome, durationMs, text: formatDuration(durationMs) };
  };

  const settled = await settle(() => runHandler(options, signal, logger));
  clearTimeout(timeoutTimer);
  options.onHandlerSettled?.();
  try {
    let error: unknown;
    let failed: FailOutcome | undefined;
    let modelDown = false;
    if (settled.ok) {
      // In the ledger before done/: a crash in between runs the task again, and its event is the same one (by id).
      await emitTaskEvent(options, 'task.done');
      // The queue checks the result (depth, plain JSON data) and fails the task with the reason when it cannot keep it.
      const recorded = await consumer.complete(claimed, settled.value);
      if (recorded.state === 'done') {
        const { text, ...fields } = finished('done');
        logger.debug(fields, `${label} done in ${text}`);
        options.outages?.recovered(outageKeyOf(task));
        await recordOutcome(options, logger, { outcome: 'done' });
        // After completion: the result is safe in done/ whatever happens to its routes.
        await options.afterDone?.(task, recorded.result, logger);
        return 'done';
      }
      error = recorded.error;
      failed = recorded.state;
    } else if (stopSignal.aborted && signal.reason === stopSignal.reason) {
      // Stopped by the worker, not by its own timeout (whichever came first is the combined signal's reason).
      await consumer.release(claimed);
      const { text, ...fields } = finished('released');
      logger.info(fields, `${label} stopped by shutdown; back in pending/ after ${text}`);
      return 'released';
    } else {
      error = timeout.aborted ? new TaskTimeoutError(`timed out after ${timeoutMs}ms`) : settled.error;
      modelDown = findModelUnavailable(error) !== undefined;
      error = modelWait(task, error) ?? error;
    }
    const outcome = failed ?? (await consumer.fail(claimed, error));
    const { text, ...fields } = finished(outcome, error);
    const message = toTaskError(error).message;
    if (outcome === 'failed') {
      logger.warn(fields, `${label} failed in ${text}: ${message}`);
      // Only once failed/ holds it (a retry is not a failure): a crash in this instant loses the event, said in docs/events.md.
      await emitTaskEvent(options, 'task.failed', error).catch((emitError: unknown) =>
        logger.error({ err: emitError }, `${label}: could not write its task.failed event`),
      );
      await recordOutcome(options, logger, { outcome: 'failed', error });
    } else {
      // A model that is down is the model watcher's outage (run-worker), logged as its breaker opens and closes;
      // any other retry is an outage of the type's dependency (an IMAP server, GitHub), logged once as it starts.
      if (!modelDown) options.outages?.failing({ key: outageKeyOf(task), what: outageNameOf(task), message });
      logger.debug(
        fields,
        outcome === 'delayed'
          ? `${label} delayed after ${text}: ${message}`
          : `${label} failed in ${text}, will retry: ${message}`,
      );
    }
    return outcome;
  } catch (error) {
    logger.error({ err: error }, `${label}: could not record the outcome; recovery will return it to pending/`);
    finished('unrecorded');
    return 'unrecorded';
  } finally {
    await Promise.all(reports);
  }
}

/** The outage a retry of this task counts toward: its type's dependency, for its instance. */
function outageKeyOf(task: Task): string {
  return `task:${task.integration ?? ''}/${task.type}`;
}

/** The dependency as the outage lines name it: `email.inbox.check (personal)`. */
function outageNameOf(task: Task): string {
  return task.integration ? `${task.type} (${task.integration})` : task.type;
}

/**
 * A handler error caused by an unavailable model, as a delay until the model may take calls again: the task is not
 * at fault, so no attempt is spent and its type's breaker is not told. Undefined for any other error, and once the
 * task is a day old.
 */
function modelWait(task: Task, error: unknown): DelayedError | undefined {
  const unavailable = findModelUnavailable(error);
  if (!unavailable) return undefined;
  const untilMs = Math.max(unavailable.retryAtMs, Date.now() + minimumModelWaitMs);
  return outageDelay(
    task,
    untilMs,
    `the LLM profile \`${unavailable.profile}\` is unavailable (${unavailable.message}); waiting until ${new Date(untilMs).toISOString()}`,
  );
}

/** The handler's result, raced with the signal: a handler that ignores it must not hold its slot (and task) forever. */
async function runHandler(options: RunClaimedTaskOptions, signal: AbortSignal, logger: Logger): Promise<unknown> {
  const { task } = options.claimed;
  let handler: TaskHandler | undefined;
  try {
    // Raced with the signal: a module whose top-level code never settles must not hold the slot past the timeout.
    handler = await raceSignal(Promise.resolve(options.handlers.get(task.type)), signal);
  } catch (error) {
    if (signal.aborted) throw error;
    // The message names the manifest's file and line. A module that did not load is imported again by the next
    // attempt (a file fixed or a package installed meanwhile is picked up); a missing or non-function export can
    // only be fixed in the code, after which `assistant task retry` runs the task.
    logger.error({ err: error }, `the handler of ${task.type} cannot be loaded`);
    const message = `the handler of ${task.type} cannot be loaded: ${error instanceof Error ? error.message : String(error)}`;
    throw error instanceof HandlerLoadError && error.importFailed
      ? new RetryableError(message)
      : new UnrecoverableError(message);
  }
  if (!handler) throw new UnrecoverableError(`no handler for task type ${task.type}`);
  // Read for every task (one small file), so a pause or resume from the CLI, the API, the dashboard or a hand edit
  // applies to the next task without a restart. A note that cannot be read pauses nothing: it is reported where it
  // is shown (health, dashboard, `assistant paused`), and work goes on as configured.
  const readPauses = options.services.pauses ?? (() => new PauseStore({ notes: options.services.notes }).read());
  const pauses: PauseState = await readPauses().catch((error: unknown) => {
    logger.warn({ err: error }, 'could not read the pause note; nothing is treated as paused');
    return { entries: [], problems: [] };
  });
  const context = createHandlerContext({
    services: options.services,
    task,
    signal,
    logger,
    pauses,
    ...(options.slot ? { slot: options.slot } : {}),
  });
  if ('problem' in context) throw new UnrecoverableError(context.problem);
  const pausedInstance = findPause(pauses, 'instance', context.instance.name);
  if (pausedInstance) {
    // The task waits (not failed, no attempt spent) and is looked at again until the instance is resumed.
    throw new DelayedError(
      Date.now() + (options.services.pausedRecheckMs ?? pausedRecheckMs),
      `integration instance ${context.instance.name} is ${describePause(pausedInstance)}; the task waits until it is resumed`,
    );
  }
  const { registry } = options.services;
  if (registry) {
    const refused = await checkActTask({
      registry,
      notes: options.services.notes,
      task,
      scripts: options.services.config.scripts,
    });
    if (refused) {
      await options.services.humanLog.write({
        source: task.integration ? `${task.integration}/${task.type}` : task.type,
        message: `refused to act (task ${task.id})`,
        reason: refused,
      });
      throw new ActRefusedError(`refused: ${refused}`);
    }
  }
  const lastError = task.history.at(-1)?.error.type;
  if (lastError === 'WorkerDied' || lastError === 'WorkerDiedWhileWaiting') {
    // The loops of the attempt whose worker died are gone, and with them whoever waited on their tool calls' requests
    // (a task parked while it waited for one among them).
    await withdrawTaskToolCalls({
      notes: options.services.notes,
      humanLog: options.services.humanLog,
      taskId: task.id,
      why: `the worker running task ${task.id} died before a decision; the task runs again and asks again for what it still needs`,
    });
  }
  signal.throwIfAborted();
  // A handler that throws synchronously (not an async function) is still just a failed task.
  return await raceSignal(
    Promise.resolve().then(() => handler(context)),
    signal,
  );
}

/**
 * The act gate's refusal: it wrote its own line in the human log ("refused to act"), so the outcome is recorded on
 * the approval without a second, `FAILED:` line. Its name stays `UnrecoverableError`: the failed task's error type is
 * what people and scripts read.
 */
class ActRefusedError extends UnrecoverableError {}

/**
 * How an action task ended, where the owner looks: a `FAILED:` line in the human log and the outcome on the approval
 * it ran under (see `recordActionOutcome`). Never throws: the outcome is on disk in done/ or failed/ already.
 */
async function recordOutcome(
  options: RunClaimedTaskOptions,
  logger: Logger,
  ended: { outcome: 'done' } | { outcome: 'failed'; error: unknown },
): Promise<void> {
  try {
    await recordActionOutcome({
      notes: options.services.notes,
      humanLog: options.services.humanLog,
      task: options.claimed.task,
      outcome: ended.outcome,
      ...(ended.outcome === 'failed'
        ? { failure: actionFailureOf(ended.error), logFailure: !(ended.error instanceof ActRefusedError) }
        : {}),
    });
  } catch (error) {
    logger.warn({ err: error }, 'recording the action outcome in the human log and on its approval failed');
  }
}

async function report(options: RunClaimedTaskOptions, logger: Logger, outcome: TaskOutcomeReport): Promise<void> {
  try {
    await options.onOutcome?.(outcome);
  } catch (error) {
    logger.warn({ err: error }, 'recording the outcome for metrics and circuit breakers failed');
  }
}

type Settled = { ok: true; value: unknown } | { ok: false; error: unknown };

async function settle(run: () => Promise<unknown>): Promise<Settled> {
  try {
    return { ok: true, value: await run() };
  } catch (error) {
    return { ok: false, error };
  }
}

function formatDuration(durationMs: number): string {
  return durationMs < 1_000 ? `${durationMs}ms` : `${(durationMs / 1_000).toFixed(1)}s`;
}

/** `promise`, or the signal's reason as soon as it aborts. */
function raceSignal<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(error);
      },
    );
  });
}

/**
 * `task.done` or `task.failed` in the event ledger, with the task as its cause. The native id is the task's id and
 * its attempt: a task retried by hand and failing again is a new event, a repeat of the same run is not.
 */
async function emitTaskEvent(
  options: RunClaimedTaskOptions,
  type: 'task.done' | 'task.failed',
  error?: unknown,
): Promise<void> {
  const events = options.services.events;
  if (!events) return;
  const { task } = options.claimed;
  const failure = error === undefined ? undefined : toTaskError(error);
  const code = (error as { code?: unknown } | undefined)?.code;
  await events.emit({
    type,
    source: 'queue',
    nativeId: `${task.id}:${task.attempts}`,
    causedBy: [task.id],
    data: {
      task: task.id,
      task_type: task.type,
      ...(task.integration === undefined ? {} : { integration: task.integration }),
      attempts: task.attempts,
      ...(typeof code === 'string' ? { error_code: code } : {}),
      ...(failure === undefined ? {} : { error: failure.message.slice(0, 500) }),
    },
  });
}
