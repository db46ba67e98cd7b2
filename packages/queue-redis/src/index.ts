import { AssistantError } from '@assistant/errors';
import type { QueueLogger, QueueSettings, TaskQueue } from '@assistant/queue';

export interface RedisTaskQueueOptions {
  url: string;
  password?: string;
  prefix?: string;
  settings?: QueueSettings;
  logger?: QueueLogger;
  leaseMs?: number;
}

/** Placeholder until the backend lands (helper "redis" replaces this file). */
export function openRedisTaskQueue(options: RedisTaskQueueOptions): Promise<TaskQueue> {
  return Promise.reject(new AssistantError('UNAVAILABLE', `the redis backend is not built yet (${options.url})`));
}
