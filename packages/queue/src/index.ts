export { backoffDelayMs } from './backoff.ts';
export { type Durability, syncDirectory, type WriteFileDurablyOptions, writeFileDurably } from './durable-write.ts';
export { canonicalJson, taskFingerprint } from './fingerprint.ts';
export {
  jsonTextNestingDepth,
  maxTaskNestingDepth,
  valueNestingDepth,
  yamlTextNestingDepth,
} from './input-limits.ts';
export {
  type ClaimedTask,
  type FailOutcome,
  QueueConsumer,
  type QueueConsumerOptions,
  type ResultOutcome,
  toTaskError,
} from './queue-consumer.ts';
export { isScratchName, type QueuePaths, queuePaths, reasonSuffix, type TaskState, taskStates } from './queue-paths.ts';
export { patternMatches, resolvePolicy } from './resolve-policy.ts';
export { DelayedError, RetryableError, UnrecoverableError } from './task-errors.ts';
export {
  type JsonValue,
  jsonValueSchema,
  type ParseTaskFileOptions,
  parseTaskFile,
  stringifyTask,
  type Task,
  type TaskAttempt,
  type TaskError,
  TaskFileError,
  type TaskOwner,
  type TaskSource,
  taskFileData,
  taskSources,
} from './task-file.ts';
export { newTaskId, taskIdPattern, taskIdTimeMs } from './task-id.ts';
export {
  decodeTaskName,
  encodeTaskName,
  formatNameTimestamp,
  isTaskType,
  type TaskName,
  taskTypePattern,
} from './task-name.ts';
export {
  type EnqueueOptions,
  type EnqueueOutcome,
  type ListOptions,
  type PruneReport,
  type QueueLogger,
  type QueueSettings,
  type QueueStats,
  type RecoveryReport,
  type TaskEntry,
  TaskQueue,
  type TaskQueueOptions,
  type TaskRecord,
} from './task-queue.ts';
export { newWorkerOwner, type OwnerState, pidAlive, type WorkerRecord, WorkerRegistry } from './worker-registry.ts';
