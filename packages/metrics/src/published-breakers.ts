import * as z from 'zod';
import { maxErrorLength } from './model-metrics.ts';

/** One entry of a snapshot's `breakers`: a task type's breaker that holds the publishing worker's claims. */
const publishedBreakerSchema = z.object({
  taskType: z.string().min(1),
  state: z.enum(['open', 'half_open']),
  consecutiveFailures: z.int().min(0),
  retryAt: z.iso.datetime({ offset: true }).optional(),
  lastError: z.string().optional(),
});

/** A task-type breaker a remote worker keeps in its own data directory, as it published it. */
export interface PublishedBreaker {
  worker: string;
  taskType: string;
  state: 'open' | 'half_open';
  consecutiveFailures: number;
  retryAt?: string;
  lastError?: string;
}

/**
 * The open and half-open task-type breakers the workers published (`WorkerDirectory.readMetrics`). A worker on another
 * machine keeps its breakers in its own data directory, so this is how the server learns of them. A snapshot that
 * names no worker or holds no `breakers` gives none; entries that do not validate are skipped one by one.
 */
export function parsePublishedBreakers(values: readonly unknown[]): PublishedBreaker[] {
  const found: PublishedBreaker[] = [];
  for (const value of values) {
    if (typeof value !== 'object' || value === null || Array.isArray(value)) continue;
    const record = value as Record<string, unknown>;
    if (typeof record.worker !== 'string' || !Array.isArray(record.breakers)) continue;
    for (const entry of record.breakers) {
      const parsed = publishedBreakerSchema.safeParse(entry);
      if (!parsed.success) continue;
      const { retryAt, lastError, ...breaker } = parsed.data;
      found.push({
        ...breaker,
        ...(retryAt === undefined ? {} : { retryAt }),
        ...(lastError === undefined ? {} : { lastError: lastError.slice(0, maxErrorLength) }),
        worker: record.worker,
      });
    }
  }
  return found;
}
