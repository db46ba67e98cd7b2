import type { IntegrationRegistry } from '@assistant/integration-host';
import type { LlmProfiles, ModelProfileLimits } from '@assistant/llm';

/** A manifest stage marked `llm: true`: its tasks run in a lane of their own, sized by its LLM profiles. */
export interface LlmStage {
  /** `${domain}.${platform}.${stage}` */
  type: string;
  /** The LLM profiles of the domain's enabled instances (their `llm`, `default` when unset), sorted. */
  profiles: string[];
  /** The stage listed just before it in its platform's `stages:`, which feeds it; none for a first stage. */
  feeder?: string;
}

/** What the worker publishes about one LLM lane for /health, /metrics and the dashboard. */
export interface LaneSnapshot {
  type: string;
  profiles: string[];
  /** Handlers of the type running in this worker. */
  running: number;
  capacity: number;
  /** Pending tasks of the type, ready or not, as this worker's index knows them. */
  pending: number;
  /**
   * Why this worker claims none of its tasks now: `breaker open until …`, `model unavailable until …`; or, when
   * only its feeder is held, `backlog full`.
   */
  held?: string;
}

/** The LLM stages of the registry's manifests that an enabled instance runs, with those instances' profiles. */
export function llmStagesOf(registry: IntegrationRegistry | undefined): LlmStage[] {
  if (!registry) return [];
  const stages: LlmStage[] = [];
  for (const info of registry.taskTypes()) {
    if (info.kind !== 'stage' || info.platform === undefined || info.stage === undefined) continue;
    const platform = registry.manifestPlatform(info.domain, info.platform);
    const declared = platform?.stages[info.stage];
    if (!platform || !declared?.llm) continue;
    const names = Object.keys(platform.stages);
    const feederStage = names[names.indexOf(info.stage) - 1];
    // No enabled instance, no tasks to speak of: a stray one runs in the IO lane rather than a lane on the dashboard.
    const instances = registry.instances().filter((instance) => instance.domain === info.domain && instance.enabled);
    if (instances.length === 0) continue;
    stages.push({
      type: info.type,
      profiles: [...new Set(instances.map((instance) => instance.llm))].sort(),
      ...(feederStage === undefined ? {} : { feeder: `${info.domain}.${info.platform}.${feederStage}` }),
    });
  }
  return stages;
}

/**
 * How many tasks of an LLM stage may run at once: twice what its profiles send at once, so that a model slot freed
 * is filled at once by a task already waiting inside the gate. An adaptive profile counts one more than its current
 * limit: its gate grows only while it is kept full, which the tasks busy outside their model call would otherwise
 * often prevent at a low limit. A profile the status does not list (not configured: its tasks fail at once) counts
 * as one.
 */
export function laneCapacity(profiles: readonly string[], status: readonly ModelProfileLimits[]): number {
  let inFlight = 0;
  for (const profile of profiles) {
    const entry = status.find((candidate) => candidate.profile === profile);
    inFlight += Math.max(1, entry?.maxInFlight ?? 1) + (entry?.adaptive === undefined ? 0 : 1);
  }
  return 2 * Math.max(1, inFlight);
}

/** Whether any of the profiles would send a call now, and otherwise the earliest time one may. */
export function profilesAvailability(
  llm: Pick<LlmProfiles, 'availability'>,
  profiles: readonly string[],
  nowMs: number,
): { available: true } | { available: false; retryAtMs: number } {
  let retryAtMs = Number.POSITIVE_INFINITY;
  for (const profile of profiles) {
    const availability = llm.availability(profile, nowMs);
    if (availability.available) return { available: true };
    retryAtMs = Math.min(retryAtMs, availability.retryAtMs);
  }
  return { available: false, retryAtMs };
}
