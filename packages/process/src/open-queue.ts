import type { LoadedConfig } from '@assistant/config';
import { openFileTaskQueue, type QueueLogger, type TaskQueue } from '@assistant/queue';

export interface OpenQueueOptions {
  config: Pick<LoadedConfig, 'queue' | 'paths'>;
  logger?: QueueLogger;
  /** How long a worker's heartbeat holds. @default `queue.lease` */
  leaseMs?: number;
}

/**
 * The queue `config.yaml` names: the file backend under data/queue (the default), or BullMQ on Redis. The Redis
 * backend and its libraries are loaded only when configured, so a file-backed install never pays for them.
 */
export async function openQueue(options: OpenQueueOptions): Promise<TaskQueue> {
  const { config } = options;
  const common = {
    settings: config.queue,
    ...(options.logger ? { logger: options.logger } : {}),
    leaseMs: options.leaseMs ?? config.queue.leaseMs,
  };
  if (config.queue.backend === 'redis') {
    const { openRedisTaskQueue } = await import('@assistant/queue-redis');
    const { url, prefix, password } = config.queue.redis;
    return openRedisTaskQueue({ url, prefix, ...(password ? { password: password.reveal() } : {}), ...common });
  }
  return openFileTaskQueue({ directory: config.paths.queue, dataDirectory: config.paths.dataDir, ...common });
}
