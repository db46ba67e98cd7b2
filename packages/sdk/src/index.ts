// What an integration's handlers import. Re-exports only: the code lives in the runtime and the queue.
export { DelayedError, type JsonValue, RetryableError, type Task, UnrecoverableError } from '@assistant/queue';
export type {
  HandlerContext,
  HandlerEnqueueOptions,
  HumanLogDetails,
  InstanceContext,
  PlatformContext,
  TaskHandler,
} from '@assistant/runtime';
