import { readFile } from 'node:fs/promises';
import path from 'node:path';
import * as z from 'zod';
import { updateLockedFile } from './update-locked-file.ts';

/**
 * The History page's series: what finished per task type and what the models did, in two rings of fixed-size buckets
 * in one small JSON file (`data/metrics/history.json`): 144 ten-minute buckets (24 h) and 168 hourly ones (7 d). A
 * bucket is reused when its slot comes round again, so the file never holds more than those 312 buckets, and each
 * bucket at most `maxKeysPerBucket` task types and model profiles (more are counted under `other`): its size is
 * bounded whatever runs, for however long.
 */
export const historyRings = {
  day: { bucketMs: 10 * 60_000, buckets: 144 },
  week: { bucketMs: 60 * 60_000, buckets: 168 },
} as const;
export type HistoryWindow = keyof typeof historyRings;
/** Task types (and model profiles) one bucket keeps apart; the rest add up under {@link otherKey}. */
export const maxKeysPerBucket = 64;
export const otherKey = 'other';

const count = z.int().min(0);
const taskCountsSchema = z.object({ done: count, failed: count, duration_ms: z.number().min(0) });
const modelCountsSchema = z.object({ calls: count, latency_ms: z.number().min(0), tokens: count });
const bucketSchema = z.object({
  start_ms: z.int(),
  tasks: z.record(z.string(), taskCountsSchema),
  models: z.record(z.string(), modelCountsSchema),
});
const historyFileSchema = z.object({
  version: z.literal(1),
  day: z.array(bucketSchema.nullable()).length(historyRings.day.buckets),
  week: z.array(bucketSchema.nullable()).length(historyRings.week.buckets),
});
export type HistoryBucket = z.infer<typeof bucketSchema>;
export type HistoryFile = z.infer<typeof historyFileSchema>;
type TaskCounts = z.infer<typeof taskCountsSchema>;
type ModelCounts = z.infer<typeof modelCountsSchema>;

/** Where a data directory keeps the history: `metrics/history.json`. */
export function historyFile(dataDir: string): string {
  return path.join(dataDir, 'metrics', 'history.json');
}

/** One finished task run, or one completed model call, to count. */
export type HistoryEvent =
  | { kind: 'task'; type: string; outcome: 'done' | 'failed'; durationMs: number; atMs: number }
  | { kind: 'model'; profile: string; latencyMs: number; tokens: number; atMs: number };

export function emptyHistory(): HistoryFile {
  return {
    version: 1,
    day: new Array(historyRings.day.buckets).fill(null),
    week: new Array(historyRings.week.buckets).fill(null),
  };
}

/** A key of a bucket's map: the key itself while there is room, else `other`. */
function keyIn(map: Record<string, unknown>, key: string): string {
  return key in map || Object.keys(map).length < maxKeysPerBucket ? key : otherKey;
}

/** The bucket for `atMs` in a ring: the slot's bucket, emptied first when it holds an older period (rollover). */
function bucketFor(ring: (HistoryBucket | null)[], window: HistoryWindow, atMs: number): HistoryBucket {
  const { bucketMs, buckets } = historyRings[window];
  const period = Math.floor(atMs / bucketMs);
  const slot = ((period % buckets) + buckets) % buckets;
  const startMs = period * bucketMs;
  let bucket = ring[slot];
  if (!bucket || bucket.start_ms !== startMs) {
    bucket = { start_ms: startMs, tasks: {}, models: {} };
    ring[slot] = bucket;
  }
  return bucket;
}

/** Counts events into a history (in place) and returns it. An event older than a ring's span is left out of it. */
export function addToHistory(history: HistoryFile, events: readonly HistoryEvent[]): HistoryFile {
  for (const window of ['day', 'week'] as const) {
    const { bucketMs, buckets } = historyRings[window];
    const ring = history[window];
    // The newest bucket in the ring: an event that would reuse a slot of a newer period is too old to keep.
    let newestMs = Number.NEGATIVE_INFINITY;
    for (const bucket of ring) if (bucket && bucket.start_ms > newestMs) newestMs = bucket.start_ms;
    for (const event of events) {
      if (event.atMs < newestMs - (buckets - 1) * bucketMs) continue;
      const bucket = bucketFor(ring, window, event.atMs);
      newestMs = Math.max(newestMs, bucket.start_ms);
      if (event.kind === 'task') {
        const key = keyIn(bucket.tasks, event.type);
        const counts: TaskCounts = bucket.tasks[key] ?? { done: 0, failed: 0, duration_ms: 0 };
        counts[event.outcome] += 1;
        counts.duration_ms += Math.max(0, event.durationMs);
        bucket.tasks[key] = counts;
      } else {
        const key = keyIn(bucket.models, event.profile);
        const counts: ModelCounts = bucket.models[key] ?? { calls: 0, latency_ms: 0, tokens: 0 };
        counts.calls += 1;
        counts.latency_ms += Math.max(0, event.latencyMs);
        counts.tokens += Math.max(0, Math.round(event.tokens));
        bucket.models[key] = counts;
      }
    }
  }
  return history;
}

/** The history in a file, or an empty one when there is none or it cannot be read (it is statistics, not state). */
export async function readHistory(file: string): Promise<HistoryFile> {
  const text = await readFile(file, 'utf8').catch(() => undefined);
  if (text === undefined) return emptyHistory();
  try {
    const parsed = historyFileSchema.safeParse(JSON.parse(text));
    return parsed.success ? parsed.data : emptyHistory();
  } catch {
    return emptyHistory();
  }
}

/**
 * Adds events to the history file: under a lock (a directory beside it, so workers of one data directory do not
 * lose each other's counts), read, add, write to a temporary file, fsync, rename over the file. A crash at any
 * point leaves the old file or the new one, never a torn one. Resolves `false` (and adds nothing) when the lock is
 * busy: the caller keeps the events for its next write.
 */
export async function appendHistory(options: { file: string; events: readonly HistoryEvent[] }): Promise<boolean> {
  if (options.events.length === 0) return true;
  return updateLockedFile({
    file: options.file,
    read: readHistory,
    update: (current) => addToHistory(current, options.events),
  });
}

/** Per type (or profile) and in total, over a window, in the order of time: what the charts draw. */
export interface HistorySeries {
  window: HistoryWindow;
  bucketMs: number;
  /** The start of each bucket, oldest first; the last holds `nowMs`. */
  startsMs: number[];
  tasks: Record<string, { done: number[]; failed: number[]; durationMs: number[] }>;
  models: Record<string, { calls: number[]; latencyMs: number[]; tokens: number[] }>;
}

/** The buckets of one window up to `nowMs`, oldest first, zero where nothing was counted (or the slot is older). */
export function historySeries(history: HistoryFile, options: { window: HistoryWindow; nowMs: number }): HistorySeries {
  const { bucketMs, buckets } = historyRings[options.window];
  const lastPeriod = Math.floor(options.nowMs / bucketMs);
  const startsMs = Array.from({ length: buckets }, (_unused, index) => (lastPeriod - buckets + 1 + index) * bucketMs);
  const byStart = new Map<number, HistoryBucket>();
  for (const bucket of history[options.window]) if (bucket) byStart.set(bucket.start_ms, bucket);
  const series: HistorySeries = { window: options.window, bucketMs, startsMs, tasks: {}, models: {} };
  const zeros = () => new Array<number>(buckets).fill(0);
  startsMs.forEach((startMs, index) => {
    const bucket = byStart.get(startMs);
    if (!bucket) return;
    for (const [type, counts] of Object.entries(bucket.tasks)) {
      const line = series.tasks[type] ?? { done: zeros(), failed: zeros(), durationMs: zeros() };
      series.tasks[type] = line;
      line.done[index] = counts.done;
      line.failed[index] = counts.failed;
      line.durationMs[index] = counts.duration_ms;
    }
    for (const [profile, counts] of Object.entries(bucket.models)) {
      const line = series.models[profile] ?? { calls: zeros(), latencyMs: zeros(), tokens: zeros() };
      series.models[profile] = line;
      line.calls[index] = counts.calls;
      line.latencyMs[index] = counts.latency_ms;
      line.tokens[index] = counts.tokens;
    }
  });
  return series;
}

/**
 * Collects events in memory and adds them to the history file now and then (the worker calls `flush` with its
 * metrics timer and at shutdown). Events a busy lock or a failed write kept back go with the next flush, up to
 * `maxPendingEvents` (the oldest are dropped beyond that, so a file that cannot be written never fills memory).
 */
export class HistoryRecorder {
  readonly #file: string;
  #pending: HistoryEvent[] = [];
  #flushing: Promise<void> = Promise.resolve();
  static readonly maxPendingEvents = 10_000;

  constructor(options: { file: string }) {
    this.#file = options.file;
  }

  record(event: HistoryEvent): void {
    this.#pending.push(event);
    if (this.#pending.length > HistoryRecorder.maxPendingEvents) {
      this.#pending.splice(0, this.#pending.length - HistoryRecorder.maxPendingEvents);
    }
  }

  /** Writes what was recorded since the last flush; never throws (a failure keeps the events for the next one). */
  flush(): Promise<void> {
    this.#flushing = this.#flushing.then(async () => {
      const events = this.#pending;
      if (events.length === 0) return;
      this.#pending = [];
      const written = await appendHistory({ file: this.#file, events }).catch(() => false);
      if (!written) this.#pending = [...events, ...this.#pending];
    });
    return this.#flushing;
  }
}
