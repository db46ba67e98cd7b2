import { randomBytes } from 'node:crypto';
import { readdir, readFile, rename, unlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import * as z from 'zod';
import { renderUsagePrometheus, type UsageFile } from './llm-usage.ts';
import type { ModelSummary } from './model-metrics.ts';

/** Upper bounds of the task-duration histogram's buckets, in seconds (+Inf is implied). */
export const durationBucketsSeconds = [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 600] as const;

/** How a task run can end, as the worker reports it; the `outcome` label of `assistant_task_outcomes_total`. */
export const taskOutcomes = ['done', 'retrying', 'delayed', 'failed', 'released', 'unrecorded'] as const;
export type TaskOutcomeName = (typeof taskOutcomes)[number];
/** Why the queue policies turned an enqueue away; the `reason` label of `assistant_policy_rejections_total`. */
export const rejectionReasons = ['duplicate', 'rate_limited'] as const;
export type RejectionReason = (typeof rejectionReasons)[number];

const count = z.int().min(0);
const typeMetricsSchema = z.object({
  outcomes: z.partialRecord(z.enum(taskOutcomes), count),
  duration: z.object({
    /** Cumulative counts per bound of {@link durationBucketsSeconds}; the +Inf bucket is `count`. */
    buckets: z.array(count).length(durationBucketsSeconds.length),
    sum_seconds: z.number().min(0),
    count,
  }),
});

/** What one process has counted since it started, as its metrics file holds it. */
export const metricsSnapshotSchema = z.object({
  version: z.literal(1),
  updated_at: z.string(),
  tasks: z.record(z.string(), typeMetricsSchema),
  rejections: z.record(z.string(), z.partialRecord(z.enum(rejectionReasons), count)),
});
export type MetricsSnapshot = z.infer<typeof metricsSnapshotSchema>;
type TypeMetrics = z.infer<typeof typeMetricsSchema>;

/**
 * Counters of one process: task outcomes and durations per type (the worker), policy rejections per type (worker
 * and scheduler). The worker writes them to `data/queue/workers/{id}.metrics.json`; the server sums every such file
 * with its own counters for `/metrics`. Like any Prometheus counter they start from zero when the process does.
 */
export class TaskMetrics {
  readonly #tasks = new Map<string, TypeMetrics>();
  readonly #rejections = new Map<string, Partial<Record<RejectionReason, number>>>();

  /** Counts one finished run of a task type and how long it took (negative durations count as zero). */
  recordOutcome(type: string, outcome: TaskOutcomeName, durationMs: number): void {
    let metrics = this.#tasks.get(type);
    if (!metrics) {
      metrics = { outcomes: {}, duration: { buckets: durationBucketsSeconds.map(() => 0), sum_seconds: 0, count: 0 } };
      this.#tasks.set(type, metrics);
    }
    metrics.outcomes[outcome] = (metrics.outcomes[outcome] ?? 0) + 1;
    const seconds = Math.max(0, durationMs) / 1_000;
    durationBucketsSeconds.forEach((bound, index) => {
      if (seconds <= bound) metrics.duration.buckets[index] = (metrics.duration.buckets[index] ?? 0) + 1;
    });
    metrics.duration.sum_seconds += seconds;
    metrics.duration.count += 1;
  }

  /** Counts one enqueue of a task type that the policies turned away. */
  recordRejection(type: string, reason: RejectionReason): void {
    const counts = this.#rejections.get(type) ?? {};
    counts[reason] = (counts[reason] ?? 0) + 1;
    this.#rejections.set(type, counts);
  }

  /**
   * A copy of the counters as the metrics file holds them; later records do not change it.
   * @param now the `updated_at` time. @default the current time
   */
  snapshot(now: Date = new Date()): MetricsSnapshot {
    return {
      version: 1,
      updated_at: now.toISOString(),
      tasks: Object.fromEntries([...this.#tasks].map(([type, metrics]) => [type, structuredClone(metrics)])),
      rejections: Object.fromEntries([...this.#rejections].map(([type, counts]) => [type, { ...counts }])),
    };
  }
}

/** Writes a snapshot atomically (temp file, then rename), so the server never reads half a file. */
export async function writeMetricsFile(file: string, snapshot: MetricsSnapshot): Promise<void> {
  const temporary = `${file}.${randomBytes(4).toString('hex')}.tmp`;
  try {
    await writeFile(temporary, `${JSON.stringify(snapshot)}\n`, { mode: 0o600 });
    await rename(temporary, file);
  } catch (error) {
    await unlink(temporary).catch(() => {});
    throw error;
  }
}

/** Every readable `*.metrics.json` in a folder; unreadable or invalid files are skipped, never fatal. */
export async function readMetricsFiles(directory: string): Promise<MetricsSnapshot[]> {
  let names: string[];
  try {
    names = await readdir(directory);
  } catch {
    return [];
  }
  const snapshots: MetricsSnapshot[] = [];
  for (const name of names.filter((candidate) => candidate.endsWith('.metrics.json')).sort()) {
    try {
      const parsed = metricsSnapshotSchema.safeParse(JSON.parse(await readFile(path.join(directory, name), 'utf8')));
      if (parsed.success) snapshots.push(parsed.data);
    } catch {
      // Gone between the listing and the read, or not JSON: it tells us nothing.
    }
  }
  return snapshots;
}

/** The snapshots among values a worker directory gave back (`WorkerDirectory.readMetrics`); others are skipped. */
export function parseSnapshots(values: readonly unknown[]): MetricsSnapshot[] {
  const snapshots: MetricsSnapshot[] = [];
  for (const value of values) {
    const parsed = metricsSnapshotSchema.safeParse(value);
    if (parsed.success) snapshots.push(parsed.data);
  }
  return snapshots;
}

/** Sums snapshots of several processes; `updated_at` is the newest of theirs (the epoch when there are none). */
export function mergeSnapshots(snapshots: readonly MetricsSnapshot[]): MetricsSnapshot {
  const merged: MetricsSnapshot = { version: 1, updated_at: new Date(0).toISOString(), tasks: {}, rejections: {} };
  for (const snapshot of snapshots) {
    if (snapshot.updated_at > merged.updated_at) merged.updated_at = snapshot.updated_at;
    for (const [type, metrics] of Object.entries(snapshot.tasks)) {
      const target = merged.tasks[type] ?? {
        outcomes: {},
        duration: { buckets: durationBucketsSeconds.map(() => 0), sum_seconds: 0, count: 0 },
      };
      merged.tasks[type] = target;
      for (const [outcome, value] of Object.entries(metrics.outcomes) as [TaskOutcomeName, number][]) {
        target.outcomes[outcome] = (target.outcomes[outcome] ?? 0) + value;
      }
      metrics.duration.buckets.forEach((value, index) => {
        target.duration.buckets[index] = (target.duration.buckets[index] ?? 0) + value;
      });
      target.duration.sum_seconds += metrics.duration.sum_seconds;
      target.duration.count += metrics.duration.count;
    }
    for (const [type, counts] of Object.entries(snapshot.rejections)) {
      const target = merged.rejections[type] ?? {};
      merged.rejections[type] = target;
      for (const [reason, value] of Object.entries(counts) as [RejectionReason, number][]) {
        target[reason] = (target[reason] ?? 0) + value;
      }
    }
  }
  return merged;
}

export interface RenderPrometheusOptions {
  /** Task files per state and type, from the queue's names: `{pending: {'system.echo': 2}}`. */
  queue: Record<string, Record<string, number>>;
  /** The counters to render, usually every worker's file and the server's own, merged. */
  snapshot: MetricsSnapshot;
  /** Workers whose heartbeat is within the lease. */
  workersAlive: number;
  /** The LLM profiles across the live workers, with their backlog (`summarizeModels`). @default none */
  models?: readonly ModelSummary[];
  /** The task types' circuit breakers (the scheduler's), every state. @default none */
  breakers?: readonly { taskType: string; state: string; worker?: string }[];
  /** Tokens and estimated cost per profile since the usage file began (`data/metrics/llm-usage.json`). @default none */
  llmUsage?: { usage: UsageFile; currency: string };
}

/** The Prometheus text exposition format (0.0.4) of the queue, the task counters and the workers. */
export function renderPrometheus(options: RenderPrometheusOptions): string {
  const lines: string[] = [];
  const family = (name: string, type: string, help: string) =>
    lines.push(`# HELP ${name} ${help}`, `# TYPE ${name} ${type}`);
  family('assistant_queue_tasks', 'gauge', 'Task files in the queue, by state and task type.');
  for (const [state, byType] of Object.entries(options.queue)) {
    for (const [type, value] of Object.entries(byType).sort()) {
      lines.push(`assistant_queue_tasks${labels({ state, type })} ${value}`);
    }
  }
  family('assistant_task_outcomes_total', 'counter', 'Finished task runs, by task type and outcome.');
  for (const [type, metrics] of sortedEntries(options.snapshot.tasks)) {
    for (const outcome of taskOutcomes) {
      const value = metrics.outcomes[outcome];
      if (value !== undefined) lines.push(`assistant_task_outcomes_total${labels({ type, outcome })} ${value}`);
    }
  }
  family('assistant_task_duration_seconds', 'histogram', 'How long task runs took, by task type.');
  for (const [type, metrics] of sortedEntries(options.snapshot.tasks)) {
    durationBucketsSeconds.forEach((bound, index) => {
      lines.push(
        `assistant_task_duration_seconds_bucket${labels({ type, le: String(bound) })} ${metrics.duration.buckets[index] ?? 0}`,
      );
    });
    lines.push(`assistant_task_duration_seconds_bucket${labels({ type, le: '+Inf' })} ${metrics.duration.count}`);
    lines.push(`assistant_task_duration_seconds_sum${labels({ type })} ${metrics.duration.sum_seconds}`);
    lines.push(`assistant_task_duration_seconds_count${labels({ type })} ${metrics.duration.count}`);
  }
  family(
    'assistant_policy_rejections_total',
    'counter',
    'Enqueues the queue policies turned away, by task type and reason.',
  );
  for (const [type, counts] of sortedEntries(options.snapshot.rejections)) {
    for (const reason of rejectionReasons) {
      const value = counts[reason];
      if (value !== undefined) lines.push(`assistant_policy_rejections_total${labels({ type, reason })} ${value}`);
    }
  }
  family('assistant_workers_alive', 'gauge', 'Workers whose heartbeat is within the lease.');
  lines.push(`assistant_workers_alive ${options.workersAlive}`);
  family(
    'assistant_circuit_breaker_open',
    'gauge',
    "Whether a task type's circuit breaker holds its tasks back: 1 open or half-open, 0 closed.",
  );
  for (const breaker of [...(options.breakers ?? [])].sort(byKey((breaker) => breaker.taskType))) {
    lines.push(
      `assistant_circuit_breaker_open${labels({ task_type: breaker.taskType, ...(breaker.worker === undefined ? {} : { worker: breaker.worker }) })} ${breaker.state === 'closed' ? 0 : 1}`,
    );
  }
  lines.push(...renderModelFamilies(options.models ?? []));
  if (options.llmUsage) lines.push(...renderUsagePrometheus({ ...options.llmUsage, labels }));
  return `${lines.join('\n')}\n`;
}

/**
 * One family per figure of the LLM profiles. A figure no live worker reports (a profile's limit or latency while no
 * worker runs) has no sample rather than a made-up zero; the backlog is the queue's, so it is always there.
 */
function renderModelFamilies(models: readonly ModelSummary[]): string[] {
  const lines: string[] = [];
  const family = (
    name: string,
    type: 'gauge' | 'counter',
    help: string,
    value: (model: ModelSummary) => number | null,
  ) => {
    lines.push(`# HELP ${name} ${help}`, `# TYPE ${name} ${type}`);
    for (const model of models) {
      const figure = value(model);
      if (figure !== null) lines.push(`${name}${labels({ profile: model.profile })} ${figure}`);
    }
  };
  family(
    'assistant_llm_in_flight',
    'gauge',
    "Requests sent to the profile's endpoint and not yet answered.",
    (model) => model.inFlight,
  );
  family(
    'assistant_llm_max_in_flight',
    'gauge',
    'Requests the live workers may send to the profile at once now (the adaptive limit when max_in_flight is unset).',
    (model) => model.maxInFlight,
  );
  family(
    'assistant_llm_waiting',
    'gauge',
    "Calls waiting for a slot, a per-minute budget or the breaker's trial.",
    (model) => model.waiting,
  );
  family(
    'assistant_llm_backlog',
    'gauge',
    'Tasks pending or running of the LLM-bound stages that call the profile.',
    (model) => model.backlog,
  );
  family(
    'assistant_llm_latency_seconds',
    'gauge',
    "The slowest live worker's median time to answer (last 50 requests).",
    (model) => (model.latencyMs === null ? null : model.latencyMs / 1_000),
  );
  family(
    'assistant_llm_tokens_per_minute',
    'gauge',
    'Prompt and completion tokens answered in the last minute.',
    (model) => model.tokensLastMinute,
  );
  family(
    'assistant_llm_requests_per_minute',
    'gauge',
    'Requests answered in the last minute.',
    (model) => model.requestsLastMinute,
  );
  family(
    'assistant_llm_drain_eta_seconds',
    'gauge',
    'Estimated time to drain the backlog: backlog * latency / max in flight.',
    (model) => model.etaSeconds,
  );
  family(
    'assistant_llm_breaker_open',
    'gauge',
    "Whether the profile's breaker stops calls: 1 open or half-open on some worker, 0 closed.",
    (model) => (model.state === 'unknown' ? null : model.state === 'closed' ? 0 : 1),
  );
  family(
    'assistant_llm_unavailable_total',
    'counter',
    'Requests that failed because the endpoint was unavailable (refused, 429, 5xx, timed out).',
    (model) => model.failures,
  );
  return lines;
}

function byKey<T>(key: (value: T) => string): (left: T, right: T) => number {
  return (left, right) => (key(left) < key(right) ? -1 : key(left) > key(right) ? 1 : 0);
}

function sortedEntries<T>(record: Record<string, T>): [string, T][] {
  return Object.entries(record).sort(([left], [right]) => (left < right ? -1 : left > right ? 1 : 0));
}

/** `{a="x",b="y"}` with values escaped as the text format requires: backslash, double quote and newline. */
function labels(values: Record<string, string>): string {
  const escaped = (value: string) => value.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');
  return `{${Object.entries(values)
    .map(([name, value]) => `${name}="${escaped(value)}"`)
    .join(',')}}`;
}
