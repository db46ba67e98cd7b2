import { mkdtemp, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FileTaskConsumer } from './file-task-consumer.ts';
import { FileTaskQueue } from './file-task-queue.ts';
import type { ClaimedTask } from './interfaces.ts';
import { defaultPolicy } from './queue-config.ts';

let directory: string;
const consumers: FileTaskConsumer[] = [];

beforeEach(async () => {
  directory = await mkdtemp(path.join(os.tmpdir(), 'assistant-parked-'));
});
afterEach(async () => {
  for (const consumer of consumers.splice(0)) await consumer.close();
  await rm(directory, { recursive: true, force: true });
});

async function setup() {
  const logs: string[] = [];
  const queue = await FileTaskQueue.open({
    directory,
    settings: {
      policies: { defaults: { ...defaultPolicy, backoff: { type: 'fixed', delayMs: 0, maxMs: 0 } }, overrides: {} },
    },
    logger: { info: (message) => logs.push(`info: ${message}`), warn: (message) => logs.push(`warn: ${message}`) },
  });
  return { queue, logs };
}

async function consumerOf(queue: FileTaskQueue): Promise<FileTaskConsumer> {
  const consumer = new FileTaskConsumer(queue, { pollIntervalMs: 50 });
  consumers.push(consumer);
  await consumer.start();
  return consumer;
}

async function claimOne(consumer: FileTaskConsumer): Promise<ClaimedTask> {
  const claimed = await consumer.claim();
  if (!claimed) throw new Error('expected a task to claim');
  return claimed;
}

const parked = () => readdir(path.join(directory, 'parked'));

describe('FileTaskConsumer parked claims', () => {
  it('writes a marker named as the claim in active/, and removes it on unpark and when the task leaves active/', async () => {
    const { queue } = await setup();
    await queue.enqueue({ type: 'park.done' });
    await queue.enqueue({ type: 'park.retry' });
    await queue.enqueue({ type: 'park.release' });
    const consumer = await consumerOf(queue);
    const done = await claimOne(consumer);
    await consumer.park(done);
    const [activeName] = await readdir(path.join(directory, 'active'));
    expect(await parked()).toEqual([activeName]);
    expect(await readFile(path.join(directory, 'parked', activeName as string), 'utf8')).toMatch(/^parkedAt: /);
    await consumer.unpark(done);
    expect(await parked()).toEqual([]);
    await consumer.park(done);
    await consumer.complete(done, 'ok');
    expect(await parked()).toEqual([]);
    const retried = await claimOne(consumer);
    await consumer.park(retried);
    await consumer.fail(retried, new Error('again'));
    const released = await claimOne(consumer);
    await consumer.park(released);
    await consumer.release(released);
    expect(await parked()).toEqual([]);
    expect(await readdir(path.join(directory, 'tmp'))).toEqual([]);
  });

  it('recovery removes the marker of a parked claim it returns, and the markers whose claim has gone', async () => {
    const { queue, logs } = await setup();
    const outcome = await queue.enqueue({ type: 'park.recover' });
    if (outcome.status !== 'enqueued') throw new Error('expected the task to be enqueued');
    const dying = await consumerOf(queue);
    const claimed = await claimOne(dying);
    await dying.park(claimed);
    // A marker a worker left when it stopped between a task leaving active/ and the marker's removal.
    const orphan = 'parked-orphan-of-a-finished-claim@w-gone.yaml';
    await writeFile(path.join(directory, 'parked', orphan), 'parkedAt: 2026-01-01T00:00:00.000Z\n');
    // A live worker's parked claim keeps its marker.
    await queue.enqueue({ type: 'park.live' });
    const live = await consumerOf(queue);
    const liveClaim = await claimOne(live);
    await live.park(liveClaim);
    const liveMarker = (await parked()).find((name) => name.includes('park.live'));
    expect(liveMarker).toBeDefined();
    await dying.close();
    const report = await queue.recover();
    expect(report.requeued).toEqual([outcome.task.id]);
    expect(await parked()).toEqual([liveMarker]);
    expect(logs.some((line) => /park\.recover\) returned to pending: worker died: .* waiting/.test(line))).toBe(true);
    // The live claim under a recovery pass's token name still counts as its claim.
    const [liveActive] = await readdir(path.join(directory, 'active'));
    await rename(
      path.join(directory, 'active', liveActive as string),
      path.join(directory, 'active', (liveActive as string).replace(/\.yaml$/, '+0123abcd.yaml')),
    );
    await queue.recover({ skipOwner: live.owner.id });
    expect(await parked()).toEqual([liveMarker]);
  });

  it('counts the death of a claim that was never parked even when a marker of another claim of the task is left', async () => {
    const { queue } = await setup();
    const outcome = await queue.enqueue({ type: 'park.stale' });
    if (outcome.status !== 'enqueued') throw new Error('expected the task to be enqueued');
    const first = await consumerOf(queue);
    const claimed = await claimOne(first);
    await first.park(claimed);
    const [marker] = await parked();
    await first.fail(claimed, new Error('retry'));
    // As if the removal after the move had been lost: the marker of the claim before is back.
    await writeFile(path.join(directory, 'parked', marker as string), 'parkedAt: 2026-01-01T00:00:00.000Z\n');
    const second = await consumerOf(queue);
    await claimOne(second);
    await second.close();
    await queue.recover();
    const record = await queue.get(outcome.task.id);
    expect(record?.task?.history.map((attempt) => attempt.error.type)).toEqual(['Error', 'WorkerDied']);
    expect(record?.task?.attempts).toBe(2);
    expect(await parked()).toEqual([]);
  });
});
