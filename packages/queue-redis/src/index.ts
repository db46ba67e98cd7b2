// The queue's second backend: TaskQueue, TaskConsumer, TaskEvents and WorkerDirectory on BullMQ over Redis (or
// Valkey). How tasks map onto BullMQ is in redis-task-queue.ts and docs/queue.md ("Redis backend").

export { type OpenRedisTaskQueueOptions, openRedisTaskQueue, redisDisplayUrl } from './open-redis-task-queue.ts';
export { RedisTaskQueue } from './redis-task-queue.ts';
