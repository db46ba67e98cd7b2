import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { openFileTaskQueue, type TaskQueue } from '@assistant/queue';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { withWorkerBreakers } from './worker-breakers.ts';

let dir: string;
let queue: TaskQueue;
beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'assistant-worker-breakers-'));
  queue = await openFileTaskQueue({ directory: path.join(dir, 'queue') });
});
afterEach(async () => {
  await queue.close();
  await rm(dir, { recursive: true, force: true });
});

const open = (taskType: string) => ({
  taskType,
  state: 'open' as const,
  consecutiveFailures: 5,
  retryAt: '2026-11-26T16:00:00.000Z',
  lastError: 'connection refused',
});

/** A worker that beats and publishes `breakers`, as `assistant work` does: alive while `pid` runs. */
async function worker(id: string, pid: number, breakers: unknown[]) {
  await queue.workers.heartbeat({ id, pid, host: os.hostname() }, new Date().toISOString());
  await queue.workers.publishMetrics(id, { worker: id, breakers } as never);
}

describe('withWorkerBreakers', () => {
  it("adds the open breakers live workers published that the server's notes do not hold open, naming the worker", async () => {
    await worker('w-gpu', process.pid, [open('email.inbox.classify'), open('email.inbox.collect')]);
    // A worker that is gone: what it published holds nothing any more.
    // (Above Linux's largest pid, so no process can have it.)
    await worker('w-gone', 2_147_483_646, [open('github.prs.classify')]);
    // Published by hand or by an older worker: entries that do not validate are skipped.
    await worker('w-odd', process.pid, [{ taskType: 'x.y', state: 'sideways' }, 'nonsense']);
    const own = [
      { taskType: 'email.inbox.check', state: 'closed' as const, consecutiveFailures: 0 },
      // Open in the server's notes too (a local worker's): shown once, as the server's.
      { ...open('email.inbox.collect'), consecutiveFailures: 3 },
    ];
    expect(await withWorkerBreakers(queue, own)).toEqual([
      ...own,
      { ...open('email.inbox.classify'), worker: 'w-gpu' },
    ]);
  });
});
