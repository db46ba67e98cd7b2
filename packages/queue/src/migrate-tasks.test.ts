import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { TaskQueue } from './interfaces.ts';
import { migrateTasks } from './migrate-tasks.ts';
import { openFileTaskQueue } from './open-file-task-queue.ts';
import { UnrecoverableError } from './task-errors.ts';

let dir: string;
const closers: (() => Promise<void>)[] = [];
beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'assistant-migrate-'));
});
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
  await rm(dir, { recursive: true, force: true });
});

async function queueIn(name: string): Promise<TaskQueue> {
  const queue = await openFileTaskQueue({
    directory: path.join(dir, name, 'queue'),
    dataDirectory: path.join(dir, name),
  });
  closers.push(() => queue.close());
  return queue;
}

async function enqueue(queue: TaskQueue, type: string, readyAtMs?: number): Promise<string> {
  const outcome = await queue.enqueue({ type, payload: { type }, ...(readyAtMs ? { readyAtMs } : {}) });
  if (outcome.status !== 'enqueued') throw new Error(outcome.status);
  return outcome.task.id;
}

/** A source queue with a task in every state, the active one held by a worker that went away. */
async function sourceWithEveryState() {
  const source = await queueIn('source');
  const consumer = source.consumer({ pollIntervalMs: 20 });
  await consumer.start();
  const ids = {
    done: await enqueue(source, 'test.done'),
    failed: await enqueue(source, 'test.failed'),
    active: await enqueue(source, 'test.active'),
    pending: await enqueue(source, 'test.pending'),
    scheduled: await enqueue(source, 'test.scheduled', Date.now() + 3_600_000),
  };
  const claim = async () => {
    const claimed = await consumer.claim();
    if (!claimed) throw new Error('nothing to claim');
    return claimed;
  };
  await consumer.complete(await claim(), { kept: true });
  await consumer.fail(await claim(), new UnrecoverableError('broke for good'));
  const held = await claim();
  expect(held.id).toBe(ids.active);
  return { source, consumer, ids };
}

describe('migrateTasks', () => {
  it('moves tasks in every state with their ids, attempts, history and results, and refuses while a worker runs', async () => {
    const { source, consumer, ids } = await sourceWithEveryState();
    const target = await queueIn('target');
    await expect(migrateTasks({ source, target })).rejects.toMatchObject({ code: 'CONFLICT' });
    expect((await target.stats()).pending).toBe(0);
    // The worker goes away without releasing what it held, as a stopped process would.
    await consumer.close();
    const report = await migrateTasks({ source, target });
    expect(report).toMatchObject({ moved: { pending: 3, done: 1, failed: 1 }, alreadyThere: 0, leftActive: [] });
    expect(await source.stats()).toMatchObject({ pending: 0, active: 0, done: 0, failed: 0 });
    expect(await target.get(ids.done)).toMatchObject({ state: 'done', task: { result: { kept: true } } });
    expect(await target.get(ids.failed)).toMatchObject({
      state: 'failed',
      task: { error: { message: 'broke for good' } },
    });
    // Recovery counted the attempt the vanished worker spent, as it would have on the old backend.
    const recovered = await target.get(ids.active);
    expect(recovered).toMatchObject({ state: 'pending', task: { attempts: 1 } });
    expect(recovered?.task?.history.map((attempt) => attempt.error.type)).toEqual(['WorkerDied']);
    expect(await target.stats()).toMatchObject({ ready: 2, scheduled: 1 });
  });

  it('finishes a migration that stopped halfway without duplicating what it had moved', async () => {
    const { source, consumer, ids } = await sourceWithEveryState();
    await consumer.close();
    const target = await queueIn('target');
    // The first run stopped after putting one task in the target and before removing it from the source.
    const copied = await source.get(ids.pending);
    if (!copied?.task) throw new Error('expected the pending task');
    await target.importTask(copied.task, 'pending');
    const dry = await migrateTasks({ source, target, dryRun: true });
    expect(dry.moved).toMatchObject({ pending: 2, done: 1, failed: 1 });
    expect((await source.stats()).pending).toBe(2);
    const report = await migrateTasks({ source, target });
    expect(report.alreadyThere).toBe(1);
    expect(report.moved).toMatchObject({ pending: 2, done: 1, failed: 1 });
    expect(await target.stats()).toMatchObject({ pending: 3, done: 1, failed: 1 });
    expect((await target.list()).map((entry) => entry.name?.id).sort()).toEqual(Object.values(ids).sort());
  });
});
