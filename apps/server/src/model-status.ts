import { heldLanes, type ModelSummary, parsePublishedModels, summarizeModels } from '@assistant/metrics';
import type { QueueStats, TaskQueue } from '@assistant/queue';
import type { ServerCatalog } from './server-catalog.ts';

/** Where the server learns about the LLM profiles: the live workers' published figures, the queue and the config. */
export interface ModelStatusOptions {
  queue: TaskQueue;
  /** The LLM-bound stages and their profiles. */
  catalog: Pick<ServerCatalog, 'llmStages'>;
  /** config.yaml's `llms:`, listed even while no worker runs. */
  llms: Readonly<Record<string, { model: string }>>;
  /** The queue's counts when the caller has them already. @default read from the queue */
  stats?: Pick<QueueStats, 'byType'>;
  /** @default the current time */
  nowMs?: number;
}

export interface ModelStatus {
  /** Every profile, sorted by name. */
  models: ModelSummary[];
  /** Task types some live worker holds back (an open breaker, a full backlog downstream), with its reason. */
  held: { taskType: string; reason: string }[];
}

/**
 * The LLM profiles for /health, /metrics and the dashboard. The backlog comes from the queue's file names and the
 * manifests, so it is right with no worker running; the rest is what the live workers last published. A stopped
 * worker's file can outlive it (a crash leaves it until the next recovery): its in-flight calls are long gone, so
 * only workers whose heartbeat is within the lease count.
 */
export async function modelStatus(options: ModelStatusOptions): Promise<ModelStatus> {
  const [stats, workers, values] = await Promise.all([
    options.stats ?? options.queue.stats(),
    options.queue.workers.list(options.nowMs),
    options.queue.workers.readMetrics(),
  ]);
  const alive = new Set(workers.flatMap((worker) => (worker.alive ? [worker.id] : [])));
  // A snapshot that names no worker cannot be checked; none of those carries models, so keeping it costs nothing.
  const published = parsePublishedModels(values).filter(
    (snapshot) => snapshot.worker === undefined || alive.has(snapshot.worker),
  );
  return {
    models: summarizeModels({
      published,
      byType: stats.byType,
      llmStages: options.catalog.llmStages?.() ?? [],
      configured: options.llms,
    }),
    held: heldLanes(published),
  };
}
