import { assistantVersion } from '@assistant/process';
import type { TaskQueue, TaskState } from '@assistant/queue';
import * as z from 'zod';
import { isAuthenticated } from './bearer-auth.ts';
import type { AssistantServer } from './create-server.ts';
import type { RouteTable } from './route-table.ts';
import type { ServerStatusSources } from './server-catalog.ts';

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
  }[];
  schedules: { id: string; description: string; last_fired_at?: string; next_run_at?: string; paused?: string }[];
  /** The manifests' listeners: running, restarting after a crash (with its error), or stopped. */
  listeners: {
    id: string;
    state: string;
    restarts: number;
    last_error?: string;
    last_error_at?: string;
    restart_at?: string;
  }[];
}

const healthSchema = z.object({
  status: z.literal('ok'),
  version: z.string(),
  queue: z.object({ pending: z.int(), active: z.int(), done: z.int(), failed: z.int() }),
  worker: z.object({ alive: z.boolean(), workers: z.int(), last_heartbeat_at: z.string().nullable() }).optional(),
  circuit_breakers: z.array(z.looseObject({ task_type: z.string(), state: z.string() })).optional(),
  schedules: z.array(z.looseObject({ id: z.string(), description: z.string() })).optional(),
  listeners: z
    .array(z.looseObject({ id: z.string(), state: z.string(), restarts: z.int(), last_error: z.string().optional() }))
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

/**
 * What /health adds for a request with the token: worker liveness, breakers that are not closed, schedules and
 * listeners. The dashboard's overview shows the same figures.
 */
export async function healthDetails(
  queue: TaskQueue,
  status: ServerStatusSources,
): Promise<Omit<HealthDetails, keyof HealthBody>> {
  const breakers = (await status.breakers?.()) ?? [];
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
      })),
    schedules: (status.schedules?.() ?? []).map((job) => ({
      id: job.id,
      description: job.description,
      ...(job.lastFiredAt ? { last_fired_at: job.lastFiredAt } : {}),
      ...(job.nextRunAt ? { next_run_at: job.nextRunAt } : {}),
      ...(job.paused ? { paused: job.paused } : {}),
    })),
    listeners: (status.listeners?.() ?? []).map((listener) => ({
      id: listener.id,
      state: listener.state,
      restarts: listener.restarts,
      ...(listener.lastError === undefined ? {} : { last_error: listener.lastError }),
      ...(listener.lastErrorAt === undefined ? {} : { last_error_at: listener.lastErrorAt }),
      ...(listener.restartAt === undefined ? {} : { restart_at: listener.restartAt }),
    })),
  };
}

export interface HealthRouteOptions {
  queue: () => TaskQueue;
  status: ServerStatusSources;
}

export function registerHealthRoute(app: AssistantServer, routes: RouteTable, options: HealthRouteOptions): void {
  routes.add(app, {
    method: 'GET',
    url: '/health',
    tag: 'health',
    summary: 'Liveness and queue counts; with the token also the workers, breakers and schedules',
    description:
      'The one route that answers without the token, for liveness probes: then it says only status, version and queue counts.',
    public: true,
    responses: { 200: { description: 'the server answers', schema: healthSchema } },
    handler: async ({ request }): Promise<HealthBody | HealthDetails> => {
      const queue = options.queue();
      // The queue's own counts: cheap enough to poll, never reading a task.
      const stats = await queue.stats();
      const body: HealthBody = {
        status: 'ok',
        version: assistantVersion,
        queue: { pending: stats.pending, active: stats.active, done: stats.done, failed: stats.failed },
      };
      if (!isAuthenticated(request)) return body;
      return { ...body, ...(await healthDetails(queue, options.status)) };
    },
  });
}
