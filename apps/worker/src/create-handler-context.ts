import { readdir, rm } from 'node:fs/promises';
import path from 'node:path';
import { createToolCallGate, enqueueActions, runActionOnce } from '@assistant/actions';
import { startAgent, type ToolGate } from '@assistant/agent';
import {
  agentsRoot,
  appendBlackboardEntry,
  builtinDefaultPersona,
  type ChildRecord,
  childOwner,
  claimChild,
  defaultPersonaName,
  deliverChildResult,
  FileSubAgents,
  type GrantChain,
  grantVerdict,
  listIds,
  type Persona,
  readChildRecord,
  readChildResult,
  rootGrantChain,
} from '@assistant/agents';
import { evaluateRules } from '@assistant/automations';
import {
  ChatEventLog,
  ChatInbox,
  type ChatRetention,
  ConversationChanges,
  ConversationStore,
  chatModes,
  compactChat,
  conversationIndexPaths,
  defaultChatRetention,
  TurnStates,
} from '@assistant/chat';
import { type Executor, FileCallLog } from '@assistant/codeact';
import { AssistantError, isAssistantError } from '@assistant/errors';
import {
  type AgentsContext,
  type ChatContext,
  type CodeActContext,
  codeTools,
  type HandlerContext,
  type MemoryContext,
  memoryInstanceOf,
  noteTranscript,
  type RuntimeInstance,
  type ScriptsContext,
  scriptTools,
  transcriptsFolder,
} from '@assistant/integration-host';
import type { ChatModel } from '@assistant/llm';
import { McpServers } from '@assistant/mcp/client';
import { FileHumanLog, FileNoteStore, type PauseState, pausedRules } from '@assistant/notes';
import { outageDelay, type Task, type TaskQueue, taskIdPattern } from '@assistant/queue';
import { applySteering } from '@assistant/steering';
import type { Logger } from 'pino';
import { createChatConsole } from './chat-console.ts';

/** What `mcpTools` answers from when the worker was given no servers: every name is unknown. */
const noMcpServers = new McpServers({ servers: {} });

import { steeringChannel, type WorkerServices } from './worker-services.ts';

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
 * (a tool call's approval, for up to `tools.approval_timeout`; a question's answer) or for its children
 * (`wait_agents`), so the worker runs other tasks meanwhile, and taken again the moment one is decided or answered,
 * even if that briefly puts the worker one over its concurrency. While it waits the task's claim is marked parked in
 * the queue (TaskConsumer.park), so a worker death meanwhile is not counted against it (decision 0062).
 */
export interface TaskSlot {
  /** Marks the claim parked, durably; never rejects (a mark that cannot be written is logged, and the death counts). */
  park(): Promise<void>;
  /** Removes the parked mark, durably; never rejects (one that cannot be removed is logged). */
  unpark(): Promise<void>;
  release(): void;
  retake(): void;
}

/** What of a task waits, counted across its loops; `end` resolves once the task's code may run again. */
interface SlotParking {
  begin(): void;
  end(): Promise<void>;
}

/**
 * Counts what of a task waits, across all its loops: tool calls waiting for approval, questions waiting for an answer,
 * `wait_agents` waiting for children. When the first starts waiting the claim is marked parked and, once that mark is
 * durable, the slot is given back. When any one stops waiting (decided, answered, its children done, or stopped) some
 * of the task's code runs again, so the mark is removed before `end` resolves; the slot is taken again when the last
 * one stops. Steps run one after another, each seeing the count as it is by then: a wait that begins and ends before
 * its park is written leaves neither mark nor given-back slot.
 */
function slotParking(slot: TaskSlot | undefined): SlotParking {
  let waits = 0;
  let parked = false;
  let released = false;
  let steps: Promise<void> = Promise.resolve();
  const step = (action: () => Promise<void> | void): Promise<void> => {
    steps = steps.then(action);
    return steps;
  };
  return {
    begin: () => {
      waits += 1;
      if (waits !== 1 || !slot) return;
      void step(async () => {
        if (waits === 0 || parked) return;
        await slot.park();
        parked = true;
        if (waits === 0 || released) return;
        released = true;
        slot.release();
      });
    },
    end: () => {
      waits -= 1;
      if (!slot) return Promise.resolve();
      const last = waits === 0;
      return step(async () => {
        if (parked) {
          parked = false;
          await slot.unpark();
        }
        if (last && waits === 0 && released) {
          released = false;
          slot.retake();
        }
      });
    },
  };
}

/**
 * Wraps a loop's tool gate so its calls that wait for the owner count in the task's parking; a decided call returns
 * to the loop only once the parked mark is removed.
 */
function parkWhileWaiting(gate: ToolGate, parking: SlotParking): ToolGate {
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
      if (waiting) await parking.end();
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
  // The human log's day files, when they are on this machine (a remote worker writes the server's over HTTP).
  const humanLogFiles = services.humanLog instanceof FileHumanLog ? services.humanLog : undefined;
  const humanLogRetention = services.config.humanLog.retentionDays;
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
          scripts: scriptsContextOf(services),
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
    ...(instance.domain === 'system' && isBuiltin
      ? {
          chatMaintenance: {
            compact: () =>
              compactChat({
                directory: path.join(services.config.paths.dataDir, 'chat'),
                retention: chatRetentionOf(services),
                signal,
                onError: (conversation, error) =>
                  logger.warn({ conversation, err: error }, "could not compact a conversation's chat stores"),
              }),
          },
        }
      : {}),
    ...(instance.domain === 'system' && isBuiltin && humanLogFiles && humanLogRetention !== undefined
      ? { humanLogMaintenance: { prune: () => humanLogFiles.prune({ retentionDays: humanLogRetention }) } }
      : {}),
    // The builtin system integration runs personas and sub-agents; the builtin chat reads its conversations' personas.
    ...((instance.domain === 'system' || instance.domain === 'chat') && isBuiltin
      ? { agents: agentsContext(services, task, parking, logger) }
      : {}),
    // Memory's stores hold what the owner wrote about people: code shipped with Assistant only.
    ...(services.memory && isBuiltin ? { memory: memoryFor(services.memory, services) } : {}),
    ...(services.codeact && isBuiltin ? { codeact: codeActFor(services, services.codeact, task, logger) } : {}),
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
      const {
        model: chosen,
        profile,
        onEvent,
        transcriptName,
        persona,
        grants,
        transcriptState,
        ancestry: claimedAncestry,
        ...rest
      } = options;
      // Only code shipped with Assistant may write into other tasks' event streams.
      const ancestry = isBuiltin ? claimedAncestry : undefined;
      const channel = steeringChannel(services, task.id);
      const transcript = noteTranscript({
        notes: services.notes,
        taskId: task.id,
        title: `${task.type} ${transcriptName ?? task.id}`,
        ...(transcriptName === undefined ? {} : { name: transcriptName }),
        ...(transcriptState === undefined ? {} : { state: transcriptState }),
      });
      // Events reach people through events.jsonl (SSE, `assistant task watch`) in the order they happen.
      let writing = Promise.resolve();
      // A sub-agent's events also go to every task above it, tagged with the lineage from the root and its id, so the
      // root's stream shows the whole tree (never the parent's model context).
      const ancestorChannels = (ancestry?.tasks ?? []).map((taskId) => steeringChannel(services, taskId));
      const record = (event: Record<string, unknown>) => {
        writing = writing
          .then(async () => {
            await channel.event(event as never);
            if (ancestry === undefined) return;
            const lineage = Array.isArray(event.lineage) ? (event.lineage as string[]) : [];
            const tagged = {
              ...event,
              lineage: [...ancestry.lineage.slice(0, -1), ...lineage],
              subagent: ancestry.child,
              task: task.id,
            };
            for (const ancestor of ancestorChannels) await ancestor.event(tagged as never);
          })
          .catch((error: unknown) => logger.warn({ err: error }, 'could not write an agent event'));
      };
      const policyGate = (approve: readonly string[]) =>
        createToolCallGate({
          notes: services.notes,
          humanLog: services.humanLog,
          // A persona's `tools.approve` adds to config.yaml's: its calls wait for the owner like those config names.
          policy:
            approve.length === 0
              ? services.config.tools
              : { ...services.config.tools, approve: [...services.config.tools.approve, ...approve] },
          approvalTimeoutMs: services.config.tools.approvalTimeoutMs,
          task: { id: task.id },
          instance: { name: instance.name, domain: instance.domain },
          item: `${transcriptsFolder}/${transcriptName ?? task.id}.md`,
        });
      const gate = parkWhileWaiting(personaGate({ grants, persona, personas: services.personas, policyGate }), parking);
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
/**
 * The `retention` setting of the chat instance (the builtin `chat`, or the first one config.yaml names): every chat
 * instance shares `data/chat`, so one setting bounds it. The defaults when there is none (a worker without chat).
 */
function chatRetentionOf(services: WorkerServices): ChatRetention {
  const instances = services.registry?.instances().filter((instance) => instance.domain === 'chat') ?? [];
  const chat = instances.find((instance) => instance.name === 'chat') ?? instances[0];
  const settings = chat?.settings.retention as
    | { events_max_bytes?: number; events_max_age?: number; events_idle?: number; answered_inbox?: number }
    | undefined;
  const defaults = defaultChatRetention;
  return {
    events: {
      maxBytes: settings?.events_max_bytes ?? defaults.events.maxBytes,
      maxAgeMs: settings?.events_max_age ?? defaults.events.maxAgeMs,
      idleMs: settings?.events_idle ?? defaults.events.idleMs,
    },
    answeredInboxMs: settings?.answered_inbox ?? defaults.answeredInboxMs,
  };
}

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

/** The gate of a loop's persona (fixed grants, or a persona read at the first call), then config.yaml's tool gate. */
function personaGate(options: {
  grants: GrantChain | undefined;
  persona: string | undefined;
  personas: WorkerServices['personas'];
  policyGate: (approve: readonly string[]) => ToolGate;
}): ToolGate {
  const { grants, persona, personas, policyGate } = options;
  if (grants === undefined && persona === undefined) return policyGate([]);
  let chain: Promise<GrantChain> | undefined;
  let policy: ToolGate | undefined;
  const chainOf = (): Promise<GrantChain> => {
    if (grants !== undefined) return Promise.resolve(grants);
    if (personas === undefined) {
      return Promise.reject(new AssistantError('PERSONA_UNKNOWN', `persona ${persona} cannot be read here`));
    }
    chain ??= personas(persona as string).then(rootGrantChain);
    return chain;
  };
  return async (request) => {
    let current: GrantChain;
    try {
      current = await chainOf();
    } catch (error) {
      // A persona that cannot be read grants nothing: refusing is the safe side, and the model and trace say why.
      chain = undefined;
      return { run: false, reason: `PERSONA_INVALID: ${error instanceof Error ? error.message : String(error)}` };
    }
    // A child always may end its work and give its caller the result: that is no power over anything.
    if (request.tool.name !== 'reply_to_caller') {
      const verdict = grantVerdict(current, request.tool.name);
      if (verdict.verdict === 'deny') return { run: false, reason: `PERSONA_TOOL_DENIED: ${verdict.because}` };
    }
    policy ??= policyGate(current.approve);
    return policy(request);
  };
}

/** Personas and sub-agents for the builtin system integration's handlers (system.agent, system.workflow). */
function agentsContext(services: WorkerServices, task: Task, parking: SlotParking, logger: Logger): AgentsContext {
  const root = agentsRoot(services.config.paths.dataDir);
  const persona = (name?: string): Promise<Persona> => {
    if (services.personas === undefined) {
      // A worker given no persona files (tests of bare handlers) still has the built-in default.
      if (name === undefined || name === defaultPersonaName) return Promise.resolve(builtinDefaultPersona());
      return Promise.reject(new AssistantError('PERSONA_UNKNOWN', 'no personas are available to this worker'));
    }
    return services.personas(name ?? defaultPersonaName);
  };
  const steerChild = async (
    taskId: string,
    request: { action: 'pause' | 'resume' | 'stop' | 'interject'; message?: string },
  ) => {
    const { action, message } = request;
    await steeringChannel(services, taskId).request({
      action,
      ...(message === undefined ? {} : action === 'stop' ? { reason: message } : { message }),
      // Who asked, for the child's outcome and people: its parent task.
      source: `agent:${task.id}`,
    });
  };
  return {
    persona,
    subagents: (whose) => {
      const record: ChildRecord | undefined = whose.record;
      return new FileSubAgents({
        root,
        parent: {
          taskId: task.id,
          ...(whose.persona === undefined ? {} : { persona: whose.persona }),
          ...((whose.grants ?? record?.grants) === undefined
            ? {}
            : { grants: (whose.grants ?? record?.grants) as GrantChain }),
          depth: record?.depth ?? 0,
          maxDepth: record?.max_depth ?? whose.persona?.maxDepth ?? 3,
          maxChildren: whose.persona?.maxChildren ?? 5,
          rootTask: record?.root_task ?? task.id,
          lineage: record?.lineage ?? [whose.label],
          ancestors: record?.ancestors ?? [],
          ...((whose.blackboard ?? record?.blackboard) === undefined
            ? {}
            : { blackboard: (whose.blackboard ?? record?.blackboard) as string }),
          ...((whose.run ?? record?.run) === undefined ? {} : { run: (whose.run ?? record?.run) as string }),
        },
        persona,
        enqueue: (payload) =>
          services.queue.enqueue({
            type: 'system.agent',
            payload,
            // Before collection and classification (3–7): a parent waits for it, so it is the owner's work in progress.
            priority: 2,
            source: 'automation',
            integration: task.integration ?? 'system',
            policies: false,
          }),
        taskState: async (taskId) => (await services.queue.get(taskId))?.state,
        interject: (taskId, text) => steerChild(taskId, { action: 'interject', message: text }),
        maxLive: services.config.agents.maxLive,
        parking,
      });
    },
    childRecord: (reference) => readChildRecord(root, reference.parent, reference.id),
    childResult: (record) => readChildResult(root, record.parent_task, record.id),
    claimChild: (record) => claimChild({ root, parentTask: record.parent_task, childId: record.id, taskId: task.id }),
    deliver: async (record, result) => {
      // The blackboard first: a crash between the two writes runs the child's task again, which finds nothing in the
      // inbox and appends nothing twice (entries are keyed by the child's id).
      if (record.blackboard !== undefined) {
        await appendBlackboardEntry({
          notes: services.notes,
          path: record.blackboard,
          entry: {
            id: record.id,
            who: `${record.persona} (${record.lineage.join(' › ')})`,
            what: result.answer ?? `${result.status}: ${result.reason ?? 'no answer'}`,
            at: result.finished_at,
          },
        });
      }
      return deliverChildResult({ root, record, result });
    },
    pruneFinished: () => pruneTaskFolders(root, services.queue),
    followSteering: (target) =>
      applySteering({
        channel: steeringChannel(services, task.id),
        target,
        logger: { warn: (message) => logger.warn(message) },
      }),
    steerChildren: async (request) => {
      const children = path.join(root, task.id);
      for (const id of await listIds(path.join(children, 'children'))) {
        const record = await readChildRecord(root, task.id, id);
        const childTask = (await childOwner(root, task.id, id)) ?? record?.task_id;
        if (childTask === undefined) continue;
        if ((await readChildResult(root, task.id, id)) !== undefined) continue;
        await steerChild(childTask, request).catch(
          (error: unknown) =>
            // A child that just finished refuses; the others are still steered.
            void error,
        );
      }
    },
  };
}

/**
 * The worker's memory as a builtin handler sees it, with what only config.yaml and the registry know: the instance
 * that runs `memory.consolidate` (whatever config.yaml names it; null when none is enabled) and the owner's own
 * identities (`memory.owner_identities`, and the email instances' logins that are addresses).
 */
function memoryFor(memory: MemoryContext, services: WorkerServices): MemoryContext {
  const { registry, config } = services;
  const logins = config.integrations.flatMap((instance) => {
    const login = instance.type === 'email' ? instance.settings.username : undefined;
    return typeof login === 'string' && login.includes('@') ? [login.trim().toLowerCase()] : [];
  });
  return {
    consolidate: memory.consolidate,
    llm: memory.llm,
    timeZone: memory.timeZone,
    context: memory.context,
    // The stores are made on first use: read through, not copied.
    get stores() {
      return memory.stores;
    },
    index: memory.index,
    ...(registry ? { instance: memoryInstanceOf(registry.instances()) } : {}),
    ownerIdentities: [...new Set([...(config.memory.ownerIdentities ?? []), ...logins])],
  };
}

/** Removes the folders under `root` named by a task id the queue no longer has (pruned); returns how many. */
async function pruneTaskFolders(root: string, queue: TaskQueue): Promise<number> {
  let removed = 0;
  const names = await readdir(root).catch((error: unknown) => {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [] as string[];
    throw error;
  });
  for (const name of names) {
    // Only folders named by a task id; anything else there is a person's, left alone.
    if (!taskIdPattern.test(name)) continue;
    if ((await queue.get(name)) !== undefined) continue;
    await rm(path.join(root, name), { recursive: true, force: true });
    removed++;
  }
  return removed;
}

/** config.yaml's scripts and how they run here, for the script integration and for code cells. */
function scriptsContextOf(services: WorkerServices): ScriptsContext {
  return {
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
  };
}

/**
 * Code as action for a task's loops: the worker's one sandbox, call logs under `data/codeact/<task>/`, and the
 * owner's scripts as functions a cell can find and call (`tools.scripts.<name>`, gated like any tool).
 */
function codeActFor(services: WorkerServices, executor: () => Executor, task: Task, logger: Logger): CodeActContext {
  const root = path.join(services.config.paths.dataDir, 'codeact');
  return {
    // Built when a loop asks for code mode, not with every builtin task's context: each script is a tool schema.
    tools: (tools, options = {}) => {
      const scripts = scriptTools({
        ...scriptsContextOf(services),
        configDir: path.dirname(services.config.paths.configFile),
        onLog: (script, level, message) => {
          if (level === 'human') {
            void services.humanLog.write({ source: `script/${script}`, message }).catch(() => {});
          } else logger[level]({ script }, message);
        },
      });
      return codeTools({
        tools: [...tools, ...scripts.filter((script) => !tools.some((tool) => tool.name === script.name))],
        executor: executor(),
        callLog: ({ loop, callId, codeSha256 }) =>
          new FileCallLog(root, { task: task.id, loop, call_id: callId, code_sha256: codeSha256 }),
        ...(options.discovery === undefined ? {} : { discovery: options.discovery }),
      });
    },
    pruneFinished: () => pruneTaskFolders(root, services.queue),
  };
}
