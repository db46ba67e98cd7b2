import { mkdir, mkdtemp, readdir, readFile, rm, stat, utimes, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  addToHistory,
  appendHistory,
  emptyHistory,
  type HistoryEvent,
  HistoryRecorder,
  historyRings,
  historySeries,
  maxKeysPerBucket,
  otherKey,
  readHistory,
} from './history-series.ts';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'assistant-history-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

const hourMs = 3_600_000;
const dayMs = 24 * hourMs;
const nowMs = Date.UTC(2026, 10, 28, 12, 5);
const task = (atMs: number, outcome: 'done' | 'failed' = 'done', type = 'email.inbox.check'): HistoryEvent => ({
  kind: 'task',
  type,
  outcome,
  durationMs: 100,
  atMs,
});

describe('history series', () => {
  it('sums 24 h in ten-minute buckets and 7 d in hourly ones, per type and per model, oldest first', () => {
    const history = addToHistory(emptyHistory(), [
      task(nowMs),
      task(nowMs - 60_000, 'failed'),
      task(nowMs - 2 * hourMs),
      task(nowMs - 3 * dayMs, 'done', 'github.pull_requests.check'),
      { kind: 'model', profile: 'default', latencyMs: 800, tokens: 120, atMs: nowMs - 5 * 60_000 },
      { kind: 'model', profile: 'default', latencyMs: 400, tokens: 30, atMs: nowMs - 4 * 60_000 },
    ]);
    const day = historySeries(history, { window: 'day', nowMs });
    expect(day.startsMs).toHaveLength(historyRings.day.buckets);
    expect(day.startsMs.at(-1)).toBe(Date.UTC(2026, 10, 28, 12, 0));
    const inbox = day.tasks['email.inbox.check'];
    expect(inbox?.done.at(-1)).toBe(1);
    expect(inbox?.failed.at(-1)).toBe(1);
    expect(inbox?.done.at(-13)).toBe(1);
    expect(inbox?.done.reduce((sum, value) => sum + value, 0)).toBe(2);
    // Three days ago is outside the day's window, inside the week's.
    expect(day.tasks['github.pull_requests.check']).toBeUndefined();
    const week = historySeries(history, { window: 'week', nowMs });
    expect(week.startsMs).toHaveLength(historyRings.week.buckets);
    expect(week.tasks['github.pull_requests.check']?.done.at(-73)).toBe(1);
    expect(week.tasks['email.inbox.check']?.done.at(-1)).toBe(1);
    expect(day.models.default?.calls.at(-1)).toBe(2);
    expect(day.models.default?.latencyMs.at(-1)).toBe(1_200);
    expect(day.models.default?.tokens.at(-1)).toBe(150);
  });

  it('reuses a slot when its period comes round again (rollover), leaving older counts out', () => {
    const history = addToHistory(emptyHistory(), [task(nowMs - dayMs)]);
    expect(
      historySeries(history, { window: 'day', nowMs: nowMs - dayMs }).tasks['email.inbox.check']?.done.at(-1),
    ).toBe(1);
    // Exactly 24 h later the same ten-minute slot comes round: the old count is gone from it, the new one is there.
    addToHistory(history, [task(nowMs)]);
    const day = historySeries(history, { window: 'day', nowMs });
    expect(day.tasks['email.inbox.check']?.done.reduce((sum, value) => sum + value, 0)).toBe(1);
    expect(history.day.filter((bucket) => bucket !== null)).toHaveLength(1);
    // An event older than the ring's span (arriving late) does not evict a newer bucket.
    addToHistory(history, [task(nowMs - 2 * dayMs)]);
    expect(historySeries(history, { window: 'day', nowMs }).tasks['email.inbox.check']?.done.at(-1)).toBe(1);
  });

  it('stays bounded: three months of busy hours with thousands of task types fits in a fixed size', async () => {
    const history = emptyHistory();
    const sizes: number[] = [];
    const steps = 4 * 90;
    // Three months, a batch every six hours, each with many types: far more than a bucket keeps apart.
    for (let step = 0; step < steps; step += 1) {
      const atMs = nowMs + step * 6 * hourMs;
      const events = Array.from({ length: 100 }, (_unused, index) =>
        task(atMs + index, 'done', `type.number.${step}-${index}`),
      );
      events.push({ kind: 'model', profile: `profile-${step}`, latencyMs: 10, tokens: 5, atMs });
      addToHistory(history, events);
      if (step >= 50 && step % 25 === 0) sizes.push(JSON.stringify(history).length);
    }
    expect(history.day).toHaveLength(historyRings.day.buckets);
    expect(history.week).toHaveLength(historyRings.week.buckets);
    for (const bucket of [...history.day, ...history.week]) {
      if (!bucket) continue;
      expect(Object.keys(bucket.tasks).length).toBeLessThanOrEqual(maxKeysPerBucket + 1);
      expect(Object.keys(bucket.models).length).toBeLessThanOrEqual(maxKeysPerBucket + 1);
    }
    // The types past the bucket's limit are counted, under `other`.
    const lastMs = nowMs + (steps - 1) * 6 * hourMs;
    const last = historySeries(history, { window: 'day', nowMs: lastMs });
    const total = Object.values(last.tasks).reduce((sum, line) => sum + line.done.reduce((a, b) => a + b, 0), 0);
    expect(total).toBe(4 * 100);
    expect(last.tasks[otherKey]).toBeDefined();
    // The size stopped growing once the week's ring was full (28 batches): from then on, flat.
    const full = sizes;
    expect(Math.max(...full) - Math.min(...full)).toBeLessThan(Math.min(...full) * 0.05);
    // On disk, written by rename: the same size, and nothing else left beside it (no temporary file, no lock).
    const file = path.join(dir, 'metrics', 'history.json');
    expect(await appendHistory({ file, events: [task(lastMs)] })).toBe(true);
    addToHistory(history, [task(lastMs)]);
    expect((await stat(file)).size).toBeLessThan(JSON.stringify(history).length);
    expect(await readdir(path.dirname(file))).toEqual(['history.json']);
  });

  it('writes by rename (a torn or foreign file reads as empty, never throws), and waits out a live lock', async () => {
    const file = path.join(dir, 'metrics', 'history.json');
    await mkdir(path.dirname(file), { recursive: true });
    await writeFile(file, '{"version": 1, "day": [nul');
    expect(await readHistory(file)).toEqual(emptyHistory());
    // Another process holds the lock: nothing is written, and the recorder keeps the events for the next flush.
    await mkdir(`${file}.lock`);
    const recorder = new HistoryRecorder({ file });
    recorder.record(task(nowMs));
    await recorder.flush();
    expect(await readFile(file, 'utf8')).toBe('{"version": 1, "day": [nul');
    // A lock left by a process that died (older than 30 s) is taken over.
    const old = new Date(Date.now() - 60_000);
    await utimes(`${file}.lock`, old, old);
    recorder.record(task(nowMs + 1));
    await recorder.flush();
    const history = await readHistory(file);
    expect(historySeries(history, { window: 'day', nowMs }).tasks['email.inbox.check']?.done.at(-1)).toBe(2);
    expect(await readdir(path.dirname(file))).toEqual(['history.json']);
  });
});
