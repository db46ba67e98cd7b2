import { assistantVersion } from '@assistant/process';
import type { QueueStats, TaskQueue, TaskState } from '@assistant/queue';
import * as z from 'zod';
import { isAuthenticated } from './bearer-auth.ts';
import { modelStatus } from './model-status.ts';
import { errorBodySchema, type RouteTable } from './route-table.ts';
import type { ServerCatalog, ServerStatusSources } from './server-catalog.ts';
import type { AssistantServer } from './server-type.ts';
import type { SupervisedProcessStatus } from './supervisor-status.ts';

export interface WorkerLiveness {
  /** Some worker's heartbeat is within the lease: tasks are being run. */
  alive: boolean;
  /** Workers whose heartbeat is within the lease. */
  workers: number;
  last_heartbeat_at: string | null;
}

export interface HealthBody {
  status: 'ok';
  version: string;
  /** Tasks per state, counted from file names the way `assistant queue stats` counts them. */
  queue: Record<TaskState, number>;
}

/** What /health adds for a request that carries the API token. */
export interface HealthDetails extends HealthBody {
  worker: WorkerLiveness;
  /** Breakers that are open or trying a trial run; closed ones are not news. */
  circuit_breakers: {
    task_type: string;
    state: string;
    consecutive_failures: number;
    retry_at?: string;
    last_error?: string;
    /** The worker that keeps it, for a breaker in a worker's own data directory (one on another machine). */
    worker?: string;
  }[];
  /**
   * Every LLM profile: its breaker (`unknown` while no live worker reports it), the live workers' figures summed, and
   * the backlog of its LLM-bound stages from the queue with the time to drain it at the current pace.
   */
  models: {
    profile: string;
    model: string | null;
    state: string;
    in_flight: number;
    max_in_flight: number | null;
    /** True when a worker finds its limit itself (`max_in_flight` unset): `max_in_flight` is then its current limit. */
    adaptive: boolean;
    waiting: number;
    latency_ms: number | null;
    requests_last_minute: number;
    tokens_last_minute: number;
    backlog: number;
    eta_seconds: number | null;
    retry_at?: string;
    last_error?: string;
  }[];
  /** Task types a live worker does not claim for now (a profile's breaker is open, the next stage's backlog is full). */
  held: { task_type: string; reason: string }[];
  schedules: { id: string; description: string; last_fired_at?: string; next_run_at?: string; paused?: string }[];
  /**
   * What the owner paused (`notes/system/paused.md`): instances, rules and schedules, with who, when and why. A pause
   * note that does not parse is named under `paused_note_broken` (and nothing is known to be paused).
   */
  pauses: { kind: string; name: string; by?: string; at?: string; reason?: string }[];
  paused_note_broken?: string;
  /**
   * The manifests' listeners: running, restarting after a crash (with its error), or stopped; and, once a listener
   * reported it, how its source is doing: `condition` `ok`, `outage` (unreachable, retried with backoff) or
   * `credentials_refused` (the token is wrong or revoked), `since` when, `detail` how it waits. A listener in an
   * outage is still `running`; like an open breaker it does not change `status`.
   */
  listeners: {
    id: string;
    state: string;
    restarts: number;
    last_error?: string;
    last_error_at?: string;
    restart_at?: string;
    condition?: 'ok' | 'outage' | 'credentials_refused';
    since?: string;
    detail?: string;
  }[];
  /**
   * Under `assistant start`: its children and how many times each was started again after it crashed or stopped
   * answering, with the last time and why. Empty when the server runs on its own (`assistant serve`).
   */
  processes: SupervisedProcessStatus[];
  /** Hooks whose breaker is open or half-open (after 5 errors in a row); closed ones are not news. */
  hook_breakers: { hook: string; state: string; failures: number; opened_at?: string }[];
}

const healthSchema = z.object({
  status: z.literal('ok'),
  version: z.string(),
  queue: z.object({ pending: z.int(), active: z.int(), done: z.int(), failed: z.int() }),
  worker: z.object({ alive: z.boolean(), workers: z.int(), last_heartbeat_at: z.string().nullable() }).optional(),
  circuit_breakers: z.array(z.looseObject({ task_type: z.string(), state: z.string() })).optional(),
  models: z
    .array(
      z.object({
        profile: z.string(),
        model: z.string().nullable(),
        state: z.enum(['closed', 'half_open', 'open', 'unknown']),
        in_flight: z.int(),
        max_in_flight: z.int().nullable(),
        adaptive: z.boolean(),
        waiting: z.int(),
        latency_ms: z.number().nullable(),
        requests_last_minute: z.int(),
        tokens_last_minute: z.int(),
        backlog: z.int(),
        eta_seconds: z.int().nullable(),
        retry_at: z.string().optional(),
        last_error: z.string().optional(),
      }),
    )
    .optional(),
  held: z.array(z.object({ task_type: z.string(), reason: z.string() })).optional(),
  schedules: z.array(z.looseObject({ id: z.string(), description: z.string() })).optional(),
  pauses: z.array(z.looseObject({ kind: z.string(), name: z.string() })).optional(),
  paused_note_broken: z.string().optional(),
  listeners: z
    .array(
      z.looseObject({
        id: z.string(),
        state: z.string(),
        restarts: z.int(),
        last_error: z.string().optional(),
        condition: z.enum(['ok', 'outage', 'credentials_refused']).optional(),
        since: z.string().optional(),
        detail: z.string().optional(),
      }),
    )
    .optional(),
  hook_breakers: z
    .array(z.object({ hook: z.string(), state: z.string(), failures: z.int(), opened_at: z.string().optional() }))
    .optional(),
  processes: z
    .array(
      z.object({
        name: z.string(),
        running: z.boolean(),
        restarts: z.int(),
        last_restart: z
          .object({ at: z.string(), reason: z.string(), code: z.int().nullable(), signal: z.string().nullable() })
          .optional(),
        next_start_at: z.string().optional(),
      }),
    )
    .optional(),
});

/** The queue's worker directory: a worker is alive while its heartbeat is within the lease. */
export async function workerLiveness(queue: TaskQueue, nowMs: number = Date.now()): Promise<WorkerLiveness> {
  let workers = 0;
  let last: number | undefined;
  for (const worker of await queue.workers.list(nowMs)) {
    const heartbeatMs = Date.parse(worker.heartbeatAt);
    if (Number.isNaN(heartbeatMs)) continue;
    if (last === undefined || heartbeatMs > last) last = heartbeatMs;
    if (worker.alive) workers += 1;
  }
  return { alive: workers > 0, workers, last_heartbeat_at: last === undefined ? null : new Date(last).toISOString() };
}

export interface HealthDetailsOptions {
  queue: TaskQueue;
  status: ServerStatusSources;
  /** The LLM-bound stages, for the model backlog. */
  catalog: Pick<ServerCatalog, 'llmStages'>;
  /** config.yaml's `llms:`. */
  llms: Readonly<Record<string, { model: string }>>;
  /** The queue's counts when the caller has them already. @default read from the queue */
  stats?: Pick<QueueStats, 'byType'>;
}

/**
 * What /health adds for a request with the token: worker liveness, breakers that are not closed, the LLM profiles
 * with their backlog, held task types, schedules, listeners, and `assistant start`'s restarts of its children. The dashboard's overview shows the same figures.
 */
export async function healthDetails(options: HealthDetailsOptions): Promise<Omit<HealthDetails, keyof HealthBody>> {
  const { queue, status } = options;
  const breakers = (await status.breakers?.()) ?? [];
  const pauses = (await status.pauses?.().catch(() => undefined)) ?? { entries: [], problems: [] };
  const models = await modelStatus({
    queue,
    catalog: options.catalog,
    llms: options.llms,
    ...(options.stats ? { stats: options.stats } : {}),
  });
  return {
    worker: await workerLiveness(queue),
    circuit_breakers: breakers
      .filter((breaker) => breaker.state !== 'closed')
      .map((breaker) => ({
        task_type: breaker.taskType,
        state: breaker.state,
        consecutive_failures: breaker.consecutiveFailures,
        ...(breaker.retryAt ? { retry_at: breaker.retryAt } : {}),
        ...(breaker.lastError ? { last_error: breaker.lastError } : {}),
        ...(breaker.worker ? { worker: breaker.worker } : {}),
      })),
    models: models.models.map((model) => ({
      profile: model.profile,
      model: model.model,
      state: model.state,
      in_flight: model.inFlight,
      max_in_flight: model.maxInFlight,
      adaptive: model.adaptive,
      waiting: model.waiting,
      latency_ms: model.latencyMs,
      requests_last_minute: model.requestsLastMinute,
      tokens_last_minute: model.tokensLastMinute,
      backlog: model.backlog,
      eta_seconds: model.etaSeconds,
      ...(model.retryAt === undefined ? {} : { retry_at: model.retryAt }),
      ...(model.lastError === undefined ? {} : { last_error: model.lastError }),
    })),
    held: models.held.map((lane) => ({ task_type: lane.taskType, reason: lane.reason })),
    schedules: (status.schedules?.() ?? []).map((job) => ({
      id: job.id,
      description: job.description,
      ...(job.lastFiredAt ? { last_fired_at: job.lastFiredAt } : {}),
      ...(job.nextRunAt ? { next_run_at: job.nextRunAt } : {}),
      ...(job.paused ? { paused: job.paused } : {}),
    })),
    pauses: pauses.entries.map((entry) => ({ ...entry })),
    ...(pauses.broken === undefined ? {} : { paused_note_broken: `notes/${pauses.broken}` }),
    listeners: (status.listeners?.() ?? []).map((listener) => ({
      id: listener.id,
      state: listener.state,
      restarts: listener.restarts,
      ...(listener.lastError === undefined ? {} : { last_error: listener.lastError }),
      ...(listener.lastErrorAt === undefined ? {} : { last_error_at: listener.lastErrorAt }),
      ...(listener.restartAt === undefined ? {} : { restart_at: listener.restartAt }),
      ...(listener.condition === undefined
        ? {}
        : {
            condition: listener.condition.state,
            since: listener.condition.since,
            ...(listener.condition.detail === undefined ? {} : { detail: listener.condition.detail }),
          }),
    })),
    processes: (await status.processes?.()) ?? [],
    hook_breakers: ((await status.hooks?.()) ?? [])
      .filter((hook) => hook.breaker.state !== 'closed')
      .map((hook) => ({
        hook: hook.name,
        state: hook.breaker.state,
        failures: hook.breaker.failures,
        ...(hook.breaker.openedAt === undefined ? {} : { opened_at: hook.breaker.openedAt }),
      })),
  };
}

export interface HealthRouteOptions {
  queue: () => TaskQueue;
  status: ServerStatusSources;
  catalog: Pick<ServerCatalog, 'llmStages'>;
  llms: Readonly<Record<string, { model: string }>>;
}

export function registerHealthRoute(app: AssistantServer, routes: RouteTable, options: HealthRouteOptions): void {
  routes.add(app, {
    method: 'GET',
    url: '/health',
    tag: 'health',
    summary: 'Liveness and queue counts; with the token also the workers, breakers, models and schedules',
    description:
      'The one route that answers without the token, for liveness probes: then it says only status, version and queue counts.',
    public: true,
    responses: {
      200: { description: 'the server answers', schema: healthSchema },
      503: { description: 'QUEUE_UNAVAILABLE: the queue backend (Redis) is unreachable', schema: errorBodySchema },
    },
    handler: async ({ request }): Promise<HealthBody | HealthDetails> => {
      const queue = options.queue();
      // The queue's own counts: cheap enough to poll, never reading a task. A Redis backend that is down throws
      // QUEUE_UNAVAILABLE at once (503), so a probe learns of the outage instead of waiting for Redis.
      const stats = await queue.stats();
      const body: HealthBody = {
        status: 'ok',
        version: assistantVersion,
        queue: { pending: stats.pending, active: stats.active, done: stats.done, failed: stats.failed },
      };
      if (!isAuthenticated(request)) return body;
      const details = await healthDetails({
        queue,
        status: options.status,
        catalog: options.catalog,
        llms: options.llms,
        stats,
      });
      return { ...body, ...details };
    },
  });
}
