import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { claimsHoldFileName, holdClaims, readClaimsHold } from './claims-hold.ts';
import { FileTaskConsumer } from './file-task-consumer.ts';
import { FileTaskQueue } from './file-task-queue.ts';
import { snapshotQueueFiles } from './snapshot-queue-files.ts';

let directory: string;
const consumers: FileTaskConsumer[] = [];

beforeEach(async () => {
  directory = await mkdtemp(path.join(os.tmpdir(), 'assistant-hold-'));
});
afterEach(async () => {
  for (const consumer of consumers.splice(0)) await consumer.close();
  await rm(directory, { recursive: true, force: true });
});

async function setup() {
  const queue = await FileTaskQueue.open({ directory, logger: { info() {}, warn() {} } });
  const consumer = new FileTaskConsumer(queue, { pollIntervalMs: 50 });
  consumers.push(consumer);
  await consumer.start();
  return { queue, consumer };
}

/** A pid no process has: above every kernel's pid_max (4 194 304 at most on Linux). */
function deadPid(): number {
  return 2_147_483_646;
}

async function enqueue(queue: FileTaskQueue, type: string, priority = 5): Promise<string> {
  const outcome = await queue.enqueue({ type, priority });
  if (outcome.status !== 'enqueued') throw new Error(`not enqueued: ${outcome.status}`);
  return outcome.task.id;
}

describe('claims hold', () => {
  it('stops claims while held, and claims again once released', async () => {
    const { queue, consumer } = await setup();
    const first = await enqueue(queue, 'a.task');
    await consumer.rescan();
    const held = await holdClaims({ queueRoot: directory, holder: 'test', durationMs: 60_000 });
    expect(await consumer.claim()).toBeUndefined();
    // A wait while held is not cut short by the ready task (no busy loop); it ends by the poll interval.
    await consumer.waitForWork({ timeoutMs: 50 });
    expect(await readdir(path.join(directory, 'active'))).toEqual([]);
    await held.release();
    await held.release();
    expect((await consumer.claim())?.id).toBe(first);
  });

  it('ignores a hold whose process is gone, one that expired, and one that cannot be read', async () => {
    const { queue, consumer } = await setup();
    const file = path.join(directory, claimsHoldFileName);
    const nowMs = Date.now();
    const hold = (pid: number, untilMs: number) =>
      JSON.stringify({
        holder: 'assistant backup',
        pid,
        host: os.hostname(),
        since: new Date(nowMs - 1_000).toISOString(),
        until: new Date(untilMs).toISOString(),
      });
    await writeFile(file, hold(deadPid(), nowMs + 60_000));
    expect(await readClaimsHold({ queueRoot: directory, nowMs })).toBeUndefined();
    await writeFile(file, hold(process.pid, nowMs - 1));
    expect(await readClaimsHold({ queueRoot: directory, nowMs })).toBeUndefined();
    // Longer than the longest hold anyone may ask for: it ends at the bound.
    await writeFile(file, hold(process.pid, nowMs + 3_600_000));
    expect(await readClaimsHold({ queueRoot: directory, nowMs: nowMs + 200_000 })).toBeUndefined();
    expect(await readClaimsHold({ queueRoot: directory, nowMs })).toMatchObject({ pid: process.pid });
    await writeFile(file, '{"holder": "trunc');
    const task = await enqueue(queue, 'a.task');
    await consumer.rescan();
    expect((await consumer.claim())?.id).toBe(task);
  });

  it('refuses a second live hold, and takes over a stale one', async () => {
    await setup();
    const held = await holdClaims({ queueRoot: directory, holder: 'first', durationMs: 60_000 });
    await expect(holdClaims({ queueRoot: directory, holder: 'second', durationMs: 1_000 })).rejects.toThrow(
      /already held by first/,
    );
    await held.release();
    await writeFile(
      path.join(directory, claimsHoldFileName),
      JSON.stringify({
        holder: 'crashed backup',
        pid: deadPid(),
        host: os.hostname(),
        since: new Date().toISOString(),
        until: new Date(Date.now() + 60_000).toISOString(),
      }),
    );
    await using second = await holdClaims({ queueRoot: directory, holder: 'second', durationMs: 1_000 });
    expect(second.hold.holder).toBe('second');
  });
});

describe('snapshotQueueFiles', () => {
  it('copies every state once, counts as stats does, drops an active copy of a finished task, releases the hold', async () => {
    const { queue, consumer } = await setup();
    const finished = await enqueue(queue, 'a.done', 1);
    await enqueue(queue, 'a.active', 2);
    await enqueue(queue, 'a.pending', 9);
    await consumer.rescan();
    const claimedFirst = await consumer.claim();
    expect(claimedFirst?.id).toBe(finished);
    if (!claimedFirst) return;
    const activeName = (await readdir(path.join(directory, 'active')))[0] ?? '';
    await consumer.complete(claimedFirst, { ok: true });
    // A finish caught between its two steps: done/x written, active/x@owner not yet removed.
    await writeFile(path.join(directory, 'active', activeName), 'left behind\n');
    await consumer.claim();
    await writeFile(path.join(directory, 'pending', '.editor-scratch.swp'), 'not a task');

    const snapshot = await snapshotQueueFiles({ queueRoot: directory, holder: 'test' });
    const stats = await queue.stats();
    expect(snapshot.counts).toEqual({ pending: 1, active: 1, done: 1, failed: 0 });
    expect(stats.active).toBe(2);
    expect(snapshot.files.map((file) => file.path.split('/')[0]).sort()).toEqual(['active', 'done', 'pending']);
    expect(snapshot.files.some((file) => file.path === `active/${activeName}`)).toBe(false);
    expect(await readClaimsHold({ queueRoot: directory, nowMs: Date.now() })).toBeUndefined();
  });
});
