import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { mergeSnapshots, readMetricsFiles, renderPrometheus, TaskMetrics, writeMetricsFile } from './task-metrics.ts';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'assistant-metrics-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('TaskMetrics', () => {
  it('sums the files of several workers and skips files that are not metrics', async () => {
    const first = new TaskMetrics();
    first.recordOutcome('email.inbox.check', 'done', 120);
    first.recordOutcome('email.inbox.check', 'retrying', 700);
    first.recordRejection('email.inbox.collect', 'duplicate');
    const second = new TaskMetrics();
    second.recordOutcome('email.inbox.check', 'done', 45_000);
    second.recordRejection('email.inbox.collect', 'duplicate');
    second.recordRejection('email.inbox.collect', 'rate_limited');
    await writeMetricsFile(path.join(dir, 'a.metrics.json'), first.snapshot());
    await writeMetricsFile(path.join(dir, 'b.metrics.json'), second.snapshot());
    await writeFile(path.join(dir, 'c.metrics.json'), '{"version": 2}');
    await writeFile(path.join(dir, 'd.metrics.json'), 'not json');
    await writeFile(path.join(dir, 'worker.yaml'), 'id: x\n');

    const merged = mergeSnapshots(await readMetricsFiles(dir));
    expect(merged.tasks['email.inbox.check']).toEqual({
      outcomes: { done: 2, retrying: 1 },
      duration: { buckets: [0, 0, 1, 1, 2, 2, 2, 2, 2, 3, 3, 3], sum_seconds: 45.82, count: 3 },
    });
    expect(merged.rejections).toEqual({ 'email.inbox.collect': { duplicate: 2, rate_limited: 1 } });
  });

  it('renders the Prometheus text format with escaped label values', () => {
    const metrics = new TaskMetrics();
    metrics.recordOutcome('system.echo', 'failed', 10);
    const text = renderPrometheus({
      queue: { pending: { 'odd"type\\': 2 } },
      snapshot: metrics.snapshot(),
      workersAlive: 1,
    });
    const lines = text.split('\n');
    expect(lines).toContain('# TYPE assistant_queue_tasks gauge');
    expect(lines).toContain('assistant_queue_tasks{state="pending",type="odd\\"type\\\\"} 2');
    expect(lines).toContain('# TYPE assistant_task_duration_seconds histogram');
    expect(lines).toContain('assistant_task_duration_seconds_sum{type="system.echo"} 0.01');
    expect(lines).toContain('assistant_task_outcomes_total{type="system.echo",outcome="failed"} 1');
    expect(lines).toContain('assistant_workers_alive 1');
    expect(text.endsWith('\n')).toBe(true);
  });
});
