// What the worker shares between the contexts of all the tasks it runs, at the bottom of the worker's imports: the
// handler context (create-handler-context.ts) and the chat console it builds (chat-console.ts) both read it, and
// neither imports the other for it (issue 38: no import circles).

import type { Persona } from '@assistant/agents';
import type { Executor } from '@assistant/codeact';
import type { LoadedConfig } from '@assistant/config';
import type { EventSink } from '@assistant/events';
import type { IntegrationRegistry, MemoryContext, ScriptsContext } from '@assistant/integration-host';
import type { ChatModel } from '@assistant/llm';
import type { McpServers } from '@assistant/mcp/client';
import type { HumanLog, NoteStore, PauseState } from '@assistant/notes';
import type { EnqueueOutcome, TaskConsumer, TaskQueue } from '@assistant/queue';
import { ControlFiles, type SteeringChannel } from '@assistant/steering';

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
   * What is paused, read before every task (pause-reader.ts: again only when the note's file changed).
   * @default the pause note read through `notes` every time (a worker on another machine, tests of bare handlers)
   */
  pauses?: () => Promise<PauseState>;
  /**
   * The event ledger (`data/events/`): finished and failed tasks are written there, and handlers report what they
   * take in (`context.events`). @default none: no events (tests of bare handlers, a worker on another machine)
   */
  events?: EventSink;
  /**
   * Reads a persona by name, afresh (the owner edits them while the system runs); rejects with PERSONA_UNKNOWN or
   * PERSONA_INVALID. @default none: a loop naming a persona fails, and system.agent runs without one
   */
  personas?: (name: string) => Promise<Persona>;
  /**
   * Memory: the stores and the process's one index, for builtin integrations' handlers (docs/memory.md).
   * @default none (tests of bare handlers, a worker on another machine)
   */
  memory?: MemoryContext;
  /**
   * The code-as-action sandbox (docs/codeact.md), started at the first cell and shared by the worker's loops.
   * @default none: no loop gets run_code (tests of bare handlers)
   */
  codeact?: () => Executor;
}

/** The task's steering channel: the worker's own (`services.steering`), or the control files on this machine. */
export function steeringChannel(services: WorkerServices, taskId: string): SteeringChannel {
  return services.steering?.(taskId) ?? new ControlFiles({ root: services.config.paths.control, taskId });
}
