import { mergeSnapshots, parseSnapshots, renderPrometheus } from '@assistant/metrics';
import type { TaskQueue } from '@assistant/queue';
import type { AssistantServer } from '../create-server.ts';
import { workerLiveness } from '../health-route.ts';
import type { RouteTable } from '../route-table.ts';
import type { ServerMetrics } from '../server-catalog.ts';

export interface MetricsRouteOptions {
  queue: () => TaskQueue;
  /** The server's own counters (the scheduler's policy rejections). */
  metrics: ServerMetrics;
}

/** `GET /metrics`: queue depth from file names, plus the counters every worker writes beside its heartbeat. */
export function registerMetricsRoute(app: AssistantServer, routes: RouteTable, options: MetricsRouteOptions): void {
  routes.add(app, {
    method: 'GET',
    url: '/metrics',
    tag: 'health',
    summary: 'Prometheus metrics',
    description:
      'Queue depth per state and task type, task outcomes and durations per type (summed over the workers), policy rejections, live workers.',
    responses: { 200: { description: 'the text exposition format 0.0.4', contentType: 'text/plain; version=0.0.4' } },
    handler: async ({ reply }) => {
      const queue = options.queue();
      const depth: Record<string, Record<string, number>> = (await queue.stats()).typesByState;
      const published = await queue.workers.readMetrics();
      const snapshot = mergeSnapshots([...parseSnapshots(published), options.metrics.snapshot()]);
      const liveness = await workerLiveness(queue);
      return reply
        .type('text/plain; version=0.0.4; charset=utf-8')
        .send(renderPrometheus({ queue: depth, snapshot, workersAlive: liveness.workers }));
    },
  });
}
