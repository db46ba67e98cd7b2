import { randomBytes } from 'node:crypto';
import { AssistantError } from '@assistant/errors';
import { openRedisTaskQueue } from '@assistant/queue-redis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from './helpers/free-port.ts';
import { type RedisServer, redisInstallCommand, startRedis } from './helpers/redis.ts';

let redis: RedisServer;

beforeAll(async () => {
  redis = await startRedis();
});

afterAll(async () => {
  await redis?.[Symbol.asyncDispose]();
});

const prefix = () => `test-${randomBytes(4).toString('hex')}`;

describe('startRedis', () => {
  it('says how to install Redis when redis-server is not installed', async () => {
    await expect(startRedis({ binaryDirectories: ['/nonexistent-assistant-test'] })).rejects.toThrow(
      `install Redis: ${redisInstallCommand}`,
    );
    expect(redisInstallCommand).toBe('apt-get install -y --no-install-recommends redis-server');
  });
});

describe('openRedisTaskQueue', () => {
  it('fails with an AssistantError naming the URL, never the password, when Redis cannot be reached', async () => {
    const port = await freePort();
    const error = await openRedisTaskQueue({
      url: `redis://127.0.0.1:${port}`,
      password: 'hunter2-secret',
      connectTimeoutMs: 2_000,
    }).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(AssistantError);
    expect(error).toMatchObject({ code: 'QUEUE_UNAVAILABLE' });
    expect((error as AssistantError).message).toContain(`redis://127.0.0.1:${port}`);
    expect((error as AssistantError).hint).toMatch(/redis-server/);
    expect(`${(error as Error).message} ${(error as AssistantError).hint}`).not.toContain('hunter2');
  });

  it('keeps a password given in the URL out of locations', async () => {
    const queue = await openRedisTaskQueue({ url: redis.url.replace('//', '//:unused@'), prefix: prefix() });
    try {
      const outcome = await queue.enqueue({ type: 'redis.location' });
      expect(outcome.status === 'enqueued' && outcome.location).toMatch(
        new RegExp(`^redis://127\\.0\\.0\\.1:${redis.port}/test-[0-9a-f]+/redis\\.location/[0-9A-Za-z]{26}$`),
      );
      expect(JSON.stringify(outcome)).not.toContain('unused');
    } finally {
      await queue.close();
    }
  });
});

describe('RedisTaskConsumer', () => {
  it('never lets two consumers claim one task: each of many tasks completes exactly once', async () => {
    const shared = prefix();
    const producer = await openRedisTaskQueue({ url: redis.url, prefix: shared });
    const first = await openRedisTaskQueue({ url: redis.url, prefix: shared });
    const second = await openRedisTaskQueue({ url: redis.url, prefix: shared });
    try {
      const ids = new Set<string>();
      for (let index = 0; index < 200; index += 1) {
        const outcome = await producer.enqueue({
          type: index % 2 === 0 ? 'redis.even' : 'redis.odd',
          payload: index,
          priority: index % 10,
        });
        if (outcome.status === 'enqueued') ids.add(outcome.task.id);
      }
      expect(ids.size).toBe(200);
      const completions: string[] = [];
      const drain = async (queue: typeof first) => {
        const consumer = queue.consumer({ pollIntervalMs: 20 });
        await consumer.start();
        try {
          for (;;) {
            const claimed = await consumer.claim();
            if (!claimed) {
              if (completions.length >= ids.size) return;
              await consumer.waitForWork({ timeoutMs: 20 });
              if ((await producer.stats()).pending === 0 && (await producer.stats()).active === 0) return;
              continue;
            }
            completions.push(claimed.id);
            const outcome = await consumer.complete(claimed, { by: consumer.owner.id });
            expect(outcome).toMatchObject({ state: 'done', recorded: true });
          }
        } finally {
          await consumer.close();
        }
      };
      await Promise.all([drain(first), drain(second)]);
      expect(completions).toHaveLength(200);
      expect(new Set(completions)).toEqual(ids);
      expect(await producer.stats()).toMatchObject({ pending: 0, active: 0, done: 200, failed: 0 });
    } finally {
      await Promise.all([producer.close(), first.close(), second.close()]);
    }
  });

  it("sweeps through recover() without taking its own claims while its heartbeat is late; the queue's sweep takes them", async () => {
    const leaseMs = 60_000;
    const queue = await openRedisTaskQueue({ url: redis.url, prefix: prefix(), leaseMs });
    try {
      // No timer of its own beats or sweeps during the test: the heartbeat stays as the test sets it.
      const consumer = queue.consumer({ heartbeatMs: 3_600_000, sweepIntervalMs: 3_600_000, pollIntervalMs: 20 });
      await consumer.start();
      // The worker's heartbeat two leases late, as it is for everyone right after Redis was down for that long.
      const lateHeartbeat = async () => {
        const record = JSON.parse((await queue.client.hget(queue.key('workers'), consumer.owner.id)) ?? '{}');
        const heartbeatAt = new Date(Date.now() - 2 * leaseMs).toISOString();
        await queue.client.hset(queue.key('workers'), consumer.owner.id, JSON.stringify({ ...record, heartbeatAt }));
      };
      const claimOne = async () => {
        const outcome = await queue.enqueue({ type: 'redis.late', payload: randomBytes(4).toString('hex') });
        if (outcome.status !== 'enqueued') throw new Error(`enqueue refused: ${outcome.status}`);
        const claimed = await consumer.claim();
        expect(claimed?.id).toBe(outcome.task.id);
        return claimed as NonNullable<typeof claimed>;
      };

      const kept = await claimOne();
      await lateHeartbeat();
      expect(await queue.workers.liveness(consumer.owner)).toBe('gone');
      expect((await consumer.recover()).requeued).toEqual([]);
      expect(await consumer.complete(kept, 'kept')).toMatchObject({ state: 'done', recorded: true });

      // What the housekeeping task did before: recovery through the queue, which knows nothing of this consumer.
      const taken = await claimOne();
      await lateHeartbeat();
      expect((await queue.recover()).requeued).toEqual([taken.id]);
      expect(await consumer.complete(taken, 'lost')).toMatchObject({ state: 'done', recorded: false });
    } finally {
      await queue.close();
    }
  });

  it('leaves no open handles after close(): queue, consumer and event stream', async () => {
    const queue = await openRedisTaskQueue({ url: redis.url, prefix: prefix() });
    const consumer = queue.consumer({ pollIntervalMs: 20 });
    await consumer.start();
    const events = queue.events();
    const seen: string[] = [];
    events.subscribe((event) => seen.push(event.kind));
    await queue.enqueue({ type: 'redis.handles' });
    await expect.poll(() => seen.includes('added'), { timeout: 10_000 }).toBe(true);
    await queue.close();
    // Every socket this queue opened is closed: none to this test's Redis is left among the process's handles (the
    // file's own server is the only other user of that port, and it holds no client socket here).
    await expect
      .poll(
        () =>
          (process as unknown as { _getActiveHandles(): unknown[] })
            ._getActiveHandles()
            .filter((handle) => (handle as { remotePort?: number }).remotePort === redis.port).length,
        { timeout: 10_000 },
      )
      .toBe(0);
  });
});
