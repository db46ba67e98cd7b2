import type { LoadedConfig } from '@assistant/config';
import { HumanLog } from '@assistant/notes';
import { type ClaimedTask, QueueConsumer, TaskQueue, UnrecoverableError } from '@assistant/queue';
import type { Logger } from 'pino';
import { ensureDataDirectories } from './data-directories.ts';
import { builtinHandlers, type TaskHandler } from './task-handlers.ts';

export interface RunWorkerOptions {
  config: LoadedConfig;
  logger: Logger;
  /** Aborting it stops the worker: no new claims, running tasks get `worker.shutdown_grace` to finish. */
  signal: AbortSignal;
  /** Tasks run at once. @default config.worker.concurrency */
  concurrency?: number;
  /** Return once nothing runs here and no task is ready or active anywhere. @default false */
  exitWhenIdle?: boolean;
  /** @default the built-in diagnostic handlers */
  handlers?: Map<string, TaskHandler>;
}

/** Why a task's signal was aborted, so the error it fails with says so. */
class ShutdownAbort extends Error {
  override name = 'ShutdownAbort';
}

/**
 * The worker: claims ready tasks in run order, runs each with its handler under a timeout, and completes, retries
 * or fails it. On shutdown it stops claiming, gives running tasks the grace period, then aborts them and returns
 * the unfinished ones to pending/ without counting the attempt.
 */
export async function runWorker(options: RunWorkerOptions): Promise<void> {
  const { config, logger, signal } = options;
  const concurrency = options.concurrency ?? config.worker.concurrency;
  const handlers = options.handlers ?? builtinHandlers();
  await ensureDataDirectories({ paths: config.paths });
  const queue = await TaskQueue.open({
    directory: config.paths.queue,
    settings: config.queue,
    logger: { info: (message) => logger.info(message), warn: (message) => logger.warn(message) },
  });
  const consumer = new QueueConsumer(queue, { pollIntervalMs: config.worker.pollIntervalMs });
  const humanLog = new HumanLog({ directory: config.paths.logs });
  const recovered = await consumer.start();
  if (recovered.requeued.length + recovered.failed.length > 0) {
    logger.warn(
      `recovered ${recovered.requeued.length} tasks of stopped workers to pending/, ${recovered.failed.length} to failed/`,
    );
  }
  logger.info({ worker: consumer.owner.id, concurrency }, `worker ready on ${config.paths.queue}`);

  const running = new Map<string, { claimed: ClaimedTask; abort: AbortController; done: Promise<void> }>();
  // Resolved whenever a running task settles, so the loop wakes to claim the next one.
  let settled: () => void = () => {};
  const nextSettle = () => new Promise<void>((resolve) => (settled = resolve));

  const run = (claimed: ClaimedTask) => {
    const { task } = claimed;
    const abort = new AbortController();
    const policy = queue.policyFor(task.type);
    const timeout = AbortSignal.timeout(policy.timeoutMs);
    const taskSignal = AbortSignal.any([abort.signal, timeout]);
    const startedMs = performance.now();
    const taskLogger = logger.child({ task: task.id, type: task.type });
    taskLogger.info(`task ${task.id} (${task.type}) started, attempt ${task.attempts} of ${task.maxAttempts}`);
    const done = (async () => {
      const handler = handlers.get(task.type);
      try {
        if (!handler) throw new UnrecoverableError(`no handler for task type ${task.type}`);
        // Raced with the signal: a handler that ignores it must not hold its slot (and the task) forever.
        const result = await Promise.race([
          handler({
            task,
            payload: task.payload,
            signal: taskSignal,
            logger: taskLogger,
            human: (message, details = {}) =>
              humanLog.write({
                ...details,
                source: details.source ?? (task.integration ? `${task.integration}/${task.type}` : task.type),
                message,
              }),
          }),
          rejectWhenAborted(taskSignal),
        ]);
        await consumer.complete(claimed, result);
        taskLogger.info(`task ${task.id} (${task.type}) done in ${elapsed(startedMs)}`);
      } catch (caught) {
        if (abort.signal.aborted && abort.signal.reason instanceof ShutdownAbort) {
          await consumer.release(claimed);
          taskLogger.info(`task ${task.id} (${task.type}) stopped by shutdown; back in pending/`);
          return;
        }
        const error = timeout.aborted ? new Error(`timed out after ${policy.timeoutMs}ms`) : caught;
        const outcome = await consumer.fail(claimed, error);
        const message = error instanceof Error ? error.message : String(error);
        if (outcome === 'failed') taskLogger.warn(`task ${task.id} (${task.type}) failed: ${message}`);
      }
    })()
      .catch((error: unknown) => {
        // Moving the file failed (disk full, permissions): the task stays where it is and recovery will see it.
        taskLogger.error({ err: error }, `task ${task.id} (${task.type}): could not record the outcome`);
      })
      .finally(() => {
        running.delete(task.id);
        settled();
      });
    running.set(task.id, { claimed, abort, done });
  };

  const stopped = aborted(signal);
  try {
    while (!signal.aborted) {
      while (running.size < concurrency && !signal.aborted) {
        let claimed: ClaimedTask | undefined;
        try {
          claimed = await consumer.claim();
        } catch (error) {
          logger.error({ err: error }, 'claiming a task failed; trying again after the poll interval');
          break;
        }
        if (!claimed) break;
        run(claimed);
      }
      if (options.exitWhenIdle && running.size === 0 && (await queue.isIdle())) {
        logger.info('queue idle; exiting (--exit-when-idle)');
        break;
      }
      const wake = nextSettle();
      if (running.size >= concurrency) await Promise.race([wake, stopped]);
      else await Promise.race([consumer.waitForWork({ signal }), wake]);
    }
  } finally {
    await drain(running, config.worker.shutdownGraceMs, logger);
    await consumer.close();
  }
  logger.info('stopped');
}

async function drain(
  running: Map<string, { abort: AbortController; done: Promise<void> }>,
  graceMs: number,
  logger: Logger,
): Promise<void> {
  if (running.size === 0) return;
  logger.info(`waiting up to ${graceMs}ms for ${running.size} running tasks`);
  const all = Promise.allSettled([...running.values()].map((entry) => entry.done));
  let timer: NodeJS.Timeout | undefined;
  const graceOver = new Promise<'grace'>((resolve) => {
    timer = setTimeout(() => resolve('grace'), graceMs);
  });
  const first = await Promise.race([all.then(() => 'done' as const), graceOver]);
  clearTimeout(timer);
  if (first === 'done') return;
  logger.info(`stopping ${running.size} tasks still running; they go back to pending/`);
  for (const entry of running.values()) entry.abort.abort(new ShutdownAbort('the worker is shutting down'));
  await all;
}

/** Rejects with the signal's reason once it aborts; never settles otherwise. */
function rejectWhenAborted(signal: AbortSignal): Promise<never> {
  return new Promise((_resolve, reject) => {
    const onAbort = () => reject(signal.reason instanceof Error ? signal.reason : new Error(String(signal.reason)));
    if (signal.aborted) onAbort();
    else signal.addEventListener('abort', onAbort, { once: true });
  });
}

function aborted(signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) resolve();
    else signal.addEventListener('abort', () => resolve(), { once: true });
  });
}

function elapsed(startedMs: number): string {
  const ms = performance.now() - startedMs;
  return ms < 1_000 ? `${ms.toFixed(0)}ms` : `${(ms / 1_000).toFixed(1)}s`;
}
