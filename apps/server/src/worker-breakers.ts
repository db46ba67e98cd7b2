import { parsePublishedBreakers } from '@assistant/metrics';
import type { TaskQueue } from '@assistant/queue';
import type { BreakerSummary } from './server-catalog.ts';

/**
 * The breakers /health, /metrics and the dashboard show: the server's own (its notes, which local workers share),
 * then the open ones live workers published that the notes do not hold open. A worker on another machine keeps its
 * breakers in its own data directory, so without this an open breaker there, holding that worker's claims of a type,
 * was seen nowhere on the server. Those carry the worker's id.
 */
export async function withWorkerBreakers(
  queue: Pick<TaskQueue, 'workers'>,
  own: BreakerSummary[],
): Promise<BreakerSummary[]> {
  const [published, workers] = await Promise.all([queue.workers.readMetrics(), queue.workers.list()]);
  const alive = new Set(workers.filter((worker) => worker.alive).map((worker) => worker.id));
  const heldHere = new Set(own.filter((breaker) => breaker.state !== 'closed').map((breaker) => breaker.taskType));
  const theirs = parsePublishedBreakers(published).filter(
    (breaker) => alive.has(breaker.worker) && !heldHere.has(breaker.taskType),
  );
  return [...own, ...theirs];
}
