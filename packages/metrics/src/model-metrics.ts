import type { ModelBreakerState, ModelProfileStatus } from '@assistant/llm';
import * as z from 'zod';

const count = z.int().min(0);
const breakerStates = ['closed', 'half_open', 'open'] as const satisfies readonly ModelBreakerState[];

/** One entry of a published snapshot's `models`: a {@link ModelProfileStatus} as the worker wrote it. */
const modelStatusSchema = z.object({
  profile: z.string().min(1),
  model: z.string(),
  maxInFlight: z.int().min(1),
  adaptive: z.object({ ceiling: z.int().min(1) }).optional(),
  inFlight: count,
  waiting: count,
  requests: count,
  failures: count,
  requestsLastMinute: count,
  tokensLastMinute: count,
  latencyMs: z.number().min(0).nullable(),
  breaker: z.object({
    state: z.enum(breakerStates),
    consecutiveFailures: count,
    retryAt: z.iso.datetime({ offset: true }).optional(),
    lastError: z.string().optional(),
  }),
});

/** One entry of a published snapshot's `lanes`: what the worker runs of a task type, and whether it holds it back. */
const laneSchema = z.object({
  type: z.string().min(1),
  profiles: z.array(z.string()),
  running: count,
  capacity: count,
  pending: count,
  held: z.string().optional(),
});
type PublishedLane = z.infer<typeof laneSchema>;

/** What one worker's snapshot says about its models and lanes. */
export interface PublishedModels {
  /** The worker's id, when the snapshot names it (every worker since the memory figures did). */
  worker?: string;
  models: ModelProfileStatus[];
  lanes: PublishedLane[];
}

/** The longest `lastError` kept: /health and the dashboard show it, and a worker may have caught a whole page. */
export const maxErrorLength = 500;

/**
 * The models and lanes of each published snapshot (`WorkerDirectory.readMetrics`). A worker's file is ours but may be
 * stale or edited by hand: entries that do not validate are skipped one by one, and a snapshot written before workers
 * published them (no `models`, no `lanes`) gives empty lists.
 */
export function parsePublishedModels(values: readonly unknown[]): PublishedModels[] {
  const found: PublishedModels[] = [];
  for (const value of values) {
    if (typeof value !== 'object' || value === null || Array.isArray(value)) continue;
    const record = value as Record<string, unknown>;
    const models: ModelProfileStatus[] = [];
    for (const entry of arrayOrEmpty(record.models)) {
      const parsed = modelStatusSchema.safeParse(entry);
      if (!parsed.success) continue;
      const { adaptive, ...status } = parsed.data;
      const { retryAt, lastError, ...breaker } = status.breaker;
      models.push({
        ...status,
        ...(adaptive === undefined ? {} : { adaptive }),
        breaker: {
          ...breaker,
          ...(retryAt === undefined ? {} : { retryAt }),
          ...(lastError === undefined ? {} : { lastError: lastError.slice(0, maxErrorLength) }),
        },
      });
    }
    const lanes: PublishedLane[] = [];
    for (const entry of arrayOrEmpty(record.lanes)) {
      const parsed = laneSchema.safeParse(entry);
      if (parsed.success) lanes.push(parsed.data);
    }
    found.push({ ...(typeof record.worker === 'string' ? { worker: record.worker } : {}), models, lanes });
  }
  return found;
}

function arrayOrEmpty(value: unknown): readonly unknown[] {
  return Array.isArray(value) ? value : [];
}

/** An LLM-bound stage (a manifest stage with `llm: true`) and the profiles its tasks may call. */
export interface LlmStage {
  /** `${domain}.${platform}.${stage}` */
  type: string;
  /**
   * The `llm` profiles of the domain's instances. A task file's name carries its type, not its instance, so when the
   * instances name different profiles the stage's tasks count toward each of them.
   */
  profiles: readonly string[];
}

/** One LLM profile across the live workers, with the queue's backlog for it. */
export interface ModelSummary {
  profile: string;
  /** The model the workers report, else the one config.yaml names; null when neither says. */
  model: string | null;
  /** The worst of the workers' breakers (open, then half_open, then closed); `unknown` when no live worker reports it. */
  state: ModelBreakerState | 'unknown';
  /**
   * Requests the workers may send at once now, summed (each worker has its own gate; an adaptive one its current
   * limit); null when no worker reports it.
   */
  maxInFlight: number | null;
  /** Whether a worker finds its limit itself (`max_in_flight` unset) rather than keeping a set one. */
  adaptive: boolean;
  inFlight: number;
  waiting: number;
  requests: number;
  /** Requests that failed because the endpoint was unavailable, since the workers started. */
  failures: number;
  requestsLastMinute: number;
  tokensLastMinute: number;
  /**
   * The slowest of the workers' median latencies: they share one endpoint, so their medians differ by noise, and the
   * slowest keeps the drain estimate on the safe side. Null before any worker has an answer.
   */
  latencyMs: number | null;
  /** The most consecutive failures any worker's breaker counts. */
  consecutiveFailures: number;
  /** The latest retry time of the breakers that are not closed. */
  retryAt?: string;
  /** The last error of the breaker that gave `retryAt` (else of any breaker that has one). */
  lastError?: string;
  /** Tasks pending or running of the LLM-bound stages that call this profile. */
  backlog: number;
  /** backlog × latency ÷ maxInFlight, in whole seconds (0 with no backlog); null while latency or maxInFlight is unknown. */
  etaSeconds: number | null;
}

export interface SummarizeModelsOptions {
  /** What the live workers published (stale snapshots of stopped workers left out by the caller). */
  published: readonly PublishedModels[];
  /** Task counts per type over pending and active, from the queue's file names (`QueueStats.byType`). */
  byType: Readonly<Record<string, { pending: number; active: number }>>;
  llmStages: readonly LlmStage[];
  /** config.yaml's profiles and their models: listed even when no worker runs. @default none */
  configured?: Readonly<Record<string, { model: string }>>;
}

const severity: Record<ModelBreakerState | 'unknown', number> = { unknown: -1, closed: 0, half_open: 1, open: 2 };

/** Every profile that is configured, reported by a worker or called by an LLM stage, sorted by name. */
export function summarizeModels(options: SummarizeModelsOptions): ModelSummary[] {
  const backlog = new Map<string, number>();
  for (const stage of options.llmStages) {
    const counts = options.byType[stage.type];
    const tasks = counts ? counts.pending + counts.active : 0;
    for (const profile of new Set(stage.profiles)) backlog.set(profile, (backlog.get(profile) ?? 0) + tasks);
  }
  const reports = new Map<string, ModelProfileStatus[]>();
  for (const snapshot of options.published) {
    for (const status of snapshot.models) reports.set(status.profile, [...(reports.get(status.profile) ?? []), status]);
  }
  const profiles = new Set([...Object.keys(options.configured ?? {}), ...reports.keys(), ...backlog.keys()]);
  return [...profiles].sort().map((profile) => {
    const statuses = reports.get(profile) ?? [];
    const summary = mergeStatuses(profile, statuses, options.configured?.[profile]?.model ?? null);
    const tasks = backlog.get(profile) ?? 0;
    return { ...summary, backlog: tasks, etaSeconds: drainEtaSeconds(tasks, summary.latencyMs, summary.maxInFlight) };
  });
}

function mergeStatuses(
  profile: string,
  statuses: readonly ModelProfileStatus[],
  configuredModel: string | null,
): Omit<ModelSummary, 'backlog' | 'etaSeconds'> {
  const sum = (pick: (status: ModelProfileStatus) => number) =>
    statuses.reduce((total, status) => total + pick(status), 0);
  const latencies = statuses.flatMap((status) => (status.latencyMs === null ? [] : [status.latencyMs]));
  let state: ModelSummary['state'] = 'unknown';
  let retryAt: string | undefined;
  let lastError: string | undefined;
  for (const { breaker } of statuses) {
    if (severity[breaker.state] > severity[state]) state = breaker.state;
    if (breaker.state !== 'closed' && breaker.retryAt !== undefined && (!retryAt || breaker.retryAt > retryAt)) {
      retryAt = breaker.retryAt;
      lastError = breaker.lastError ?? lastError;
    }
  }
  lastError ??= statuses.find((status) => status.breaker.lastError !== undefined)?.breaker.lastError;
  return {
    profile,
    model: statuses[0]?.model ?? configuredModel,
    state,
    maxInFlight: statuses.length === 0 ? null : sum((status) => status.maxInFlight),
    adaptive: statuses.some((status) => status.adaptive !== undefined),
    inFlight: sum((status) => status.inFlight),
    waiting: sum((status) => status.waiting),
    requests: sum((status) => status.requests),
    failures: sum((status) => status.failures),
    requestsLastMinute: sum((status) => status.requestsLastMinute),
    tokensLastMinute: sum((status) => status.tokensLastMinute),
    latencyMs: latencies.length === 0 ? null : Math.max(...latencies),
    consecutiveFailures: Math.max(0, ...statuses.map((status) => status.breaker.consecutiveFailures)),
    ...(retryAt === undefined ? {} : { retryAt }),
    ...(lastError === undefined ? {} : { lastError }),
  };
}

/** How long the backlog takes at the current pace: one model call per task, `maxInFlight` at a time. */
function drainEtaSeconds(backlog: number, latencyMs: number | null, maxInFlight: number | null): number | null {
  if (backlog === 0) return 0;
  if (latencyMs === null || maxInFlight === null || maxInFlight <= 0) return null;
  return Math.ceil((backlog * latencyMs) / maxInFlight / 1_000);
}

/** The lanes some worker holds back, one per task type (the first reason given), sorted by type. */
export function heldLanes(published: readonly PublishedModels[]): { taskType: string; reason: string }[] {
  const held = new Map<string, string>();
  for (const snapshot of published) {
    for (const lane of snapshot.lanes) {
      if (lane.held !== undefined && !held.has(lane.type)) held.set(lane.type, lane.held.slice(0, maxErrorLength));
    }
  }
  return [...held]
    .sort(([left], [right]) => (left < right ? -1 : left > right ? 1 : 0))
    .map(([taskType, reason]) => ({ taskType, reason }));
}
