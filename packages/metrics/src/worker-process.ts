import * as z from 'zod';

/**
 * What a worker adds to the metrics snapshot it publishes (`WorkerDirectory.publishMetrics`): its id and its memory
 * when it wrote it. /metrics ignores these fields (the snapshot schema drops them); the dashboard shows each worker's
 * memory from them.
 */
const workerProcessSchema = z.object({
  worker: z.string(),
  memory: z.object({ rss_bytes: z.int().min(0), heap_used_bytes: z.int().min(0) }),
});
export type WorkerProcess = z.infer<typeof workerProcessSchema>;

/** This process's figures, to spread into the snapshot a worker publishes. */
export function workerProcess(workerId: string): WorkerProcess {
  const usage = process.memoryUsage();
  return { worker: workerId, memory: { rss_bytes: usage.rss, heap_used_bytes: usage.heapUsed } };
}

/** The worker figures among published snapshots, by worker id; snapshots without them are skipped. */
export function parseWorkerProcesses(values: readonly unknown[]): Map<string, WorkerProcess> {
  const found = new Map<string, WorkerProcess>();
  for (const value of values) {
    const parsed = workerProcessSchema.safeParse(value);
    if (parsed.success) found.set(parsed.data.worker, parsed.data);
  }
  return found;
}
