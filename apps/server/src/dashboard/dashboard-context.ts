import type { ChatService } from '@assistant/chat';
import type { LoadedConfig } from '@assistant/config';
import type { IntegrationRegistry } from '@assistant/integration-host';
import type { FileHumanLog, RootedNoteStore } from '@assistant/notes';
import type { TaskQueue } from '@assistant/queue';
import type { DataPaths } from '../data-paths.ts';
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
}
