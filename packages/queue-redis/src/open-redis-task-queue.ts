import { AssistantError } from '@assistant/errors';
import type { QueueLogger, QueueSettings, TaskQueue } from '@assistant/queue';
import { Redis } from 'ioredis';
import { RedisTaskQueue } from './redis-task-queue.ts';

export interface OpenRedisTaskQueueOptions {
  /** `redis://host:port[/db]` (or `rediss://` for TLS). A password in the URL works but is better given apart. */
  url: string;
  /** Kept out of every message and location. */
  password?: string;
  /** What every key starts with, so several installs can share one Redis. @default 'assistant' */
  prefix?: string;
  settings?: QueueSettings;
  logger?: QueueLogger;
  /** How long a worker's heartbeat, and its lock on a claimed task, holds. @default 60_000 */
  leaseMs?: number;
  /** How long to wait for Redis to answer at open. @default 5_000 */
  connectTimeoutMs?: number;
}

/** The URL as a person may see it: scheme, host, port and database, never a user name or password. */
export function redisDisplayUrl(url: string): string {
  try {
    const parsed = new URL(url);
    const database = parsed.pathname.replace(/^\/+/, '');
    return `${parsed.protocol}//${parsed.hostname}${parsed.port ? `:${parsed.port}` : ''}${database ? `/${database}` : ''}`;
  } catch {
    return 'redis://(an URL that does not parse)';
  }
}

/**
 * Opens the queue on Redis, resolving once Redis answers PING. An unreachable Redis fails with an AssistantError
 * naming the URL (without credentials) and what to check, instead of retrying forever as ioredis would.
 */
export async function openRedisTaskQueue(options: OpenRedisTaskQueueOptions): Promise<TaskQueue & RedisTaskQueue> {
  const displayUrl = redisDisplayUrl(options.url);
  const connectTimeoutMs = options.connectTimeoutMs ?? 5_000;
  const connections = new Set<Redis>();
  const connect = (): Redis => {
    let ready = false;
    const client = new Redis(options.url, {
      ...(options.password === undefined ? {} : { password: options.password }),
      // BullMQ requires it: a command waits for the connection to come back instead of failing after N retries.
      maxRetriesPerRequest: null,
      connectTimeout: connectTimeoutMs,
      lazyConnect: true,
      // Give up at once on a Redis that never answered (open reports it); reconnect to one that did.
      retryStrategy: (times) => (ready ? Math.min(times * 200, 2_000) : null),
    });
    client.on('ready', () => {
      ready = true;
    });
    // Errors surface through the commands that fail; an unhandled 'error' event would only crash the process.
    client.on('error', () => {});
    client.on('end', () => connections.delete(client));
    connections.add(client);
    return client;
  };
  const client = connect();
  try {
    await client.connect();
    await client.ping();
  } catch (error) {
    client.disconnect();
    const reason = scrub((error as Error).message, options.password);
    throw new AssistantError('QUEUE_UNAVAILABLE', `cannot reach Redis at ${displayUrl}: ${reason}`, {
      hint: 'start redis-server (or Valkey) there, or correct queue.redis.url; a wrong password fails here too',
    });
  }
  const queue = new RedisTaskQueue({
    client,
    connect: () => {
      const reader = connect();
      reader.connect().catch(() => {});
      return reader;
    },
    displayUrl,
    ...(options.prefix === undefined ? {} : { prefix: options.prefix }),
    ...(options.settings === undefined ? {} : { settings: options.settings }),
    ...(options.logger === undefined ? {} : { logger: options.logger }),
    ...(options.leaseMs === undefined ? {} : { leaseMs: options.leaseMs }),
  });
  const closeQueue = queue.close.bind(queue);
  let closing: Promise<void> | undefined;
  // close() ends every connection this queue opened, the shared one last, so nothing keeps the process alive.
  queue.close = () => {
    closing ??= (async () => {
      await closeQueue();
      for (const connection of [...connections]) {
        if (connection === client) continue;
        connection.disconnect();
      }
      await client.quit().catch(() => client.disconnect());
    })();
    return closing;
  };
  return queue;
}

function scrub(message: string, password: string | undefined): string {
  return password ? message.split(password).join('***') : message;
}
