import type { ApprovalsIndex } from '@assistant/actions';
import type { ChatService } from '@assistant/chat';
import type { LoadedConfig } from '@assistant/config';
import type { EventLedger } from '@assistant/events';
import type { CompiledHook } from '@assistant/hooks';
import type { IntegrationRegistry } from '@assistant/integration-host';
import type { FileHumanLog, RootedNoteStore } from '@assistant/notes';
import type { TaskQueue } from '@assistant/queue';
import type { DataPaths } from '../data-paths.ts';
import type { OwnerMemory } from '../memory/server-memory.ts';
import type { ServerCatalog, ServerMetrics, ServerStatusSources } from '../server-catalog.ts';
import type { LiveHub } from './live.ts';
import type { DashboardSessions } from './session.ts';

/** What every dashboard page may use: the same stores and sources the API routes use, opened once by the server. */
export interface DashboardContext {
  config: LoadedConfig;
  /** The server's queue (opened as the server gets ready). */
  queue: () => TaskQueue;
  /** The files themselves, not an interface: pages show where a note is and watch the folders and the log. */
  notes: RootedNoteStore;
  humanLog: FileHumanLog;
  paths: DataPaths;
  catalog: ServerCatalog;
  registry: IntegrationRegistry | undefined;
  /** Breakers, schedules and listeners, as /health reads them. */
  status: ServerStatusSources;
  metrics: ServerMetrics;
  chat: () => ChatService;
  sessions: DashboardSessions;
  /** The one server-sent event stream each page subscribes to (`GET /live`). */
  live: LiveHub;
  /** `data/control`: steering requests and agent events, per task. */
  controlRoot: string;
  /** Aborted as the server shuts down: long-lived streams end. */
  signal: AbortSignal;
  /** The event ledger (`data/events/`), read by the Events page. */
  events: EventLedger;
  /** The hooks as loaded; the worker runs them, the Hooks page shows them. */
  hooks: readonly CompiledHook[];
  /** Memory's stores and the server's one index: the Contacts and My tasks pages, and "Needs you". */
  memory: OwnerMemory;
  /** The approval requests, read incrementally: the nav's count, the Overview, the Approvals page, a timeline. */
  approvals: ApprovalsIndex;
}
