import path from 'node:path';
import { routeServiceResult } from '@assistant/actions';
import { loadPersonas, personaNamed, personaSourcesOf } from '@assistant/agents';
import { createExecutor, type Executor } from '@assistant/codeact';
import type { LoadedConfig } from '@assistant/config';
import { EventingNoteStore, openEventLedger } from '@assistant/events';
import { askHook, type CompiledHook, fileAskCache, HookRunner } from '@assistant/hooks';
import { IntegrationRegistry, type TaskHandler } from '@assistant/integration-host';
import { type CacheMode, cacheModes, createLlmProfiles, type LlmProfiles } from '@assistant/llm';
import { discoverIntegrations } from '@assistant/manifests';
import { McpServers } from '@assistant/mcp/client';
import {
  HistoryRecorder,
  historyFile,
  llmUsageFile,
  TaskMetrics,
  UsageRecorder,
  usageEvent,
  workerProcess,
} from '@assistant/metrics';
import {
  FileHumanLog,
  FileNoteStore,
  HttpHumanLog,
  HttpNoteStore,
  type HumanLog,
  type NoteStore,
  pauseNotePath,
} from '@assistant/notes';
import { installation, openQueue } from '@assistant/process';
import {
  type ClaimedTask,
  type JsonValue,
  patternMatches,
  type Task,
  type TaskConsumer,
  type TaskQueue,
} from '@assistant/queue';
import { describeScriptSandbox, resolveScriptSandbox } from '@assistant/sandbox';
import { CircuitBreakers } from '@assistant/scheduler';
import { HttpSteeringChannel } from '@assistant/steering';
import type { Logger } from 'pino';
import { BreakerGate } from './breaker-gate.ts';
import type { TaskSlot } from './create-handler-context.ts';
import { ensureDataDirectories } from './data-directories.ts';
import { type LaneSnapshot, laneCapacity, llmStagesOf, profilesAvailability } from './lanes.ts';
import { OutageLog, watchModelOutage } from './outage-log.ts';
import { pauseReader } from './pause-reader.ts';
import { type HandlerLookup, runClaimedTask, type TaskOutcomeReport } from './run-claimed-task.ts';
import { TaskSummary } from './task-summary.ts';
import { timerDelayMs } from './timer-delay.ts';
import { createWorkerMemory } from './worker-memory.ts';
import type { WorkerServices } from './worker-services.ts';

export interface RunWorkerOptions {
  config: LoadedConfig;
  logger: Logger;
  /** Aborting it stops the worker: no new claims, running tasks get `worker.shutdown_grace` to finish. */
  signal: AbortSignal;
  /** Tasks run at once, besides those of LLM stages, which have lanes of their own. @default config.worker.concurrency */
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
  /** The LLM profiles handlers call and LLM lanes are sized and held by. @default createLlmProfiles over `config` */
  llm?: LlmProfiles;
  /**
   * Only tasks of these types (exact, or patterns with `*`: `email.*.classify`) are claimed; others stay for the
   * workers that take them. @default every type
   */
  types?: readonly string[];
  /**
   * A worker on another machine: notes, the human log and steering go through this server's API with this token
   * instead of the data directory. @default local files
   */
  remote?: { serverUrl: string; token: string };
  /**
   * Opens a task's steering channel; a worker on another machine steers through the server (HttpSteeringChannel).
   * @default the control files in `config.paths.control`
   */
  steering?: WorkerServices['steering'];
  /** How long a task of a paused instance waits before it is looked at again. @default 30 s */
  pausedRecheckMs?: number;
  /** The loaded hooks (`loadRuntime`): run off the event ledger in this process. @default none */
  hooks?: readonly CompiledHook[];
}

/** `ASSISTANT_LLM_CACHE=replay` (or record, auto, live, off) overrides `llm_cache.mode` for one run. */
function cacheModeFromEnvironment(): { cacheMode?: CacheMode } {
  const value = process.env.ASSISTANT_LLM_CACHE;
  const mode = cacheModes.find((candidate) => candidate === value);
  return mode === undefined ? {} : { cacheMode: mode };
}

/** How often changed counters are written for the server's /metrics. */
const metricsIntervalMs = 2_000;
/** How often a worker that stays busy sums up the tasks it ran (it also does whenever it falls idle). */
const summaryIntervalMs = 60_000;
/** How often the snapshot is written even when no counter changed, so its memory figures stay current. */
const memoryIntervalMs = 15_000;

/** Why running tasks were stopped: the grace period of a shutdown ran out. */
class ShutdownAbort extends Error {
  override name = 'ShutdownAbort';
}

/**
 * The worker: claims ready tasks in run order, runs up to `concurrency` of them at once (and the tasks of each LLM
 * stage in a lane of its own, sized by its models), each with its handler under its timeout, and completes, retries
 * or fails them. Types held back (an open breaker, an unavailable model, a full LLM backlog downstream) are passed
 * over in pending/. On shutdown it stops claiming, gives running tasks the grace period, then aborts them and returns
 * the unfinished ones to pending/ without counting the attempt.
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
  const types = options.types;
  // A worker on a GPU box takes only the LLM stages, say; the others' tasks wait in the queue for other workers.
  const takesType =
    types === undefined || types.length === 0
      ? () => true
      : (type: string) => types.some((pattern) => patternMatches(pattern, type));
  const queue = await openQueue({
    config,
    logger: {
      info: (message) => logger.info(message),
      warn: (message) => logger.warn(message),
      debug: (message) => logger.debug(message),
    },
  });
  const queueConsumer = queue.consumer({
    pollIntervalMs: timerDelayMs(config.worker.pollIntervalMs),
    // Three heartbeats per lease, so one late beat on a loaded machine does not lose the claims.
    heartbeatMs: Math.min(5_000, Math.floor(config.queue.leaseMs / 3)),
    // A claim is taken back within about two leases of its worker vanishing.
    sweepIntervalMs: Math.min(15_000, config.queue.leaseMs),
  });
  const consumer = options.wrapConsumer ? options.wrapConsumer(queueConsumer) : queueConsumer;
  const remote = options.remote;
  // On another machine, the notes and the log are the server's: reached through its API, which checks every update
  // against the version it was based on, as the file store does here.
  const humanLog: HumanLog = remote ? new HttpHumanLog(remote) : new FileHumanLog({ directory: config.paths.logs });
  // The event ledger is files of this machine: a worker on another machine writes none (docs/events.md).
  const events = remote
    ? undefined
    : openEventLedger({
        dataDir: config.paths.dataDir,
        retentionDays: config.events.retentionDays,
        manifests: (registry?.integrations ?? []).map((integration) => ({
          name: integration.manifest.domain,
          events: integration.manifest.events,
        })),
        warn: (message, details) => logger.warn(details ?? {}, message),
      });
  const localNotes = new FileNoteStore({ root: config.paths.notes });
  // What the worker writes to notes is reported to the ledger (note.created/changed, approval.requested/decided).
  const notes: NoteStore = remote
    ? new HttpNoteStore(remote)
    : events
      ? new EventingNoteStore({ notes: localNotes, events, source: 'notes' })
      : localNotes;
  // One memory index per process, started by the first task that searches; none on another machine (it watches the
  // notes folder, which is the server's there).
  const memory = remote ? undefined : createWorkerMemory({ config, notes, localNotes, logger });
  const metrics = new TaskMetrics();
  const outages = new OutageLog({ logger });
  const summary = new TaskSummary({ logger });
  let metricsChanged = false;
  // The History page's series (data/metrics/history.json): each finished run and each model call, added now and then.
  const history = new HistoryRecorder({ file: historyFile(config.paths.dataDir) });
  // Tokens and estimated cost per profile per owner's day (data/metrics/llm-usage.json), flushed with the history.
  const usage = new UsageRecorder({ file: llmUsageFile(config.paths.dataDir) });
  // Started on first use, shared by every loop here, stopped (with their process groups) when the worker stops.
  const mcp = new McpServers({
    servers: config.mcpServers,
    logger: {
      info: (fields, message) => logger.info(fields, message),
      warn: (fields, message) => logger.warn(fields, message),
    },
  });
  const llm =
    options.llm ??
    createLlmProfiles({
      config,
      ...cacheModeFromEnvironment(),
      onUsage: (profile, tokens, model) => {
        logger.debug({ profile, model, usage: tokens }, 'LLM usage');
        usage.record(
          usageEvent({
            profile,
            usage: tokens,
            prices: config.llms[profile]?.prices,
            timeZone: config.owner.timeZone,
            at: new Date(),
          }),
        );
      },
      onCall: (profile, call) =>
        history.record({
          kind: 'model',
          profile,
          latencyMs: call.latencyMs,
          tokens: call.usage?.totalTokens ?? 0,
          atMs: Date.now(),
        }),
    });
  // The code-as-action sandbox's worker threads start with the first cell a loop runs, not with the worker.
  let codeExecutor: Executor | undefined;
  const services: WorkerServices = {
    ...(events ? { events } : {}),
    ...(options.pausedRecheckMs === undefined ? {} : { pausedRecheckMs: options.pausedRecheckMs }),
    config,
    queue,
    consumer,
    notes,
    humanLog,
    registry,
    scriptSandbox,
    llm,
    mcp,
    ...(memory ? { memory: memory.context } : {}),
    codeact: () => {
      codeExecutor ??= createExecutor({ logger: logger.child({ component: 'codeact' }) });
      return codeExecutor;
    },
    // Read afresh for every loop and spawn: the owner edits personas while the system runs (docs/agents.md).
    // Checked as `config check` checks them (profiles, MCP servers, tool names), so a persona it reports is refused.
    // On this machine the pause note is looked at with a stat per task and read when it changed; through a server,
    // read every time.
    ...(remote ? {} : { pauses: pauseReader({ notes, file: path.join(config.paths.notes, pauseNotePath) }) }),
    personas: async (name) => personaNamed({ name, loaded: await loadPersonas(personaSourcesOf(config)) }),
    ...(options.steering
      ? { steering: options.steering }
      : remote
        ? { steering: (taskId: string) => new HttpSteeringChannel({ ...remote, taskId }) }
        : {}),
    onRejected: (type, outcome) => {
      metrics.recordRejection(type, outcome.status);
      metricsChanged = true;
    },
  };
  // The hooks run here, off the event ledger (docs/hooks.md): only with a local ledger and at least one hook.
  const hooks = options.hooks ?? [];
  const hookRunner =
    events && hooks.length > 0
      ? new HookRunner({
          dataDir: config.paths.dataDir,
          hooks,
          ledger: events,
          queue,
          notes,
          humanLog,
          approvalExpiresMs: config.approvals.expiresMs,
          timeZone: config.owner.timeZone,
          ask: ({ hook, event }) =>
            askHook({
              hook,
              event,
              model: llm(hook.ask?.llm),
              cache: fileAskCache({ dataDir: config.paths.dataDir }),
            }),
          logger: {
            info: (message, details) => logger.info(details ?? {}, message),
            warn: (message, details) => logger.warn(details ?? {}, message),
          },
        })
      : undefined;
  // The loop sleeps on this; a task settling, a breaker or model changing, or the shutdown signal wakes it.
  let wakeLoop = () => {};
  // A breaker's note is watched by its file's identity, so a remote worker keeps its breakers in its own data
  // directory: they hold its own claims, which is what they are for.
  const breakers = new CircuitBreakers({ notes: localNotes, settings: config.circuitBreaker, humanLog, logger });
  const breakerGate = new BreakerGate({
    breakers,
    logger,
    onChange: () => {
      metricsChanged = true;
      wakeLoop();
    },
  });
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
      taskLogger.debug(routed, `routed the result of ${task.type}`);
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
  // Every failed attempt that may be the dependency's fault counts toward the type's breaker and every success
  // resets it. An unrecoverable error is about the one task; delays (an unavailable model among them), releases at
  // shutdown and unrecorded outcomes say nothing about whether the type works.
  const onOutcome = async (report: TaskOutcomeReport) => {
    summary.record(report);
    metrics.recordOutcome(report.type, report.outcome, report.durationMs);
    metricsChanged = true;
    // A retried attempt failed as much as a final one: both count as failures; delays and releases say nothing.
    if (report.outcome === 'done' || report.outcome === 'failed' || report.outcome === 'retrying') {
      history.record({
        kind: 'task',
        type: report.type,
        outcome: report.outcome === 'done' ? 'done' : 'failed',
        durationMs: report.durationMs,
        atMs: Date.now(),
      });
    }
    if (report.outcome === 'done') breakerGate.update(report.type, await breakers.recordSuccess(report.type));
    else if ((report.outcome === 'failed' || report.outcome === 'retrying') && !report.unrecoverable) {
      breakerGate.update(report.type, await breakers.recordFailure(report.type, report.error ?? 'failed'));
    }
  };
  const stopTasks = new AbortController();
  // Every task from its claim until its outcome is written (what a shutdown waits for).
  const running = new Set<Promise<unknown>>();

  // Lanes. A lane's `handlers` are its tasks whose handler is still running: what its capacity limits. A task whose
  // handler returned frees its slot while its outcome is written, so the next claim and handler overlap that write
  // (its fsync above all). At most twice the capacity are between their claim and their written outcome
  // (`claimed`), so a slow disk holds claims back instead of piling outcomes up.
  // The IO lane runs every type but the LLM stages', up to `concurrency` at once. Each LLM stage has a lane of its
  // own, so tasks waiting for a slow model neither take IO slots nor cap the model at `concurrency` requests.
  const ioLane: Lane = { handlers: 0, claimed: 0 };
  const llmLanes = new Map(llmStagesOf(registry).map((stage) => [stage.type, { ...stage, handlers: 0, claimed: 0 }]));
  // The types that feed an LLM stage, with the stages they feed: held while one of those has a full backlog.
  const feeds = new Map<string, string[]>();
  for (const lane of llmLanes.values()) {
    if (lane.feeder !== undefined) feeds.set(lane.feeder, [...(feeds.get(lane.feeder) ?? []), lane.type]);
  }
  const { modelBacklog } = config.worker;
  const backlogFull = (type: string) => consumer.pendingCount(type) >= modelBacklog;

  /** What may be claimed now; rebuilt on every pass of the loop (model status and breakers change between them). */
  const planClaims = (nowMs: number): ClaimPlan => {
    const status = llm.limits();
    let wakeAtMs = breakerGate.nextRetryAtMs(nowMs);
    const laneStates = new Map<string, { capacity: number; unavailableUntilMs?: number }>();
    for (const lane of llmLanes.values()) {
      const availability = profilesAvailability(llm, lane.profiles, nowMs);
      const capacity = laneCapacity(lane.profiles, status);
      if (availability.available) laneStates.set(lane.type, { capacity });
      else {
        // A retry time already past (the gate's trial is out) is woken by the profile's subscribe event instead.
        const retryAtMs = Math.max(availability.retryAtMs, nowMs);
        laneStates.set(lane.type, { capacity, unavailableUntilMs: retryAtMs });
        if (retryAtMs > nowMs && Number.isFinite(retryAtMs)) wakeAtMs = Math.min(wakeAtMs ?? retryAtMs, retryAtMs);
      }
    }
    const ownHold = (type: string): string | undefined => {
      const breaker = breakerGate.held(type, nowMs);
      if (breaker !== undefined) return breaker;
      const until = laneStates.get(type)?.unavailableUntilMs;
      if (until !== undefined) {
        return `model unavailable until ${Number.isFinite(until) ? new Date(until).toISOString() : 'further notice'}`;
      }
      return undefined;
    };
    const held = (type: string): string | undefined =>
      ownHold(type) ?? ((feeds.get(type) ?? []).some(backlogFull) ? 'backlog full' : undefined);
    const accept = (type: string): boolean => {
      if (!takesType(type)) return false;
      const lane = llmLanes.get(type);
      const capacity = lane ? (laneStates.get(type)?.capacity ?? 2) : concurrency;
      const { handlers, claimed } = lane ?? ioLane;
      return handlers < capacity && claimed < 2 * capacity && held(type) === undefined;
    };
    const lanes = (): LaneSnapshot[] =>
      [...llmLanes.values()].map((lane) => {
        const reason =
          ownHold(lane.type) ?? (lane.feeder !== undefined && backlogFull(lane.type) ? 'backlog full' : undefined);
        return {
          type: lane.type,
          profiles: lane.profiles,
          running: lane.handlers,
          capacity: laneStates.get(lane.type)?.capacity ?? 2,
          pending: consumer.pendingCount(lane.type),
          ...(reason === undefined ? {} : { held: reason }),
        };
      });
    return { accept, held, lanes, ...(wakeAtMs === undefined ? {} : { wakeAtMs }) };
  };

  const onShutdown = () => wakeLoop();
  signal.addEventListener('abort', onShutdown, { once: true });
  // A profile's slots, queue or breaker changed: a lane may take tasks again (or must stop). An outage of the
  // profile is logged as its breaker opens and as it closes again, not per task put back meanwhile.
  const unsubscribeLlm = llm.subscribe((profile) => {
    watchModelOutage(llm, profile, outages);
    wakeLoop();
  });

  const start = (claimed: ClaimedTask) => {
    const lane = llmLanes.get(claimed.task.type) ?? ioLane;
    lane.handlers += 1;
    lane.claimed += 1;
    // What this task counts in its lane: its handler until it settles, its claim until its outcome is written. Both
    // are given back while its agent loops wait for the owner (the slot), and taken again when a call is decided.
    let holdsHandler = true;
    let holdsClaim = true;
    let settled = false;
    const dropHandler = () => {
      if (!holdsHandler) return;
      holdsHandler = false;
      lane.handlers -= 1;
      wakeLoop();
    };
    const dropClaim = () => {
      if (!holdsClaim) return;
      holdsClaim = false;
      lane.claimed -= 1;
      wakeLoop();
    };
    const freeSlot = () => {
      settled = true;
      dropHandler();
    };
    const slot: TaskSlot = {
      // The mark is what lets a death while the task waits go uncounted; one that cannot be written only means the
      // death counts, and one that cannot be removed that a death while the task runs again goes uncounted: neither
      // stops the task. After the handler settled the claim is on its way out, and the mark goes with it.
      park: async () => {
        if (settled) return;
        try {
          await consumer.park(claimed);
        } catch (error) {
          if (!settled) {
            logger.warn(
              { err: error, task: claimed.id },
              `could not mark task ${claimed.id} parked; a worker death while it waits will count as an attempt`,
            );
          }
        }
      },
      unpark: async () => {
        try {
          await consumer.unpark(claimed);
        } catch (error) {
          if (!settled) {
            logger.warn(
              { err: error, task: claimed.id },
              `could not remove the parked mark of task ${claimed.id}; a worker death while it runs on will not count as an attempt`,
            );
          }
        }
      },
      release: () => {
        if (settled) return;
        logger.debug({ task: claimed.id }, `task ${claimed.id} waits for the owner; its slot is free meanwhile`);
        dropHandler();
        dropClaim();
      },
      retake: () => {
        if (settled) return;
        if (!holdsHandler) lane.handlers += 1;
        if (!holdsClaim) lane.claimed += 1;
        holdsHandler = true;
        holdsClaim = true;
      },
    };
    const run = runClaimedTask({
      slot,
      outages,
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
      dropClaim();
      wakeLoop();
    });
  };

  /**
   * A claimed task of a type whose breaker is not closed runs only as the trial, which one worker wins through the
   * note; the others put their task back unrun. A note that cannot be written lets it run: the breaker protects a
   * dependency, and must not stop the worker when the notes folder fails.
   */
  const mayRun = async (claimed: ClaimedTask): Promise<boolean> => {
    const { type } = claimed.task;
    let permission: Awaited<ReturnType<CircuitBreakers['claimTrial']>>;
    try {
      permission = await breakers.claimTrial(type);
    } catch (error) {
      logger.warn({ err: error, type }, `could not record the circuit breaker trial of ${type}; running the task`);
      return true;
    }
    breakerGate.update(type, permission.state);
    if (permission.allowed) {
      // Debug, like every line per task: the breaker's opening and closing are WARN lines of their own.
      if (permission.trial) logger.debug({ task: claimed.id, type }, `task ${claimed.id} runs as the trial of ${type}`);
      return true;
    }
    logger.debug({ task: claimed.id, type }, `${type}: ${permission.reason}; task ${claimed.id} goes back to pending/`);
    try {
      await consumer.release(claimed);
    } catch (error) {
      logger.error({ err: error }, `could not put task ${claimed.id} back; recovery will return it to pending/`);
    }
    return false;
  };

  // The server sums what every worker publishes for /metrics; the consumer removes it with its lease at close.
  // The snapshot also names the worker and its memory, which the dashboard's overview shows per worker, and its
  // models and lanes, which /health and the dashboard show.
  let metricsWrite = Promise.resolve();
  let metricsWrittenAtMs = 0;
  let lastLlmView = '';
  const writeMetrics = () => {
    void history.flush();
    void usage.flush();
    const llmView = { models: llm.status(), lanes: planClaims(Date.now()).lanes() };
    const llmViewText = JSON.stringify(llmView);
    if (llmViewText !== lastLlmView) {
      lastLlmView = llmViewText;
      metricsChanged = true;
    }
    if (!metricsChanged && Date.now() - metricsWrittenAtMs < memoryIntervalMs) return;
    metricsChanged = false;
    metricsWrittenAtMs = Date.now();
    // Our own JSON text read back: plain JSON data by construction, which the status types cannot say.
    const llmData = JSON.parse(llmViewText) as Record<string, JsonValue>;
    // Its open breakers too: a worker on another machine keeps them in its own data directory, where the server
    // does not look; this is how /health, /metrics and the dashboard show them.
    const breakerData = breakerGate.states().map((state) => ({
      taskType: state.taskType,
      state: state.state,
      consecutiveFailures: state.consecutiveFailures,
      ...(state.retryAt === undefined ? {} : { retryAt: state.retryAt }),
      ...(state.lastError === undefined ? {} : { lastError: state.lastError }),
    }));
    const snapshot = {
      ...metrics.snapshot(),
      ...workerProcess(consumer.owner.id),
      ...llmData,
      breakers: breakerData,
    };
    metricsWrite = metricsWrite
      .then(() => queue.workers.publishMetrics(consumer.owner.id, snapshot as JsonValue))
      .catch((error: unknown) => logger.warn({ err: error }, 'could not write the metrics file'));
  };
  const metricsTimer = setInterval(writeMetrics, metricsIntervalMs);
  metricsTimer.unref();
  // While the worker stays busy, the summary of what it ran comes at this interval; else when it falls idle.
  const summaryTimer = setInterval(() => summary.flush(), summaryIntervalMs);
  summaryTimer.unref();
  const pollIntervalMs = timerDelayMs(config.worker.pollIntervalMs);

  try {
    const recovered = await consumer.start();
    if (recovered.requeued.length + recovered.failed.length > 0) {
      logger.warn(
        `recovered ${recovered.requeued.length} tasks of stopped workers to pending/, ${recovered.failed.length} to failed/`,
      );
    }
    await breakerGate.start();
    if (hookRunner) {
      // A runner that cannot start (an unreadable data/hooks) costs the hooks, never the worker.
      await hookRunner.start().catch((error: unknown) => logger.error({ err: error }, 'the hooks could not start'));
    }
    writeMetrics();
    logger.info(
      { worker: consumer.owner.id, concurrency, llmLanes: [...llmLanes.keys()] },
      `worker ready on ${config.queue.backend === 'redis' ? `${config.queue.redis.url} (prefix ${config.queue.redis.prefix})` : config.paths.queue}`,
    );
    while (!signal.aborted) {
      // Made before claiming, so a task that settles while we claim still wakes the wait below: no lost wake-ups.
      const settled = new Promise<void>((resolve) => {
        wakeLoop = resolve;
      });
      let plan = planClaims(Date.now());
      while (!signal.aborted) {
        let claimed: ClaimedTask | undefined;
        try {
          claimed = await consumer.claim({ accept: plan.accept });
        } catch (error) {
          logger.error({ err: error }, 'claiming a task failed; trying again after the poll interval');
          break;
        }
        if (!claimed) break;
        if (breakerGate.needsTrial(claimed.task.type) && !(await mayRun(claimed))) {
          plan = planClaims(Date.now());
          continue;
        }
        start(claimed);
      }
      // A batch is over when nothing runs: one line says what it was.
      if (running.size === 0) summary.flush();
      if (options.exitWhenIdle && running.size === 0 && (await settledIdle(queue, plan, () => modelOutage(llm)))) {
        logger.info('queue idle; exiting (--exit-when-idle)');
        break;
      }
      if (signal.aborted) break;
      // Only accepted types are waited for (a held type's ready task would end every wait at once); a breaker's or a
      // model's retry time ends the wait too, since nothing else would.
      const wakeInMs = plan.wakeAtMs === undefined ? pollIntervalMs : Math.max(0, plan.wakeAtMs - Date.now());
      await Promise.race([
        consumer.waitForWork({ signal, accept: plan.accept, timeoutMs: Math.min(pollIntervalMs, wakeInMs) }),
        settled,
      ]);
    }
  } finally {
    await hookRunner?.stop().catch((error: unknown) => logger.warn({ err: error }, 'the hooks did not stop cleanly'));
    signal.removeEventListener('abort', onShutdown);
    unsubscribeLlm();
    breakerGate.stop();
    await drain({ running, graceMs: config.worker.shutdownGraceMs, stopTasks, logger });
    clearInterval(metricsTimer);
    clearInterval(summaryTimer);
    summary.flush();
    // A write still in flight would bring the file back after close() removes it.
    await metricsWrite;
    await history.flush();
    await usage.flush();
    // After the drain: no task is left to call a server. Before the consumer's close, so a server that will not stop
    // delays the worker's exit rather than outliving it.
    await mcp.close();
    await codeExecutor?.close();
    await memory
      ?.close()
      .catch((error: unknown) => logger.warn({ err: error }, 'the memory index did not close cleanly'));
    await consumer.close();
    // A Redis backend's connections would keep the process alive after the last task.
    await queue.close();
  }
  logger.info('stopped');
}

/** Tasks of one lane at once. */
interface Lane {
  /** Handlers running. */
  handlers: number;
  /** Claimed and not yet recorded. */
  claimed: number;
}

/** What the loop may claim on one pass. */
interface ClaimPlan {
  /** The claim filter: a free slot in the type's lane and nothing holding the type. */
  accept: (type: string) => boolean;
  /** Why the type is held whatever the slots: its breaker, its models, its LLM stage's backlog. */
  held: (type: string) => string | undefined;
  lanes: () => LaneSnapshot[];
  /** The next breaker or model retry time, when a held type may be claimed again. */
  wakeAtMs?: number;
}

/**
 * Idle twice over. `isIdle()` lists active/ and then pending/, so a task another worker claims between the two
 * listings is in neither; the second look finds it in active/ (or finished). One look could end `--exit-when-idle`
 * early. Ready tasks this worker holds back for an open task-type breaker do not keep it from exiting; while a model
 * is unavailable, any pending task does (those waiting for it are held or delayed): a drain outlasts an outage.
 */
async function settledIdle(queue: TaskQueue, plan: ClaimPlan, outage: () => boolean): Promise<boolean> {
  return (await idleBut(queue, plan, outage)) && (await idleBut(queue, plan, outage));
}

/** Whether some LLM profile's breaker is open or trying: a model outage is in progress. */
function modelOutage(llm: { status(): readonly { breaker: { state: string } }[] }): boolean {
  return llm.status().some((profile) => profile.breaker.state !== 'closed');
}

async function idleBut(queue: TaskQueue, plan: ClaimPlan, outage: () => boolean): Promise<boolean> {
  if (outage()) {
    // Only tasks of LLM stages wait for the model; with none pending, nothing would ever try it again.
    const llmTypes = new Set(plan.lanes().map((lane) => lane.type));
    const pending = await queue.list({ state: 'pending' });
    if (pending.some((entry) => entry.name !== undefined && llmTypes.has(entry.name.type))) return false;
  }
  if (await queue.isIdle()) return true;
  if ((await queue.list({ state: 'active', limit: 1 })).length > 0) return false;
  const nowMs = Date.now();
  const pending = await queue.list({ state: 'pending' });
  return pending.every(
    (entry) => !entry.name || entry.name.readyAtMs > nowMs || plan.held(entry.name.type) !== undefined,
  );
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
