import path from 'node:path';
import { createToolCallGate, enqueueActions, runActionOnce } from '@assistant/actions';
import { startAgent, type ToolGate } from '@assistant/agent';
import { evaluateRules } from '@assistant/automations';
import {
  ChatEventLog,
  ChatInbox,
  ConversationChanges,
  ConversationStore,
  chatModes,
  conversationIndexPaths,
  TurnStates,
} from '@assistant/chat';
import type { LoadedConfig } from '@assistant/config';
import { AssistantError, isAssistantError } from '@assistant/errors';
import type { EventSink } from '@assistant/events';
import {
  type ChatContext,
  type HandlerContext,
  type IntegrationRegistry,
  noteTranscript,
  type RuntimeInstance,
  type ScriptsContext,
  transcriptsFolder,
} from '@assistant/integration-host';
import type { ChatModel } from '@assistant/llm';
import { McpServers } from '@assistant/mcp/client';
import { FileNoteStore, type HumanLog, type NoteStore, type PauseState, pausedRules } from '@assistant/notes';
import { type EnqueueOutcome, outageDelay, type Task, type TaskConsumer, type TaskQueue } from '@assistant/queue';
import { applySteering, ControlFiles, type SteeringChannel } from '@assistant/steering';
import type { Logger } from 'pino';
import { createChatConsole } from './chat-console.ts';

/** What `mcpTools` answers from when the worker was given no servers: every name is unknown. */
const noMcpServers = new McpServers({ servers: {} });

/** What the worker shares between the contexts of all the tasks it runs. */
export interface WorkerServices {
  config: LoadedConfig;
  queue: TaskQueue;
  /**
   * The consumer this worker claims with: queue housekeeping recovers through it, so the worker's own running tasks
   * (the housekeeping task among them) are never taken for a dead worker's while its heartbeat is late, as after a
   * Redis outage. @default the queue's recovery (tests of bare handlers, which hold no claims)
   */
  consumer?: Pick<TaskConsumer, 'recover'>;
  notes: NoteStore;
  humanLog: HumanLog;
  /** Absent in tests that run bare handlers: tasks then run for a bare instance named after the domain. */
  registry?: IntegrationRegistry | undefined;
  /** How scripts run here (`worker.sandbox` and the bwrap executable), for the script integration only. */
  scriptSandbox: ScriptsContext['sandbox'];
  /** The LLM profiles, created once per worker. */
  llm: (profile?: string) => ChatModel;
  /** config.yaml's MCP servers, shared by every loop of the worker. @default none (tests of bare handlers) */
  mcp?: McpServers;
  /** Called for every policy rejection of an enqueue a handler makes (metrics). */
  onRejected?: (type: string, outcome: Exclude<EnqueueOutcome, { status: 'enqueued' }>) => void;
  /**
   * Opens a task's steering channel: a worker on another machine passes one that goes through the server
   * (HttpSteeringChannel). @default ControlFiles in `config.paths.control`
   */
  steering?: (taskId: string) => SteeringChannel;
  /** How long a task of a paused instance waits before it is looked at again. @default 30 s */
  pausedRecheckMs?: number;
  /**
   * The event ledger (`data/events/`): finished and failed tasks are written there, and handlers report what they
   * take in (`context.events`). @default none: no events (tests of bare handlers, a worker on another machine)
   */
  events?: EventSink;
}

/** The task's steering channel: the worker's own (`services.steering`), or the control files on this machine. */
export function steeringChannel(services: WorkerServices, taskId: string): SteeringChannel {
  return services.steering?.(taskId) ?? new ControlFiles({ root: services.config.paths.control, taskId });
}

export interface CreateHandlerContextOptions {
  services: WorkerServices;
  task: Task;
  signal: AbortSignal;
  logger: Logger;
  /** The task's worker slot, given back while its agent loops wait for the owner. @default kept throughout */
  slot?: TaskSlot;
  /** What the owner paused, read for this task: a paused rule of the task's platform does not match. @default none */
  pauses?: PauseState;
}

/**
 * A running task's place among the worker's `concurrency`: given back while one of its agent loops waits for the owner
 * (a tool call's approval, for up to `tools.approval_timeout`; a question's answer), so the worker runs other tasks
 * meanwhile, and taken again the moment one is decided or answered, even if that briefly puts the worker one over
 * its concurrency.
 */
export interface TaskSlot {
  release(): void;
  retake(): void;
}

/**
 * Counts what of a task waits for the owner, across all its loops: tool calls waiting for approval and questions
 * waiting for an answer. The slot is given back when the first starts waiting, and taken again when the last one is
 * decided or answered (or stops waiting).
 */
function slotParking(slot: TaskSlot | undefined): { begin(): void; end(): void } {
  let waits = 0;
  return {
    begin: () => {
      waits += 1;
      if (waits === 1) slot?.release();
    },
    end: () => {
      waits -= 1;
      if (waits === 0) slot?.retake();
    },
  };
}

/** Wraps a loop's tool gate so its calls that wait for the owner count in the task's parking. */
function parkWhileWaiting(gate: ToolGate, parking: ReturnType<typeof slotParking>): ToolGate {
  return async (request) => {
    let waiting = false;
    try {
      return await gate({
        ...request,
        waiting: (approval) => {
          request.waiting(approval);
          if (waiting) return;
          waiting = true;
          parking.begin();
        },
      });
    } finally {
      if (waiting) parking.end();
    }
  };
}

/**
 * The context a handler runs with: its instance and platform from the registry, stores, enqueue, logs, signal.
 * Returns a message instead when the task cannot run here (it names an instance config.yaml does not define):
 * such a task fails without retries, since nothing changes between attempts.
 */
export function createHandlerContext(options: CreateHandlerContextOptions): HandlerContext | { problem: string } {
  const { services, task, signal, logger } = options;
  // One per task, shared by its loops (nested ones included): the slot is back only when none of them waits.
  const parking = slotParking(options.slot);
  const info = services.registry?.taskType(task.type);
  let instance: RuntimeInstance;
  if (services.registry && info) {
    const found = services.registry.instanceForTask(task);
    if (!found.ok) return { problem: found.message };
    instance = found.instance;
  } else {
    const domain = task.type.split('.')[0] ?? task.type;
    instance = {
      name: task.integration ?? domain,
      domain,
      enabled: true,
      shadow: false,
      llm: 'default',
      settings: {},
      platforms: {},
      configured: false,
    };
  }
  // Code shipped with Assistant (or a bare handler in a test) is trusted with every LLM profile and, for the script
  // integration, with the scripts; code from integration_dirs and npm packages gets its own instance's share only.
  const isBuiltin = info === undefined || info.integration.origin === 'builtin';
  const model = (profile: string | undefined): ChatModel => {
    const name = profile ?? instance.llm;
    if (name !== instance.llm && !isBuiltin) {
      throw new AssistantError(
        'CONFIG_INVALID',
        `${instance.name} may use its own LLM profile \`${instance.llm}\`, not \`${name}\``,
        { hint: `set \`llm: ${name}\` on the instance \`${instance.name}\` in config.yaml to use that profile` },
      );
    }
    return services.llm(name);
  };
  const platform = info?.platform === undefined ? undefined : instance.platforms[info.platform];
  const rules =
    info?.platform === undefined ? [] : (services.registry?.automations(instance.name, info.platform) ?? []);
  const source =
    info?.platform === undefined
      ? task.integration
        ? `${task.integration}/${task.type}`
        : task.type
      : `${instance.name}/${info.platform}`;
  return {
    task,
    payload: task.payload,
    instance: { name: instance.name, domain: instance.domain, settings: instance.settings, llm: instance.llm },
    ...(platform ? { platform } : {}),
    configDir: path.dirname(services.config.paths.configFile),
    dataDir: services.config.paths.dataDir,
    ...(services.events ? { events: services.events } : {}),
    ...(instance.domain === 'script' && isBuiltin
      ? {
          scripts: {
            scripts: services.config.scripts,
            workRoot: path.join(services.config.paths.dataDir, 'scripts'),
            // Never mounted; they keep a node script's folder from being shown when it holds one of them.
            privatePaths: [
              services.config.paths.configFile,
              services.config.paths.secretsFile,
              services.config.paths.dataDir,
              services.config.paths.queue,
              services.config.paths.notes,
              services.config.paths.logs,
              services.config.paths.control,
              path.resolve(path.dirname(services.config.paths.configFile), services.config.llmCache.directory),
            ],
            sandbox: services.scriptSandbox,
          },
        }
      : {}),
    notes: services.notes,
    signal,
    ...(instance.domain === 'system' && isBuiltin
      ? {
          queueMaintenance: {
            prune: () => services.queue.prune(),
            recover: () => (services.consumer ?? services.queue).recover(),
            stats: () => services.queue.stats(),
          },
        }
      : {}),
    ...(instance.domain === 'chat' && isBuiltin ? { chat: chatContext(services, instance.settings, task) } : {}),
    ...(instance.domain === 'chat' && isBuiltin && services.registry
      ? { console: createChatConsole({ ...services, registry: services.registry }, task, signal) }
      : {}),
    logger,
    log: {
      human: (message, details = {}) =>
        services.humanLog.write({ ...details, source: details.source ?? source, message }),
      info: (message, fields = {}) => logger.info(fields, message),
      warn: (message, fields = {}) => logger.warn(fields, message),
    },
    automations: {
      rules,
      evaluate: (facts, nowMs) =>
        evaluateRules(rules, facts, nowMs, {
          ...(options.pauses && info?.platform !== undefined
            ? { paused: pausedRules(options.pauses, { instance: instance.name, platform: info.platform }) }
            : {}),
        }),
    },
    llm: (profile) => model(profile),
    // A server that is down (not started, crashed and waiting out its backoff) holds the task back a minute at a time
    // without spending its attempts, for up to a day: an MCP outage must not fail a loop's task for good.
    mcpTools: (serverNames) =>
      (services.mcp ?? noMcpServers).toolsFor(serverNames, { signal }).catch((error: unknown) => {
        if (isAssistantError(error, 'MCP_SERVER_UNAVAILABLE')) {
          throw outageDelay(task, Date.now() + 60_000, `${error.message}; waiting for the server`) ?? error;
        }
        throw error;
      }),
    agent: (options) => {
      const { model: chosen, profile, onEvent, transcriptName, ...rest } = options;
      const channel = steeringChannel(services, task.id);
      const transcript = noteTranscript({
        notes: services.notes,
        taskId: task.id,
        title: `${task.type} ${transcriptName ?? task.id}`,
        ...(transcriptName === undefined ? {} : { name: transcriptName }),
      });
      // Events reach people through events.jsonl (SSE, `assistant task watch`) in the order they happen.
      let writing = Promise.resolve();
      const record = (event: Record<string, unknown>) => {
        writing = writing
          .then(() => channel.event(event as never))
          .catch((error: unknown) => logger.warn({ err: error }, 'could not write an agent event'));
      };
      const ownGate = createToolCallGate({
        notes: services.notes,
        humanLog: services.humanLog,
        policy: services.config.tools,
        approvalTimeoutMs: services.config.tools.approvalTimeoutMs,
        task: { id: task.id },
        instance: { name: instance.name, domain: instance.domain },
        item: `${transcriptsFolder}/${transcriptName ?? task.id}.md`,
      });
      const gate = parkWhileWaiting(ownGate, parking);
      const handle = startAgent({
        ...rest,
        label: rest.label ?? task.type,
        model: chosen ?? model(profile),
        transcript,
        signal,
        // After `...rest`, so a gate smuggled past the type (a plain-JS handler) is replaced: config.yaml's, none other.
        gate,
        // A question to the owner waits like an approval does: the task's slot is free meanwhile.
        ownerWait: parking,
        onEvent: (event) => {
          const { type, lineage, handleId: _handle, ...details } = event;
          // Tokens (a line each) would flood events.jsonl and the debug log: they go to the caller's onEvent only.
          if (type === 'token') return onEvent?.(event);
          record({
            type,
            lineage,
            ...(type === 'done' ? { result: (details as { result: unknown }).result } : details),
          });
          logger.debug({ lineage: lineage.join(' › '), event: type }, `agent ${type}`);
          onEvent?.(event);
        },
      });
      const steering = applySteering({ channel, target: handle, logger });
      // The loop's last events (its `done`) are written before its result is given to the handler, so before the
      // task's outcome is recorded: `/api/tasks/:id/events` ends once the task has finished and nothing is left to
      // send, and through a remote worker's HTTP channel the write could otherwise still be on its way.
      const flushed = handle.result().then(async (result) => {
        await steering.close().catch((error: unknown) => logger.warn({ err: error }, 'could not stop steering'));
        await writing;
        return result;
      });
      return new Proxy(handle, {
        get(target, property) {
          if (property === 'result') return () => flushed;
          const value: unknown = Reflect.get(target, property, target);
          return typeof value === 'function' ? value.bind(target) : value;
        },
      });
    },
    actOnce: (once, run) => runActionOnce({ notes: services.notes, ...once, task: task.id }, run),
    enqueueActions: async ({ notePath, matches, title, writeText }) => {
      if (info?.platform === undefined) throw new Error(`enqueueActions needs a stage task; ${task.type} is not one`);
      return enqueueActions({
        notes: services.notes,
        queue: services.queue,
        humanLog: services.humanLog,
        instance: instance.name,
        domain: instance.domain,
        platform: info.platform,
        notePath,
        matches,
        ...(title === undefined ? {} : { title }),
        ...(writeText === undefined ? {} : { writeText }),
        ...(instance.shadow ? { shadow: true } : {}),
        approvalExpiresMs: services.config.approvals.expiresMs,
      });
    },
    enqueue: async (enqueue) => {
      let type = enqueue.type;
      if (enqueue.stage !== undefined) {
        if (info?.platform === undefined)
          throw new Error(`enqueue({stage}) needs a stage task; ${task.type} is not one`);
        type = `${info.domain}.${info.platform}.${enqueue.stage}`;
      }
      if (type === undefined) throw new Error('enqueue needs a `stage` or a `type`');
      const target = services.registry?.taskType(type);
      if (services.registry && !target) throw new Error(`enqueue: no integration handles task type ${type}`);
      const outcome = await services.queue.enqueue({
        type,
        payload: enqueue.payload ?? null,
        priority: enqueue.priority ?? target?.priority ?? 5,
        source: 'automation',
        integration: enqueue.integration ?? instance.name,
        ...(enqueue.readyAtMs === undefined ? {} : { readyAtMs: enqueue.readyAtMs }),
      });
      if (outcome.status !== 'enqueued') services.onRejected?.(type, outcome);
      return outcome;
    },
  };
}

/** The builtin chat integration's stores: `data/chat/{inbox,events,turns}` and the conversation notes. */
function chatContext(services: WorkerServices, settings: Record<string, unknown>, task: Task): ChatContext {
  const folder = path.join(services.config.paths.dataDir, 'chat');
  const control = steeringChannel(services, task.id);
  const inbox = new ChatInbox({ directory: path.join(folder, 'inbox') });
  const mode = chatModes.find((known) => known === settings.mode);
  return {
    inbox,
    conversations: new ConversationStore({
      notes: services.notes,
      inbox,
      ...(mode ? { defaultMode: mode } : {}),
      // Journaled for the server's conversation list index when the notes are on disk here (not a remote worker's).
      ...(services.notes instanceof FileNoteStore
        ? {
            changes: new ConversationChanges(
              conversationIndexPaths(services.config.paths.dataDir, services.notes.root),
            ),
          }
        : {}),
    }),
    events: new ChatEventLog({ directory: path.join(folder, 'events') }),
    turns: new TurnStates({ directory: path.join(folder, 'turns') }),
    discardSteering: async (reason) => {
      let discarded = 0;
      for (const entry of await control.pending()) {
        await control.settle(entry.id, { status: 'refused', message: reason });
        discarded += 1;
      }
      return discarded;
    },
  };
}
