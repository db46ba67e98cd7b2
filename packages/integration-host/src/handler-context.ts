import type { EnqueueActionsResult, RunActionOnceResult } from '@assistant/actions';
import type { AgentOptions, SteerableHandle, Tool } from '@assistant/agent';
import type { ChildRecord, ChildResult, GrantChain, Persona, SubAgents } from '@assistant/agents';
import type { AutomationMatch, CompiledRule, ItemFacts, ResolvedAction } from '@assistant/automations';
import type { ChatCompactionReport, ChatEventLog, ChatInbox, ConversationStore, TurnStates } from '@assistant/chat';
import type { Automation, Classification, ScriptConfig } from '@assistant/config';
import type { EventSink } from '@assistant/events';
import type { ChatModel } from '@assistant/llm';
import type { HumanLogEntry, NoteStore } from '@assistant/notes';
import type { EnqueueOutcome, JsonValue, QueueMaintenance, Task } from '@assistant/queue';
import type { Logger } from 'pino';
import type { ChatConsole } from './chat-console.ts';
import type { MemoryContext } from './memory-context.ts';

/** The integration instance a task belongs to, with its settings as validated by the manifest's schema. */
export interface InstanceContext<Settings = Record<string, unknown>> {
  /** The instance name from config.yaml (`personal-mail`), or the manifest's default instance. */
  name: string;
  /** The integration's domain (`email`), which is also the instance's `type:`. */
  domain: string;
  settings: Settings;
  /** The LLM profile the instance uses. @default 'default' */
  llm: string;
}

/** The platform a stage task belongs to, with the instance's config for it. */
export interface PlatformContext {
  name: string;
  enabled: boolean;
  settings: Record<string, unknown>;
  classifications: Record<string, Classification>;
  automations: Automation[];
}

export interface HandlerEnqueueOptions {
  /** A stage of the same platform (`collect`), which sets the type and its priority… */
  stage?: string;
  /** …or any task type. */
  type?: string;
  payload?: JsonValue;
  /** @default the stage's priority from the manifest, else 5 */
  priority?: number;
  readyAtMs?: number;
  /** @default the instance of the running task */
  integration?: string;
}

export interface HumanLogDetails extends Omit<HumanLogEntry, 'message' | 'source'> {
  /** @default `{instance}/{platform}` or the task type */
  source?: string;
}

/**
 * What a handler gets to run one task. Enqueues from a handler go through the queue's policies (dedup, rate
 * limits) as `automation` tasks of the same instance.
 */
export interface HandlerContext<Payload = JsonValue, Settings = Record<string, unknown>> {
  task: Task;
  payload: Payload;
  instance: InstanceContext<Settings>;
  /** Set for stage tasks (`email.inbox.collect`). */
  platform?: PlatformContext;
  /**
   * The folder of config.yaml: relative paths in the instance's settings (`maildir: ./Mail`) resolve against it.
   * A handler sees its own instance's settings and nothing else of the config: not other instances (their
   * passwords), not the server token, not other LLM profiles.
   */
  configDir: string;
  /**
   * The data directory (`data/`): an integration keeps state that is not a note (a search's ETag, a cursor) in a
   * folder of its domain there, `data/<domain>/<instance>/…`, never elsewhere.
   */
  dataDir: string;
  /**
   * The event ledger (`data/events/`, docs/events.md): report what was taken in (a mail, a delivery) with a native id
   * of the source, so a redelivery is the same event. Absent where no ledger is kept (tests, a remote worker).
   */
  events?: EventSink;
  /** Only for the builtin `script` integration's handler: config.yaml's `scripts:` and where they may run. */
  scripts?: ScriptsContext;
  /** Notes under `data/notes`. */
  notes: NoteStore;
  /** Aborted on timeout and on shutdown; pass it to everything you await. */
  signal: AbortSignal;
  enqueue(options: HandlerEnqueueOptions): Promise<EnqueueOutcome>;
  /** For stage tasks: the platform's rules, compiled, and the pure evaluation of an item's facts against them. */
  automations: {
    rules: readonly CompiledRule[];
    evaluate(facts: ItemFacts, nowMs?: number): AutomationMatch[];
  };
  /**
   * Takes the matched rules' actions for one item (its note): scripts and services as their own tasks, platform
   * actions in the platform's `act` task, rules that need approval as approval requests. Each action is recorded on
   * the note and never taken twice.
   */
  enqueueActions(options: {
    notePath: string;
    matches: readonly AutomationMatch[];
    title?: string;
    /**
     * Writes the full text of an action that sends or posts words (a reply, a comment), undefined for others: called
     * before the approval request is made or a `!yolo` action is enqueued, so the owner approves that text and the
     * act task sends exactly it (`action.text`). A throw (a model outage) leaves nothing made, and the task waits.
     */
    writeText?: (action: ResolvedAction) => Promise<string | undefined>;
  }): Promise<EnqueueActionsResult>;
  /**
   * Runs an action that cannot be undone at most once per item, however often it is listed, retried or enqueued:
   * under the item note's lock, the action's key is looked up in the note's `actions_started` and recorded there
   * before `run` is called. Returns `{ran: false}` without calling `run` when it began before. A crash after the
   * record leaves it recorded and not done (the safe side); a `run` that throws fails the task without retries.
   */
  actOnce<T>(options: { notePath: string; key: string }, run: () => Promise<T>): Promise<RunActionOnceResult<T>>;
  log: {
    /** A line in today's human log: what happened and why, for the owner to read. */
    human(message: string, details?: HumanLogDetails): Promise<void>;
    info(message: string, fields?: Record<string, unknown>): void;
    warn(message: string, fields?: Record<string, unknown>): void;
  };
  /** The worker's structured logger, with the task's id and type on every line. */
  logger: Logger;
  /**
   * An LLM profile from config.yaml as a model (`Conversation`, structured output, agent loops use it). A handler
   * may use its instance's `llm:` profile only; builtin integrations (shipped with Assistant) may name any profile.
   * The model holds its token out of reach: a handler can send requests with it, never read it.
   * @default the instance's `llm:` profile, else `default`
   */
  llm(profile?: string): ChatModel;
  /**
   * Starts a steerable agent loop for this task: its transcript is the note `transcripts/<task-id>.md` (a task
   * restarted after a crash resumes from it), steering requests for the task (`assistant steer`, `POST
   * /api/tasks/:id/steer`) reach it, and its events go to `data/control/<task-id>/events.jsonl`. Aborting the
   * task's signal (timeout, shutdown) stops it.
   */
  agent(options: AgentTaskOptions): SteerableHandle;
  /**
   * The tools of the MCP servers config.yaml's `mcp_servers:` defines under these names, as agent tools named
   * `server__tool` with their tiers (docs/mcp.md), to pass to {@link agent}. The worker shares its servers between
   * all its loops and starts each on first use. Rejects with MCP_SERVER_UNKNOWN for a name config does not define
   * and MCP_SERVER_UNAVAILABLE for a server that cannot be started; an empty list gives no tools.
   */
  mcpTools(serverNames: readonly string[]): Promise<Tool[]>;
  /**
   * Only for the builtin `system` integration's handlers: queue housekeeping (prune finished tasks, recover those
   * of stopped workers, counts). Integrations enqueue through `enqueue`; nothing else of the queue is theirs.
   */
  queueMaintenance?: QueueMaintenance;
  /**
   * Only for the builtin `chat` integration's handlers: what a chat turn's tools do beyond enqueueing (read tasks
   * and approvals, decide and propose approvals, trigger, enqueue a service, steer a task). See ChatConsole.
   */
  console?: ChatConsole;
  /** Only for the builtin `chat` integration's handlers: its conversations, inbox, event logs and turn leases. */
  chat?: ChatContext;
  /**
   * Only for the builtin `system` integration's handlers: compacts the chat stores by the chat instance's
   * `retention` (event logs of idle conversations, answered inbox messages; decisions 0077 and 0078).
   */
  chatMaintenance?: { compact(): Promise<ChatCompactionReport> };
  /**
   * Only for the builtin `system` integration's handlers, when `human_log.retention_days` is set and the log's files
   * are on this machine: removes the day files older than the retention, returning how many.
   */
  humanLogMaintenance?: { prune(): Promise<number> };
  /** Only for the builtin `system` integration's handlers: personas and sub-agents. */
  agents?: AgentsContext;
  /**
   * Only for builtin integrations' handlers: memory (docs/memory.md): which domains are consolidated, the stores of
   * contacts, facts, the owner's tasks and guidance, and the worker's one index. Absent in a worker without memory
   * (tests of bare handlers).
   */
  memory?: MemoryContext;
  /**
   * Only for builtin integrations' handlers: code as action (docs/codeact.md). Absent in a worker without the
   * sandbox (tests of bare handlers).
   */
  codeact?: CodeActContext;
}

/** Code as action for a task's loops: the worker's sandbox and this task's call logs (`data/codeact/<task>/`). */
export interface CodeActContext {
  /**
   * `run_code` and `search_tools` over `tools` (a loop's other tools): add them to the loop's tools. With
   * `discovery`, run_code lists no tools and the model finds them with search_tools.
   */
  tools(tools: readonly Tool[], options?: { discovery?: boolean }): Tool[];
  /** Removes the call logs of tasks pruned from the queue (`data/codeact/<task-id>/`); returns how many tasks'. */
  pruneFinished(): Promise<number>;
}

/** The chat stores over the config's data folder: `data/chat/{inbox,events,turns}`, conversations as notes. */
export interface ChatContext {
  conversations: ConversationStore;
  inbox: ChatInbox;
  events: ChatEventLog;
  turns: TurnStates;
  /**
   * Refuses the steering requests written for this task that no loop has applied yet (a `/stop` that came as the
   * turn it was meant for ended), so they do not reach the task's next turn. Returns how many there were.
   */
  discardSteering(reason: string): Promise<number>;
}

/** What the `script` integration needs to run config.yaml's scripts, and nothing more of the config. */
export interface ScriptsContext {
  /** config.yaml's `scripts:`. */
  scripts: Readonly<Record<string, ScriptConfig>>;
  /** Where each script gets a work folder of its own (`<data>/scripts`). */
  workRoot: string;
  /** Paths never mounted into a script's sandbox (config.yaml, secrets.yaml, data/, the LLM cache). */
  privatePaths: readonly string[];
  /**
   * How scripts run (`worker.sandbox`), and under `bubblewrap` the bwrap executable (`bwrap` on PATH when absent);
   * the script integration passes it to runScript, which tries bubblewrap before running anything and refuses the
   * script when it does not work.
   */
  sandbox: { mode: 'bubblewrap'; bubblewrapPath?: string } | { mode: 'none' };
}

/** What `context.agent` takes: the agent options, with the model and the transcript provided by the task. */
/** No `gate`: the worker gives every loop config.yaml's tool gate, and a handler cannot swap it for a laxer one. */
export type AgentTaskOptions = Omit<AgentOptions, 'model' | 'transcript' | 'signal' | 'parent' | 'gate'> & {
  /** @default the model of `profile` */
  model?: ChatModel;
  /** @default the instance's LLM profile */
  profile?: string;
  /**
   * The loop's transcript is the note `transcripts/<transcriptName>.md`, so one task can run several loops and a
   * loop can be resumed by another task. Letters, digits, `.`, `_` and `-`, at most 160 characters.
   * @default the task id
   */
  transcriptName?: string;
  /**
   * The persona whose grants gate every tool call of the loop (read when the first call is made): a tool it does not
   * grant is refused with `PERSONA_TOOL_DENIED`, and its `tools.approve` patterns make calls wait for the owner.
   * Ignored when `grants` is given. @default no persona: config.yaml's tool gate only
   */
  persona?: string;
  /** Grants fixed when the loop was spawned (a sub-agent's, docs/agents.md "Inheritance"). */
  grants?: GrantChain;
  /** Kept with the transcript, in the same write (see AgentLoopState). */
  transcriptState?: { restore(data: unknown): void; snapshot(): unknown };
  /**
   * The tasks above this loop's task, when it is a sub-agent: its events also go to each of their event streams,
   * tagged with the lineage from the root. Builtin handlers only.
   */
  ancestry?: { tasks: string[]; lineage: string[]; child: string };
};

/** Whose children: a root loop (its persona), a child (its record and persona), or a workflow's runner (neither). */
export interface SubAgentsFor {
  /** The loop's label (`system.agent`, `system.workflow`): the first name of its children's lineage. */
  label: string;
  persona?: Persona;
  /** The loop's grants (a root's from its persona; a child's from its record). */
  grants?: GrantChain;
  /** When the loop is itself a child: depth, limits, lineage, blackboard and run come from its record. */
  record?: ChildRecord;
  blackboard?: string;
  run?: string;
}

/**
 * Only for the builtin `system` integration's handlers: personas and sub-agents (docs/agents.md). Each call reads
 * the files afresh, so what the owner edits applies to the next loop or spawn.
 */
export interface AgentsContext {
  /** A persona by name, or the default persona (`assistant`); rejects with PERSONA_UNKNOWN or PERSONA_INVALID. */
  persona(name?: string): Promise<Persona>;
  /** The children of a loop of this task, for its tools (agentTools) or a workflow's runner. */
  subagents(parent: SubAgentsFor): SubAgents;
  /** The spawn record of the child this task runs (`payload.subagent`); undefined when there is none. */
  childRecord(reference: { parent: string; id: string }): Promise<ChildRecord | undefined>;
  /**
   * Claims the child for this task, once: answers the id of the task that runs it (this one, or another task made
   * for the same child by a crash at its spawn, which this one must then leave it to).
   */
  claimChild(record: ChildRecord): Promise<string>;
  /** The child's result when it is already in its parent's inbox (this task ran before and was cut short). */
  childResult(record: ChildRecord): Promise<ChildResult | undefined>;
  /**
   * Puts the child's result into its parent's inbox (once) and onto the run's blackboard when it has one: before the
   * child's task counts as done.
   */
  deliver(record: ChildRecord, result: ChildResult): Promise<'written' | 'present'>;
  /** Steers this task's running children as the task itself was steered (pause, resume, stop reach the whole tree). */
  steerChildren(request: { action: 'pause' | 'resume' | 'stop'; message?: string }): Promise<void>;
  /**
   * Applies the steering requests made of this task (`assistant steer`, REST, the dashboard) to `target`, for a
   * handler that steers without an agent loop of its own (a workflow's runner), until `close()`. A request `target`
   * throws on is refused with its message.
   */
  followSteering(
    target: Pick<SteerableHandle, 'pause' | 'resume' | 'interject' | 'stop' | 'ask' | 'answerClarification' | 'done'>,
  ): { close(): Promise<void> };
  /**
   * Removes the sub-agent folders (`data/agents/<task-id>/`: spawn records, inbox, claims) of tasks the queue no longer
   * holds in any state (pruned by `queue.retention`), for housekeeping; answers how many it removed. Transcripts
   * and blackboards are notes and stay.
   */
  pruneFinished(): Promise<number>;
}

/**
 * Runs one task and returns its result (plain JSON data). Throw RetryableError, UnrecoverableError or DelayedError
 * (from `@assistant/sdk`) to steer what happens next; any other error is retried up to the type's `max_attempts`.
 */
// biome-ignore lint/suspicious/noExplicitAny: handlers narrow the payload and settings types for themselves.
export type TaskHandler = (context: HandlerContext<any, any>) => Promise<unknown>;
