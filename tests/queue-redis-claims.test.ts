// The Redis backend's `{prefix}::claims` hash holds one entry per task a worker holds. A worker killed between a
// task's move (done, failed, back to pending) and the claim's removal used to leave the entry there for good, since
// recovery walks the active lists only (issue 30, item 18).
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { openRedisTaskQueue } from '@assistant/queue-redis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { repoRoot, runNode } from './helpers/node-process.ts';
import { type RedisServer, startRedis } from './helpers/redis.ts';

const claimerScript = path.join(repoRoot, 'tests/fixtures/redis-claimer-killed-after-move.ts');

let redis: RedisServer;

beforeAll(async () => {
  redis = await startRedis();
});

afterAll(async () => {
  await redis?.[Symbol.asyncDispose]();
});

const prefix = () => `test-${randomBytes(4).toString('hex')}`;

describe('Redis claims', () => {
  it.each(['done', 'failed', 'pending'] as const)(
    'a worker SIGKILLed right after moving its task to %s leaves no claim behind, and recovery changes nothing',
    async (outcome) => {
      const shared = prefix();
      const queue = await openRedisTaskQueue({ url: redis.url, prefix: shared });
      try {
        const enqueued = await queue.enqueue({ type: 'redis.claims', payload: { outcome } });
        if (enqueued.status !== 'enqueued') throw new Error(`enqueue refused: ${enqueued.status}`);
        const id = enqueued.task.id;

        const run = await runNode({
          args: [claimerScript, '--url', redis.url, '--prefix', shared, '--outcome', outcome],
        });
        expect(run, run.stderr).toMatchObject({ signal: 'SIGKILL', stdout: `claimed ${id}\n` });
        expect((await queue.get(id))?.state).toBe(outcome);

        // The dead worker's pid is gone on this host, so recovery is free to act on anything it left.
        const report = await queue.recover();
        expect(report).toMatchObject({ requeued: [], failed: [] });
        expect(await queue.client.hgetall(queue.key('claims'))).toEqual({});
        const record = await queue.get(id);
        expect(record?.state).toBe(outcome);
        expect(record?.task?.attempts).toBe(1);
      } finally {
        await queue.close();
      }
    },
  );

  it("recovery removes claims whose task is no longer active, and never a running task's", async () => {
    const shared = prefix();
    const queue = await openRedisTaskQueue({ url: redis.url, prefix: shared });
    const other = await openRedisTaskQueue({ url: redis.url, prefix: shared });
    try {
      const consumer = queue.consumer({ heartbeatMs: 3_600_000, sweepIntervalMs: 3_600_000, pollIntervalMs: 20 });
      await consumer.start();
      const claimOne = async (payload: string) => {
        const outcome = await queue.enqueue({ type: 'redis.sweep', payload });
        if (outcome.status !== 'enqueued') throw new Error(`enqueue refused: ${outcome.status}`);
        const claimed = await consumer.claim();
        expect(claimed?.id).toBe(outcome.task.id);
        return claimed as NonNullable<typeof claimed>;
      };
      const running = await claimOne('running');
      const finished = await claimOne('finished');
      const runningClaim = await queue.client.hget(queue.key('claims'), running.id);
      const finishedClaim = await queue.client.hget(queue.key('claims'), finished.id);
      expect(runningClaim).toContain(consumer.owner.id);
      expect(await consumer.complete(finished, 'ok')).toMatchObject({ state: 'done', recorded: true });
      expect(await queue.client.hexists(queue.key('claims'), finished.id)).toBe(0);

      // What an older version left: the finished task's claim (killed before its HDEL), and the claim of a task
      // since pruned (its id is in no index any more).
      await queue.client.hset(
        queue.key('claims'),
        finished.id,
        finishedClaim ?? '',
        'pruned-task',
        finishedClaim ?? '',
      );
      await other.recover();
      expect(await queue.client.hgetall(queue.key('claims'))).toEqual({ [running.id]: runningClaim });
      expect((await queue.get(running.id))?.state).toBe('active');

      expect(await consumer.complete(running, 'ok')).toMatchObject({ state: 'done', recorded: true });
      expect(await queue.client.hgetall(queue.key('claims'))).toEqual({});
    } finally {
      await Promise.all([queue.close(), other.close()]);
    }
  });

  it('moves a task on, and removes its claim, after Redis lost its scripts (SCRIPT FLUSH) on a live connection', async () => {
    const queue = await openRedisTaskQueue({ url: redis.url, prefix: prefix() });
    try {
      const consumer = queue.consumer({ heartbeatMs: 3_600_000, sweepIntervalMs: 3_600_000, pollIntervalMs: 20 });
      await consumer.start();
      // Each move runs twice: the first on a connection sends the whole script, later ones only its hash.
      for (const outcome of ['done', 'done', 'pending', 'pending'] as const) {
        const enqueued = await queue.enqueue({ type: 'redis.flushed', payload: randomBytes(4).toString('hex') });
        if (enqueued.status !== 'enqueued') throw new Error(`enqueue refused: ${enqueued.status}`);
        const claimed = await consumer.claim();
        expect(claimed?.id).toBe(enqueued.task.id);
        await queue.client.script('FLUSH');
        if (outcome === 'done') {
          expect(await consumer.complete(claimed as NonNullable<typeof claimed>, 'ok')).toMatchObject({
            recorded: true,
          });
        } else {
          expect(await consumer.fail(claimed as NonNullable<typeof claimed>, new Error('again'))).toBe('retrying');
        }
        expect((await queue.get(enqueued.task.id))?.state).toBe(outcome);
        expect(await queue.client.hgetall(queue.key('claims'))).toEqual({});
      }
    } finally {
      await queue.close();
    }
  });

  it("a move refused because the task was taken over keeps the new holder's claim", async () => {
    const leaseMs = 60_000;
    const shared = prefix();
    const queue = await openRedisTaskQueue({ url: redis.url, prefix: shared, leaseMs });
    try {
      const timers = { heartbeatMs: 3_600_000, sweepIntervalMs: 3_600_000, pollIntervalMs: 20 };
      const stalled = queue.consumer(timers);
      const next = queue.consumer(timers);
      await stalled.start();
      await next.start();
      const outcome = await queue.enqueue({ type: 'redis.taken' });
      if (outcome.status !== 'enqueued') throw new Error(`enqueue refused: ${outcome.status}`);
      const first = await stalled.claim();
      expect(first?.id).toBe(outcome.task.id);
      // The stalled worker's heartbeat two leases late: the queue's sweep takes its task, and another worker claims it.
      const record = JSON.parse((await queue.client.hget(queue.key('workers'), stalled.owner.id)) ?? '{}');
      const heartbeatAt = new Date(Date.now() - 2 * leaseMs).toISOString();
      await queue.client.hset(queue.key('workers'), stalled.owner.id, JSON.stringify({ ...record, heartbeatAt }));
      expect((await queue.recover()).requeued).toEqual([outcome.task.id]);
      const second = await next.claim();
      expect(second?.id).toBe(outcome.task.id);
      const nextClaim = await queue.client.hget(queue.key('claims'), outcome.task.id);
      expect(nextClaim).toContain(next.owner.id);

      expect(await stalled.complete(first as NonNullable<typeof first>, 'late')).toMatchObject({ recorded: false });
      expect(await queue.client.hgetall(queue.key('claims'))).toEqual({ [outcome.task.id]: nextClaim });
      expect(await next.complete(second as NonNullable<typeof second>, 'ok')).toMatchObject({ recorded: true });
      expect(await queue.client.hgetall(queue.key('claims'))).toEqual({});
    } finally {
      await queue.close();
    }
  });

  it('a parked mark lives in the claim: set and cleared by its holder only, gone with the claim and with recovery', async () => {
    const leaseMs = 60_000;
    const shared = prefix();
    const queue = await openRedisTaskQueue({ url: redis.url, prefix: shared, leaseMs });
    try {
      const timers = { heartbeatMs: 3_600_000, sweepIntervalMs: 3_600_000, pollIntervalMs: 20 };
      const holder = queue.consumer(timers);
      const other = queue.consumer(timers);
      await holder.start();
      await other.start();
      const enqueue = async (type: string) => {
        const outcome = await queue.enqueue({ type });
        if (outcome.status !== 'enqueued') throw new Error(`enqueue refused: ${outcome.status}`);
        return outcome.task.id;
      };
      const claimOf = async (id: string) =>
        JSON.parse((await queue.client.hget(queue.key('claims'), id)) ?? 'null') as Record<string, unknown> | null;

      const doneId = await enqueue('redis.parked-done');
      const done = await holder.claim();
      expect(done?.id).toBe(doneId);
      const claimed = done as NonNullable<typeof done>;
      await holder.park(claimed);
      expect(await claimOf(doneId)).toMatchObject({ owner: { id: holder.owner.id }, parkedAt: expect.any(String) });
      await holder.unpark(claimed);
      expect(await claimOf(doneId)).not.toHaveProperty('parkedAt');
      await holder.park(claimed);
      expect(await holder.complete(claimed, 'ok')).toMatchObject({ recorded: true });
      expect(await queue.client.hgetall(queue.key('claims'))).toEqual({});

      // A holder whose task was taken over cannot mark the claim of the task's next holder.
      const takenId = await enqueue('redis.parked-taken');
      const first = (await holder.claim()) as NonNullable<Awaited<ReturnType<typeof holder.claim>>>;
      expect(first.id).toBe(takenId);
      await holder.park(first);
      const record = JSON.parse((await queue.client.hget(queue.key('workers'), holder.owner.id)) ?? '{}');
      const heartbeatAt = new Date(Date.now() - 2 * leaseMs).toISOString();
      await queue.client.hset(queue.key('workers'), holder.owner.id, JSON.stringify({ ...record, heartbeatAt }));
      expect(await queue.recover()).toMatchObject({ requeued: [takenId] });
      const recovered = await queue.get(takenId);
      expect(recovered?.task?.attempts).toBe(0);
      expect(recovered?.task?.history.map((attempt) => attempt.error.type)).toEqual(['WorkerDiedWhileWaiting']);
      const second = await other.claim();
      expect(second?.id).toBe(takenId);
      expect(await claimOf(takenId)).not.toHaveProperty('parkedAt');
      await expect(holder.unpark(first)).rejects.toThrow(/no longer this worker's/);
      await expect(holder.park(first)).rejects.toThrow(/no longer this worker's/);
      expect(await claimOf(takenId)).toMatchObject({ owner: { id: other.owner.id } });
      expect(await claimOf(takenId)).not.toHaveProperty('parkedAt');
      await other.complete(second as NonNullable<typeof second>, 'ok');
      expect(await queue.client.hgetall(queue.key('claims'))).toEqual({});
    } finally {
      await queue.close();
    }
  });
});
