import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  mergeSnapshots,
  metricsSnapshotSchema,
  readMetricsFiles,
  renderPrometheus,
  TaskMetrics,
  writeMetricsFile,
} from './task-metrics.ts';

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

  it("goes from records through two workers' files and the server's own counters to exact Prometheus text", async () => {
    // Durations that are exact in binary, two of them on a bucket bound (a bound counts values equal to it).
    const first = new TaskMetrics();
    first.recordOutcome('system.echo', 'done', 250);
    first.recordOutcome('system.echo', 'failed', 2_000);
    first.recordRejection('email.inbox.collect', 'rate_limited');
    const second = new TaskMetrics();
    second.recordOutcome('system.echo', 'done', 500);
    await writeMetricsFile(path.join(dir, 'host-1-aaa.metrics.json'), first.snapshot(new Date('2026-01-01T00:00:00Z')));
    await writeMetricsFile(
      path.join(dir, 'host-2-bbb.metrics.json'),
      second.snapshot(new Date('2026-01-01T00:00:05Z')),
    );
    // Written whole or not at all: no temporary file is left beside them.
    expect((await readdir(dir)).sort()).toEqual(['host-1-aaa.metrics.json', 'host-2-bbb.metrics.json']);
    expect(
      metricsSnapshotSchema.parse(JSON.parse(await readFile(path.join(dir, 'host-1-aaa.metrics.json'), 'utf8'))),
    ).toMatchObject({ version: 1, updated_at: '2026-01-01T00:00:00.000Z' });

    const server = new TaskMetrics();
    server.recordRejection('system.echo', 'duplicate');
    const merged = mergeSnapshots([
      ...(await readMetricsFiles(dir)),
      server.snapshot(new Date('2025-12-31T00:00:00Z')),
    ]);
    expect(merged.updated_at).toBe('2026-01-01T00:00:05.000Z');
    const text = renderPrometheus({
      queue: { pending: { 'system.echo': 2 }, active: {}, done: {}, failed: { 'system.echo': 1 } },
      snapshot: merged,
      workersAlive: 2,
    });
    // The families after these (breakers, models) have their own tests in model-metrics.test.ts.
    expect(text.slice(0, text.indexOf('# HELP assistant_circuit_breaker_open'))).toBe(
      [
        '# HELP assistant_queue_tasks Task files in the queue, by state and task type.',
        '# TYPE assistant_queue_tasks gauge',
        'assistant_queue_tasks{state="pending",type="system.echo"} 2',
        'assistant_queue_tasks{state="failed",type="system.echo"} 1',
        '# HELP assistant_task_outcomes_total Finished task runs, by task type and outcome.',
        '# TYPE assistant_task_outcomes_total counter',
        'assistant_task_outcomes_total{type="system.echo",outcome="done"} 2',
        'assistant_task_outcomes_total{type="system.echo",outcome="failed"} 1',
        '# HELP assistant_task_duration_seconds How long task runs took, by task type.',
        '# TYPE assistant_task_duration_seconds histogram',
        'assistant_task_duration_seconds_bucket{type="system.echo",le="0.05"} 0',
        'assistant_task_duration_seconds_bucket{type="system.echo",le="0.1"} 0',
        'assistant_task_duration_seconds_bucket{type="system.echo",le="0.25"} 1',
        'assistant_task_duration_seconds_bucket{type="system.echo",le="0.5"} 2',
        'assistant_task_duration_seconds_bucket{type="system.echo",le="1"} 2',
        'assistant_task_duration_seconds_bucket{type="system.echo",le="2.5"} 3',
        'assistant_task_duration_seconds_bucket{type="system.echo",le="5"} 3',
        'assistant_task_duration_seconds_bucket{type="system.echo",le="10"} 3',
        'assistant_task_duration_seconds_bucket{type="system.echo",le="30"} 3',
        'assistant_task_duration_seconds_bucket{type="system.echo",le="60"} 3',
        'assistant_task_duration_seconds_bucket{type="system.echo",le="300"} 3',
        'assistant_task_duration_seconds_bucket{type="system.echo",le="600"} 3',
        'assistant_task_duration_seconds_bucket{type="system.echo",le="+Inf"} 3',
        'assistant_task_duration_seconds_sum{type="system.echo"} 2.75',
        'assistant_task_duration_seconds_count{type="system.echo"} 3',
        '# HELP assistant_policy_rejections_total Enqueues the queue policies turned away, by task type and reason.',
        '# TYPE assistant_policy_rejections_total counter',
        'assistant_policy_rejections_total{type="email.inbox.collect",reason="rate_limited"} 1',
        'assistant_policy_rejections_total{type="system.echo",reason="duplicate"} 1',
        '# HELP assistant_workers_alive Workers whose heartbeat is within the lease.',
        '# TYPE assistant_workers_alive gauge',
        'assistant_workers_alive 2',
        '',
      ].join('\n'),
    );
  });

  it('keeps a snapshot apart from records made after it', () => {
    const metrics = new TaskMetrics();
    metrics.recordOutcome('system.echo', 'done', 10);
    const before = metrics.snapshot();
    metrics.recordOutcome('system.echo', 'done', 10);
    expect(before.tasks['system.echo']?.outcomes.done).toBe(1);
    expect(metrics.snapshot().tasks['system.echo']?.outcomes.done).toBe(2);
  });

  it('reads nothing, without throwing, from a folder that does not exist', async () => {
    expect(await readMetricsFiles(path.join(dir, 'missing'))).toEqual([]);
    expect(mergeSnapshots([])).toEqual({
      version: 1,
      updated_at: '1970-01-01T00:00:00.000Z',
      tasks: {},
      rejections: {},
    });
  });

  it('renders the Prometheus text format with escaped label values', () => {
    const metrics = new TaskMetrics();
    metrics.recordOutcome('system.echo', 'failed', 10);
    const text = renderPrometheus({
      queue: { pending: { 'odd"type\\': 2, 'two\nlines': 1 } },
      snapshot: metrics.snapshot(),
      workersAlive: 1,
    });
    const lines = text.split('\n');
    expect(lines).toContain('# TYPE assistant_queue_tasks gauge');
    expect(lines).toContain('assistant_queue_tasks{state="pending",type="odd\\"type\\\\"} 2');
    expect(lines).toContain('assistant_queue_tasks{state="pending",type="two\\nlines"} 1');
    expect(lines).toContain('# TYPE assistant_task_duration_seconds histogram');
    expect(lines).toContain('assistant_task_duration_seconds_sum{type="system.echo"} 0.01');
    expect(lines).toContain('assistant_task_outcomes_total{type="system.echo",outcome="failed"} 1');
    expect(lines).toContain('assistant_workers_alive 1');
    expect(text.endsWith('\n')).toBe(true);
  });
});
