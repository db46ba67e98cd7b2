import type { AgentResultStatus } from '@assistant/agent';
import type { ChatMessage, TokenUsage } from '@assistant/llm';
import type { GrantChain, PersonaBudget } from './persona-types.ts';

/** How much of the parent's conversation a child starts with (docs/agents.md, "Sub-agents"). */
export type SpawnContext =
  | { mode: 'isolated' }
  | { mode: 'fork'; messages: ChatMessage[] }
  | { mode: 'summary'; summary: string };

/** What a parent asks for when it spawns a child. */
export interface SpawnRequest {
  /** The persona the child runs as. */
  persona: string;
  /** What the child is to do, in words: its first user message. */
  task: string;
  /** @default {mode: 'isolated'} */
  context?: SpawnContext;
  /** Less than the persona's budget (never more: the smaller of each wins). */
  budget?: Partial<PersonaBudget>;
  /**
   * Names this spawn within its parent: the same key spawns once, so a parent that replays a step after a crash gets
   * the child it already started instead of a second one. The child's id is derived from it.
   */
  key: string;
  /** Why the parent calls it, for the child's system prompt and people (`said to do X for Y`). @default the task */
  purpose?: string;
  /** A blackboard note (a path in the notes) the child's result is appended to before it counts as done. */
  blackboard?: string;
  /** The workflow run this child belongs to (its run note links every task of the run). */
  run?: string;
  /** The only personas the child may spawn in turn (a star's supervisor: its workers). @default any it is granted */
  maySpawn?: string[];
}

/** `data/agents/<parent-task-id>/children/<child-id>.json`: written when a child is spawned, before its task. */
export interface ChildRecord {
  /** `ag-` + 16 hex digits, from the parent's task id and the spawn key. */
  id: string;
  /** The spawn key the id is made from (`3.0`: the parent's step 3, its first call); absent in older records. */
  key?: string;
  /** The queue task that runs the child; absent in the instant between the record and the enqueue. */
  task_id?: string;
  parent_task: string;
  /** The child's persona. */
  persona: string;
  /** The parent's persona (absent for a workflow's runner, which is no persona). */
  parent_persona?: string;
  task: string;
  purpose: string;
  context: SpawnContext;
  /** 1 for a child of a root loop. */
  depth: number;
  /** The deepest depth allowed under this tree's root, fixed at the root. */
  max_depth: number;
  /** The root's task id and the labels down to this child: `system.agent › researcher`. */
  root_task: string;
  lineage: string[];
  /** The task ids from the root down to the parent, for events and steering walking up. */
  ancestors: string[];
  /** What the child may call, fixed now (docs/agents.md, "Inheritance"). */
  grants: GrantChain;
  budget: PersonaBudget;
  blackboard?: string;
  run?: string;
  /** See SpawnRequest.maySpawn. */
  may_spawn?: string[];
  created_at: string;
}

/** How a child ended; `failed` also for a task that failed for good. */
export type ChildStatus = AgentResultStatus;

/** `data/agents/<parent-task-id>/inbox/<child-id>.json`: a child's result, written once, before the child is done. */
export interface ChildResult {
  id: string;
  task_id: string;
  persona: string;
  status: ChildStatus;
  /** The child's answer (its final message, or what it sent with `reply_to_caller`). */
  answer?: string;
  /** Why it ended early: the limit reached, the stop reason, the error. */
  reason?: string;
  steps: number;
  usage?: TokenUsage;
  finished_at: string;
}

/** A child as `list_agents` and the dashboard show it. */
export interface ChildState {
  record: ChildRecord;
  /** `pending`/`active` while its task runs; `finished` once its result is in the inbox. */
  state: 'starting' | 'pending' | 'active' | 'finished' | 'lost';
  /** Whether the parent's model has been given the result (`wait_agents`). */
  delivered: boolean;
  result?: ChildResult;
}

/**
 * A parent's side of its children, for one running task (`context.subagents` in a builtin handler). A workflow's
 * runner uses it directly; an agent loop gets it as the tools spawn_agent, wait_agents, message_agent, list_agents.
 */
export interface SubAgents {
  readonly parentTaskId: string;
  /** The parent's depth: 0 for a root. */
  readonly depth: number;
  /**
   * Starts a child as its own queue task (or finds the one this key already started). Throws an AssistantError with
   * code AGENT_LIMIT (depth, children, global cap) or PERSONA_UNKNOWN / PERSONA_INVALID, whose message the model
   * reads.
   */
  spawn(request: SpawnRequest): Promise<{ id: string; taskId: string; existing: boolean }>;
  /** A child's result when it is in the inbox. */
  result(id: string): Promise<ChildResult | undefined>;
  /**
   * Waits (the task's worker slot given back meanwhile) until every child named has a result in the inbox, or
   * `timeoutMs` passes, or the signal aborts; answers the results there are and the ids still running.
   */
  wait(
    ids: readonly string[],
    options: { timeoutMs: number; signal: AbortSignal },
  ): Promise<{ results: ChildResult[]; running: string[] }>;
  list(): Promise<ChildState[]>;
  /** Interjects `text` into a running child (a steering request on its task). */
  message(id: string, text: string): Promise<void>;
}
