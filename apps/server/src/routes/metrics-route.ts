import { mergeSnapshots, parseSnapshots, readUsage, renderPrometheus } from '@assistant/metrics';
import type { TaskQueue } from '@assistant/queue';
import { workerLiveness } from '../health-route.ts';
import { modelStatus } from '../model-status.ts';
import type { RouteTable } from '../route-table.ts';
import type { ServerCatalog, ServerMetrics, ServerStatusSources } from '../server-catalog.ts';
import type { AssistantServer } from '../server-type.ts';

export interface MetricsRouteOptions {
  queue: () => TaskQueue;
  /** The server's own counters (the scheduler's policy rejections). */
  metrics: ServerMetrics;
  /** The task types' circuit breakers. */
  status: Pick<ServerStatusSources, 'breakers'>;
  /** The LLM-bound stages, for the model backlog. */
  catalog: Pick<ServerCatalog, 'llmStages'>;
  /** config.yaml's `llms:`. */
  llms: Readonly<Record<string, { model: string }>>;
  /** The workers' token and cost counts (`data/metrics/llm-usage.json`) and the currency of the prices. */
  llmUsage?: { file: string; currency: string };
}

/**
 * `GET /metrics`: queue depth from file names, the counters every worker writes beside its heartbeat, the breakers,
 * and the LLM profiles across the live workers with their backlog.
 */
export function registerMetricsRoute(app: AssistantServer, routes: RouteTable, options: MetricsRouteOptions): void {
  routes.add(app, {
    method: 'GET',
    url: '/metrics',
    tag: 'health',
    summary: 'Prometheus metrics',
    description:
      'Queue depth per state and task type, task outcomes and durations per type (summed over the workers), policy rejections, live workers, circuit breakers, and per LLM profile: in flight, limit, waiting, backlog, latency, tokens and requests per minute, time to drain, breaker; tokens by kind (prompt, cached prompt, cache write, completion) and estimated cost since the usage file began.',
    responses: { 200: { description: 'the text exposition format 0.0.4', contentType: 'text/plain; version=0.0.4' } },
    handler: async ({ reply }) => {
      const queue = options.queue();
      const stats = await queue.stats();
      const published = await queue.workers.readMetrics();
      const snapshot = mergeSnapshots([...parseSnapshots(published), options.metrics.snapshot()]);
      const [liveness, models, breakers, usage] = await Promise.all([
        workerLiveness(queue),
        modelStatus({ queue, catalog: options.catalog, llms: options.llms, stats }),
        options.status.breakers?.() ?? [],
        options.llmUsage ? readUsage(options.llmUsage.file) : undefined,
      ]);
      return reply.type('text/plain; version=0.0.4; charset=utf-8').send(
        renderPrometheus({
          queue: stats.typesByState,
          snapshot,
          workersAlive: liveness.workers,
          models: models.models,
          breakers,
          ...(usage && options.llmUsage ? { llmUsage: { usage, currency: options.llmUsage.currency } } : {}),
        }),
      );
    },
  });
}
