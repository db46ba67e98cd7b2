import type { HookState } from '@assistant/hooks';
import type { IntegrationRegistry } from '@assistant/integration-host';
import type { LlmStage, TaskMetrics } from '@assistant/metrics';
import type { PauseState } from '@assistant/notes';
import type { JsonValue } from '@assistant/queue';
import type { BreakerState, ScheduledJobStatus } from '@assistant/scheduler';
import type { ListenerStatus } from './listener-supervisor.ts';
import type { SupervisedProcessStatus } from './supervisor-status.ts';

/** What the server needs to know about integrations: which task types exist and what a trigger enqueues. */
export interface ServerCatalog {
  /** Task types a handler exists for; `POST /api/tasks` refuses any other. */
  taskTypes(): string[];
  hasTaskType(type: string): boolean;
  /** The entry task of an integration instance's platform, for manual triggers. */
  entryTask(
    instance: string,
    platform: string,
  ):
    | { ok: true; type: string; priority: number; integration: string; payload: JsonValue }
    | { ok: false; status: 404 | 409; message: string };
  /** The LLM-bound stages (`llm: true` in a manifest) and the profiles they call, for the model backlog. @default none */
  llmStages?: () => LlmStage[];
}

/**
 * The fields of a circuit breaker that /health shows; `worker` for one that a worker keeps in its own data directory
 * (on another machine) and published, rather than one of the server's notes.
 */
export type BreakerSummary = Pick<
  BreakerState,
  'taskType' | 'state' | 'consecutiveFailures' | 'retryAt' | 'lastError'
> & {
  worker?: string;
};

/** The fields of a scheduled job that /health shows. */
type ScheduleSummary = Pick<ScheduledJobStatus, 'id' | 'description' | 'lastFiredAt' | 'nextRunAt' | 'paused'>;

/** Where /health learns about circuit breakers and schedules; both live in the server process. */
export interface ServerStatusSources {
  /** Every breaker; /health shows the open and half-open ones. @default none */
  breakers?: () => Promise<BreakerSummary[]>;
  /** Every scheduled job with its last and next run. @default none */
  schedules?: () => ScheduleSummary[];
  /** The manifests' listeners the server runs, with their state. @default none */
  listeners?: () => ListenerStatus[];
  /** `assistant start`'s children (server, worker) and their restarts; none outside `start`. @default none */
  processes?: () => Promise<SupervisedProcessStatus[]>;
  /** What the owner paused (`system/paused.md`). @default read from the server's notes */
  pauses?: () => Promise<PauseState>;
  /** Each hook's state (`data/hooks/`); /health shows the breakers that are open or half-open. @default none */
  hooks?: () => Promise<HookState[]>;
}

/**
 * The server's own counters for /metrics: the scheduler records its policy rejections into a {@link TaskMetrics};
 * the route only reads them, summed with the files the workers write.
 */
export type ServerMetrics = Pick<TaskMetrics, 'snapshot'>;

/** The catalog of a process that loaded the integrations. */
export function catalogFromRegistry(registry: IntegrationRegistry): ServerCatalog {
  return {
    taskTypes: () => registry.taskTypes().map((info) => info.type),
    hasTaskType: (type) => registry.taskType(type) !== undefined,
    entryTask: (instance, platform) => registry.entryTask(instance, platform),
    llmStages: () => llmStagesOf(registry),
  };
}

/** Every stage a manifest marks `llm: true`, with the `llm` profiles of its domain's instances (disabled ones too). */
function llmStagesOf(registry: IntegrationRegistry): LlmStage[] {
  const stages: LlmStage[] = [];
  for (const info of registry.taskTypes()) {
    if (info.kind !== 'stage' || info.platform === undefined || info.stage === undefined) continue;
    if (!registry.manifestPlatform(info.domain, info.platform)?.stages[info.stage]?.llm) continue;
    const profiles = new Set(
      registry.instances().flatMap((instance) => (instance.domain === info.domain ? [instance.llm] : [])),
    );
    if (profiles.size > 0) stages.push({ type: info.type, profiles: [...profiles].sort() });
  }
  return stages;
}
