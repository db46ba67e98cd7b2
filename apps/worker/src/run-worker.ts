import { routeServiceResult } from '@assistant/actions';
import type { LoadedConfig } from '@assistant/config';
import { IntegrationRegistry, type TaskHandler } from '@assistant/integration-host';
import { createLlmProfiles } from '@assistant/llm';
import { discoverIntegrations } from '@assistant/manifests';
import { McpServers } from '@assistant/mcp';
import { TaskMetrics, workerProcess } from '@assistant/metrics';
import { HumanLog, NoteStore } from '@assistant/notes';
import { installation } from '@assistant/process';
import {
  type ClaimedTask,
  type JsonValue,
  openFileTaskQueue,
  type Task,
  type TaskConsumer,
  type TaskQueue,
} from '@assistant/queue';
import { describeScriptSandbox, resolveScriptSandbox } from '@assistant/sandbox';
import { CircuitBreakers } from '@assistant/scheduler';
import type { Logger } from 'pino';
import type { WorkerServices } from './create-handler-context.ts';
import { ensureDataDirectories } from './data-directories.ts';
import { type HandlerLookup, runClaimedTask, type TaskOutcomeReport } from './run-claimed-task.ts';
import { timerDelayMs } from './timer-delay.ts';

export interface RunWorkerOptions {
  config: LoadedConfig;
  logger: Logger;
  /** Aborting it stops the worker: no new claims, running tasks get `worker.shutdown_grace` to finish. */
  signal: AbortSignal;
  /** Tasks run at once. @default config.worker.concurrency */
  concurrency?: number;
  /** Return once nothing runs here and no task is ready or active anywhere. @default false */
  exitWhenIdle?: boolean;
  /** The integrations and instances. @default the builtin integrations with `config`'s instances */
  registry?: IntegrationRegistry;
  /** Handlers by task type. @default every handler the registry's manifests name, loaded now */
  handlers?: ReadonlyMap<string, TaskHandler> | HandlerLookup;
  /**
   * The bwrap executable scripts run under. An internal option for tests that need a missing one.
   * @default 'bwrap' (on PATH)
   */
  bubblewrapPath?: string;
  /** An internal option for tests that need to hold a consumer call open: wraps the worker's consumer. */
  wrapConsumer?: (consumer: TaskConsumer) => TaskConsumer;
}

/** `ASSISTANT_LLM_CACHE=replay` (or record, auto, off) overrides `llm_cache.mode` for one run. */
function cacheModeFromEnvironment(): { cacheMode?: 'off' | 'record' | 'replay' | 'auto' } {
  const value = process.env.ASSISTANT_LLM_CACHE;
  return value === 'off' || value === 'record' || value === 'replay' || value === 'auto' ? { cacheMode: value } : {};
}

/** How often changed counters are written for the server's /metrics. */
const metricsIntervalMs = 2_000;
/** How often the snapshot is written even when no counter changed, so its memory figures stay current. */
const memoryIntervalMs = 15_000;

/** Why running tasks were stopped: the grace period of a shutdown ran out. */
class ShutdownAbort extends Error {
  override name = 'ShutdownAbort';
}

/**
 * The worker: claims ready tasks in run order, runs up to `concurrency` of them at once, each with its handler under
 * its timeout, and completes, retries or fails them. On shutdown it stops claiming, gives running tasks the grace
 * period, then aborts them and returns the unfinished ones to pending/ without counting the attempt.
 */
export async function runWorker(options: RunWorkerOptions): Promise<void> {
  const { config, logger, signal } = options;
  const concurrency = options.concurrency ?? config.worker.concurrency;
  const registry =
    options.registry ??
    (options.handlers
      ? undefined
      : new IntegrationRegistry({
          integrations: await discoverIntegrations({ builtinDir: installation.builtinIntegrationsDir }),
          config,
        }));
  // Each handler module is imported when its first task comes (with its libraries: IMAP, SMTP, mail parsing…), so
  // an idle worker holds only what it has run; a manifest naming a missing module still stops it here.
  let handlers: HandlerLookup;
  if (options.handlers) handlers = options.handlers;
  else {
    const lazy = registry as IntegrationRegistry;
    await lazy.checkHandlerModules();
    handlers = { get: (type) => lazy.handler(type) };
  }
  for (const changed of await ensureDataDirectories({ paths: config.paths })) {
    logger.info(`made ${changed.directory} private: mode ${changed.fromMode.toString(8)} → 700`);
  }
  // Said at every start: whether scripts run sandboxed, unsandboxed by the owner's choice, or not at all (bubblewrap
  // asked for and not working here: script.run tasks then fail rather than run unprotected). A config without
  // scripts skips the trial (it can take seconds); runScript tries bubblewrap anyway before every script it runs.
  const bubblewrapPath = options.bubblewrapPath === undefined ? {} : { bubblewrapPath: options.bubblewrapPath };
  const scriptSandbox: WorkerServices['scriptSandbox'] =
    config.worker.sandbox === 'none' ? { mode: 'none' } : { mode: 'bubblewrap', ...bubblewrapPath };
  if (Object.keys(config.scripts).length === 0) {
    logger.info(
      { sandbox: 'unchecked' },
      'no scripts are configured (no `scripts:` in config.yaml), so the script sandbox was not tried',
    );
  } else {
    const sandboxReport = describeScriptSandbox(
      await resolveScriptSandbox({ mode: config.worker.sandbox, ...bubblewrapPath }),
    );
    const sandboxLine = `${sandboxReport.message}${sandboxReport.hint ? `; ${sandboxReport.hint}` : ''}`;
    const sandboxField = { sandbox: { ok: 'bubblewrap', warn: 'none', refused: 'unavailable' }[sandboxReport.state] };
    if (sandboxReport.state === 'ok') logger.info(sandboxField, sandboxLine);
    else logger.warn(sandboxField, sandboxLine);
  }
  const queue = await openFileTaskQueue({
    directory: config.paths.queue,
    dataDirectory: config.paths.dataDir,
    settings: config.queue,
    logger: { info: (message) => logger.info(message), warn: (message) => logger.warn(message) },
  });
  const queueConsumer = queue.consumer({ pollIntervalMs: timerDelayMs(config.worker.pollIntervalMs) });
  const consumer = options.wrapConsumer ? options.wrapConsumer(queueConsumer) : queueConsumer;
  const humanLog = new HumanLog({ directory: config.paths.logs });
  const notes = new NoteStore({ root: config.paths.notes });
  const metrics = new TaskMetrics();
  let metricsChanged = false;
  // Started on first use, shared by every loop here, stopped (with their process groups) when the worker stops.
  const mcp = new McpServers({
    servers: config.mcpServers,
    logger: {
      info: (fields, message) => logger.info(fields, message),
      warn: (fields, message) => logger.warn(fields, message),
    },
  });
  const services: WorkerServices = {
    config,
    queue,
    notes,
    humanLog,
    registry,
    scriptSandbox,
    llm: createLlmProfiles({
      config,
      ...cacheModeFromEnvironment(),
      onUsage: (profile, usage, model) => logger.debug({ profile, model, usage }, 'LLM usage'),
    }),
    mcp,
    onRejected: (type, outcome) => {
      metrics.recordRejection(type, outcome.status);
      metricsChanged = true;
    },
  };
  const breakers = new CircuitBreakers({ notes, settings: config.circuitBreaker, humanLog, logger });
  // A service's result goes where its `on_result` says; a route that fails leaves it in done/ to reroute.
  const afterDone = async (task: Task, result: JsonValue, taskLogger: Logger) => {
    if (!task.type.startsWith('service.')) return;
    try {
      const routed = await routeServiceResult({
        task,
        result,
        notes,
        queue,
        humanLog,
        ...(registry ? { registry } : {}),
      });
      taskLogger.info(routed, `routed the result of ${task.type}`);
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      taskLogger.error({ err: error }, `routing the result of ${task.type} failed; it stays in done/`);
      await humanLog
        .write({
          source: task.type,
          message: `could not deliver the result of task ${task.id}: ${message}`,
          reason: `the result is kept in done/; \`assistant task reroute ${task.id}\` tries again`,
        })
        .catch(() => {});
    }
  };
  // Every failed attempt counts toward the type's breaker and every success resets it; delays, releases at
  // shutdown and unrecorded outcomes say nothing about whether the type works.
  const onOutcome = async (report: TaskOutcomeReport) => {
    metrics.recordOutcome(report.type, report.outcome, report.durationMs);
    metricsChanged = true;
    if (report.outcome === 'done') await breakers.recordSuccess(report.type);
    else if (report.outcome === 'failed' || report.outcome === 'retrying') {
      await breakers.recordFailure(report.type, report.error ?? 'failed');
    }
  };
  const stopTasks = new AbortController();
  // Every task from its claim until its outcome is written (what a shutdown waits for).
  const running = new Set<Promise<unknown>>();
  // Tasks whose handler is still running: what `concurrency` limits. A task whose handler returned frees its slot
  // while its outcome is written, so the next claim and handler overlap that write (its fsync above all). At most
  // 2 × `concurrency` tasks are between their claim and their written outcome, so a slow disk holds claims back
  // instead of piling outcomes up.
  let handlersRunning = 0;
  const hasSlot = () => handlersRunning < concurrency && running.size < 2 * concurrency;
  // The loop sleeps on this; a task settling or the shutdown signal wakes it to claim again or to stop.
  let wakeLoop = () => {};
  const onShutdown = () => wakeLoop();
  signal.addEventListener('abort', onShutdown, { once: true });

  const start = (claimed: ClaimedTask) => {
    handlersRunning += 1;
    let slotFreed = false;
    const freeSlot = () => {
      if (slotFreed) return;
      slotFreed = true;
      handlersRunning -= 1;
      wakeLoop();
    };
    const run = runClaimedTask({
      onHandlerSettled: freeSlot,
      claimed,
      consumer,
      handlers,
      services,
      logger,
      stopSignal: stopTasks.signal,
      onOutcome,
      afterDone,
    });
    running.add(run);
    void run.finally(() => {
      running.delete(run);
      freeSlot();
      wakeLoop();
    });
  };

  // The server sums what every worker publishes for /metrics; the consumer removes it with its lease at close.
  // The snapshot also names the worker and its memory, which the dashboard's overview shows per worker.
  let metricsWrite = Promise.resolve();
  let metricsWrittenAtMs = 0;
  const writeMetrics = () => {
    if (!metricsChanged && Date.now() - metricsWrittenAtMs < memoryIntervalMs) return;
    metricsChanged = false;
    metricsWrittenAtMs = Date.now();
    const snapshot = { ...metrics.snapshot(), ...workerProcess(consumer.owner.id) };
    metricsWrite = metricsWrite
      .then(() => queue.workers.publishMetrics(consumer.owner.id, snapshot as JsonValue))
      .catch((error: unknown) => logger.warn({ err: error }, 'could not write the metrics file'));
  };
  const metricsTimer = setInterval(writeMetrics, metricsIntervalMs);
  metricsTimer.unref();

  try {
    const recovered = await consumer.start();
    if (recovered.requeued.length + recovered.failed.length > 0) {
      logger.warn(
        `recovered ${recovered.requeued.length} tasks of stopped workers to pending/, ${recovered.failed.length} to failed/`,
      );
    }
    writeMetrics();
    logger.info({ worker: consumer.owner.id, concurrency }, `worker ready on ${config.paths.queue}`);
    while (!signal.aborted) {
      // Made before claiming, so a task that settles while we claim still wakes the wait below: no lost wake-ups.
      const settled = new Promise<void>((resolve) => {
        wakeLoop = resolve;
      });
      while (hasSlot() && !signal.aborted) {
        let claimed: ClaimedTask | undefined;
        try {
          claimed = await consumer.claim();
        } catch (error) {
          logger.error({ err: error }, 'claiming a task failed; trying again after the poll interval');
          break;
        }
        if (!claimed) break;
        start(claimed);
      }
      if (options.exitWhenIdle && running.size === 0 && (await settledIdle(queue))) {
        logger.info('queue idle; exiting (--exit-when-idle)');
        break;
      }
      if (signal.aborted) break;
      // With every slot busy only a finishing task frees one; otherwise new work may arrive too.
      if (!hasSlot()) await settled;
      else await Promise.race([consumer.waitForWork({ signal }), settled]);
    }
  } finally {
    signal.removeEventListener('abort', onShutdown);
    await drain({ running, graceMs: config.worker.shutdownGraceMs, stopTasks, logger });
    clearInterval(metricsTimer);
    // A write still in flight would bring the file back after close() removes it.
    await metricsWrite;
    // After the drain: no task is left to call a server. Before the consumer's close, so a server that will not stop
    // delays the worker's exit rather than outliving it.
    await mcp.close();
    await consumer.close();
  }
  logger.info('stopped');
}

/**
 * `isIdle()` twice. It lists active/ and then pending/, so a task another worker claims between the two listings
 * is in neither; the second look finds it in active/ (or finished). One look could end `--exit-when-idle` early.
 */
async function settledIdle(queue: TaskQueue): Promise<boolean> {
  return (await queue.isIdle()) && (await queue.isIdle());
}

interface DrainOptions {
  running: ReadonlySet<Promise<unknown>>;
  graceMs: number;
  stopTasks: AbortController;
  logger: Logger;
}

/** Waits up to `graceMs` for running tasks, then stops the rest, which return to pending/. */
async function drain(options: DrainOptions): Promise<void> {
  const { running, graceMs, logger } = options;
  if (running.size === 0) return;
  logger.info(`waiting up to ${graceMs}ms for ${running.size} running tasks`);
  const all = Promise.allSettled([...running]);
  let timer: NodeJS.Timeout | undefined;
  const graceOver = new Promise<'grace over'>((resolve) => {
    timer = setTimeout(() => resolve('grace over'), timerDelayMs(graceMs));
  });
  const first = await Promise.race([all, graceOver]);
  clearTimeout(timer);
  if (first !== 'grace over') return;
  logger.info(`stopping ${running.size} tasks still running; they go back to pending/`);
  options.stopTasks.abort(new ShutdownAbort('the worker is shutting down'));
  await all;
}
