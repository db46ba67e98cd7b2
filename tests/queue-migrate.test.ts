// `assistant queue migrate` as an owner runs it: tasks in every state moved from the file queue to Redis and back,
// through the real CLI, with ids, attempts, results and history kept, and refused while a worker runs.
import { randomBytes } from 'node:crypto';
import { readdir } from 'node:fs/promises';
import path from 'node:path';
import { openFileTaskQueue, type TaskQueue, UnrecoverableError } from '@assistant/queue';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as z from 'zod';
import { runCli } from './helpers/node-process.ts';
import { type RedisServer, startRedis } from './helpers/redis.ts';
import { type TempDir, tempDir } from './helpers/temp-dir.ts';

let redis: RedisServer;
beforeAll(async () => {
  redis = await startRedis();
});
afterAll(async () => {
  await redis?.[Symbol.asyncDispose]();
});

function config(backend: 'file' | 'redis', prefix: string): string {
  return `data_dir: ./data
worker:
  concurrency: 2
  poll_interval: 100ms
  shutdown_grace: 2s
queue:
  backend: ${backend}
  redis: {url: "${redis.url}", prefix: ${prefix}}
`;
}

async function cli(dir: TempDir, args: readonly string[]) {
  return runCli(args, { cwd: dir.path, env: { ASSISTANT_LOG_FORMAT: 'json' } });
}

const reportSchema = z.object({
  from: z.string(),
  to: z.string(),
  dryRun: z.boolean(),
  moved: z.object({ pending: z.number(), active: z.number(), done: z.number(), failed: z.number() }),
  alreadyThere: z.number(),
  leftActive: z.array(z.string()),
  unreadable: z.array(z.string()),
});

const showSchema = z.object({
  id: z.string(),
  state: z.enum(['pending', 'active', 'done', 'failed']),
  task: z.looseObject({
    attempts: z.number(),
    payload: z.unknown(),
    readyAt: z.string(),
    result: z.unknown().optional(),
    error: z.object({ type: z.string(), message: z.string() }).optional(),
    history: z.array(z.looseObject({ error: z.object({ type: z.string() }) })),
  }),
});

async function show(dir: TempDir, id: string) {
  const run = await cli(dir, ['task', 'show', id, '--json']);
  expect(run.stderr).toBe('');
  return showSchema.parse(JSON.parse(run.stdout));
}

async function enqueued(queue: TaskQueue, type: string, payload: unknown, readyAtMs?: number): Promise<string> {
  const outcome = await queue.enqueue({ type, payload: payload as never, ...(readyAtMs ? { readyAtMs } : {}) });
  if (outcome.status !== 'enqueued') throw new Error(outcome.status);
  return outcome.task.id;
}

describe('assistant queue migrate', () => {
  it('moves tasks in every state to Redis and back, keeping what they were, and refuses while a worker runs', async () => {
    await using dir = await tempDir();
    const prefix = `migrate-${randomBytes(4).toString('hex')}`;
    await dir.write('config.yaml', config('file', prefix));
    // Tasks in every state in the file queue, as a worker would have left them.
    const fileQueue = await openFileTaskQueue({
      directory: path.join(dir.path, 'data', 'queue'),
      dataDirectory: path.join(dir.path, 'data'),
    });
    const consumer = fileQueue.consumer({ pollIntervalMs: 50 });
    await consumer.start();
    const ids = {
      done: await enqueued(fileQueue, 'system.echo', { n: 1 }),
      failed: await enqueued(fileQueue, 'system.echo', { n: 2 }),
      orphan: await enqueued(fileQueue, 'system.echo', { n: 3 }),
      pending: await enqueued(fileQueue, 'system.echo', { n: 4 }),
      scheduled: await enqueued(fileQueue, 'system.echo', { n: 5 }, Date.now() + 3_600_000),
    };
    const claim = async () => {
      const claimed = await consumer.claim();
      if (!claimed) throw new Error('nothing to claim');
      return claimed;
    };
    await consumer.complete(await claim(), { echoed: 1 });
    await consumer.fail(await claim(), new UnrecoverableError('could not echo'));
    expect((await claim()).id).toBe(ids.orphan);

    // A worker is alive on the file queue (this process's consumer): nothing moves.
    const refused = await cli(dir, ['queue', 'migrate', '--to', 'redis']);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toMatch(/worker is running on the queue being migrated/);
    expect(refused.stderr).toMatch(/stop the worker/);
    // The worker goes away without releasing its task, as a killed process does.
    await consumer.close();
    await fileQueue.close();

    const dry = reportSchema.parse(
      JSON.parse((await cli(dir, ['queue', 'migrate', '--to', 'redis', '--dry-run', '--json'])).stdout),
    );
    expect(dry).toMatchObject({
      from: 'file',
      to: 'redis',
      dryRun: true,
      moved: { pending: 2, active: 1, done: 1, failed: 1 },
    });
    const before = Object.fromEntries(
      await Promise.all(Object.entries(ids).map(async ([key, id]) => [key, await show(dir, id)])),
    );

    const moved = await cli(dir, ['queue', 'migrate', '--to', 'redis', '--json']);
    // Recovery, before anything moves, says what it did with the vanished worker's task.
    expect(moved.stderr).toMatch(/returned to pending: worker died/);
    expect(reportSchema.parse(JSON.parse(moved.stdout))).toMatchObject({
      moved: { pending: 3, active: 0, done: 1, failed: 1 },
      alreadyThere: 0,
      leftActive: [],
    });
    for (const state of ['pending', 'active', 'done', 'failed']) {
      expect(await readdir(path.join(dir.path, 'data', 'queue', state))).toEqual([]);
    }

    await dir.write('config.yaml', config('redis', prefix));
    for (const key of ['done', 'failed', 'pending', 'scheduled'] as const) {
      const after = await show(dir, ids[key]);
      expect(after.state).toBe(before[key]?.state);
      expect(after.task).toEqual(before[key]?.task);
    }
    // The task the vanished worker held is pending again, its spent attempt counted by recovery.
    const orphan = await show(dir, ids.orphan);
    expect(orphan).toMatchObject({ state: 'pending', task: { attempts: 1 } });
    expect(orphan.task.history.map((attempt) => attempt.error.type)).toEqual(['WorkerDied']);

    // A worker on Redis runs what is ready: the moved tasks are real tasks there.
    const worker = await cli(dir, ['work', '--exit-when-idle']);
    expect(worker.code).toBe(0);
    expect(await show(dir, ids.pending)).toMatchObject({ state: 'done', task: { result: { n: 4 } } });
    expect(await show(dir, ids.orphan)).toMatchObject({ state: 'done', task: { attempts: 2 } });

    // And back to files, every state again, ls-able.
    const back = reportSchema.parse(
      JSON.parse((await cli(dir, ['queue', 'migrate', '--to', 'file', '--json'])).stdout),
    );
    expect(back.moved).toEqual({ pending: 1, active: 0, done: 3, failed: 1 });
    await dir.write('config.yaml', config('file', prefix));
    expect(await show(dir, ids.scheduled)).toEqual(before.scheduled);
    expect((await readdir(path.join(dir.path, 'data', 'queue', 'done'))).length).toBe(3);
    expect((await readdir(path.join(dir.path, 'data', 'queue', 'pending'))).length).toBe(1);
    const stats = await cli(dir, ['queue', 'stats', '--json']);
    expect(JSON.parse(stats.stdout)).toMatchObject({ pending: 1, done: 3, failed: 1, active: 0 });
  });

  it('has doctor say whether the Redis queue answers, never showing its password', async () => {
    await using dir = await tempDir();
    await dir.write('config.yaml', config('redis', `doctor-${randomBytes(4).toString('hex')}`));
    const ok = await cli(dir, ['doctor']);
    expect(ok.stdout).toMatch(
      /^ok {3}queue: Redis at redis:\/\/127\.0\.0\.1:\d+ \(prefix doctor-\w+\): 0 pending, 0 active, 0 workers alive$/m,
    );
    const unreachable = `data_dir: ./data
queue:
  backend: redis
  redis: {url: "redis://127.0.0.1:1", password: do-not-print-me}
`;
    await dir.write('config.yaml', unreachable);
    const failed = await cli(dir, ['doctor']);
    expect(failed.code).toBe(1);
    expect(failed.stdout).toMatch(/^FAIL queue: cannot reach Redis at redis:\/\/127\.0\.0\.1:1\b/m);
    expect(failed.stdout + failed.stderr).not.toContain('do-not-print-me');
  });

  it('says which backend the tasks are already in when asked to migrate to it', async () => {
    await using dir = await tempDir();
    await dir.write('config.yaml', config('file', 'unused'));
    const run = await cli(dir, ['queue', 'migrate', '--to', 'file']);
    expect(run.code).not.toBe(0);
    expect(run.stderr).toMatch(/already says `queue.backend: file`/);
    const bad = await cli(dir, ['queue', 'migrate', '--to', 'postgres']);
    expect(bad.stderr).toMatch(/--to takes `redis` or `file`/);
  });
});
