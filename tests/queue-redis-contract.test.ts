import { randomBytes } from 'node:crypto';
import { describeTaskQueueContract } from '@assistant/queue/testing';
import { openRedisTaskQueue } from '@assistant/queue-redis';
import { afterAll, beforeAll } from 'vitest';
import { type RedisServer, startRedis } from './helpers/redis.ts';

let redis: RedisServer;

beforeAll(async () => {
  redis = await startRedis();
});

afterAll(async () => {
  await redis?.[Symbol.asyncDispose]();
});

describeTaskQueueContract('redis backend', async () => {
  // A prefix of its own per test: the tests share one server, as installs may share one Redis.
  const prefix = `contract-${randomBytes(4).toString('hex')}`;
  return {
    open: (options = {}) =>
      openRedisTaskQueue({
        url: redis.url,
        prefix,
        ...(options.settings ? { settings: options.settings } : {}),
        ...(options.leaseMs === undefined ? {} : { leaseMs: options.leaseMs }),
      }),
    cleanup: async () => {
      const queue = await openRedisTaskQueue({ url: redis.url, prefix });
      const client = queue.client;
      try {
        let cursor = '0';
        do {
          const [next, keys] = await client.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000);
          cursor = next;
          if (keys.length > 0) await client.del(...keys);
        } while (cursor !== '0');
      } finally {
        await queue.close();
      }
    },
  };
});
