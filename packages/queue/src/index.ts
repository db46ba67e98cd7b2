// The queue's public surface: the interfaces, the file backend behind them, and what tasks are made of. The file
// layout (paths, names, moves, rewrites, quarantine) is private to this package; tests/queue-boundary.test.ts
// fails when code outside it reaches for it.

export { backoffDelayMs } from './backoff.ts';
export {
  type BulkTaskAction,
  type BulkTaskActionOptions,
  type BulkTaskActionResult,
  bulkTaskActions,
  runBulkTaskAction,
} from './bulk-task-action.ts';
export {
  type ClaimsHold,
  claimsHoldFileName,
  type HeldClaims,
  type HoldClaimsOptions,
  holdClaims,
  maxClaimsHoldMs,
  readClaimsHold,
} from './claims-hold.ts';
export { durationExamples, formatDuration, parseDuration } from './duration.ts';
export { resultProblem } from './file-task-consumer.ts';
export { newWorkerOwner } from './file-worker-directory.ts';
export { canonicalJson, taskFingerprint } from './fingerprint.ts';
export {
  jsonTextNestingDepth,
  maxTaskNestingDepth,
  valueNestingDepth,
  yamlTextNestingDepth,
} from './input-limits.ts';
export {
  type ClaimedTask,
  type ClaimOptions,
  type EnqueueOptions,
  type EnqueueOutcome,
  emptyQueueStats,
  type FailOutcome,
  type ListOptions,
  type PruneReport,
  type QueueLogger,
  type QueueMaintenance,
  type QueueSettings,
  type QueueStats,
  type RecoveryReport,
  type ResultOutcome,
  type TaskConsumer,
  type TaskConsumerOptions,
  type TaskEntry,
  type TaskEvent,
  type TaskEventKind,
  type TaskEvents,
  type TaskName,
  type TaskQueue,
  type TaskRecord,
  type TaskState,
  taskStates,
  type WaitForWorkOptions,
  type WorkerDirectory,
  type WorkerInfo,
} from './interfaces.ts';
export { repeatMaintenance } from './maintenance.ts';
export { type MigrateReport, type MigrateTasksOptions, migrateTasks } from './migrate-tasks.ts';
export { type CheckedEnqueue, checkEnqueue, newTask } from './new-task.ts';
export { type FileTaskQueueOptions, openFileTaskQueue } from './open-file-task-queue.ts';
export { decideAfterWorkerDied, poisonWorkerDeaths, type WorkerDeathDecision } from './poison.ts';
export {
  defaultPolicy,
  defaultRetention,
  durationSchema,
  type QueueConfig,
  type QueuePolicy,
  queueSchema,
} from './queue-config.ts';
export { patternMatches, resolvePolicy } from './resolve-policy.ts';
export {
  type QueueSnapshot,
  QueueSnapshotBusyError,
  type QueueSnapshotFile,
  type SnapshotQueueFilesOptions,
  snapshotQueueFiles,
} from './snapshot-queue-files.ts';
export {
  attemptOf,
  decideFailure,
  type FailureDecision,
  toTaskError,
  workerDiedError,
  workerDiedWhileWaitingError,
} from './task-attempts.ts';
export { DelayedError, outageDelay, RetryableError, UnrecoverableError } from './task-errors.ts';
export {
  checkTaskRecord,
  type JsonValue,
  jsonValueSchema,
  type ParseTaskFileOptions,
  parseNamedTaskFile,
  parseTaskFile,
  type Task,
  type TaskAttempt,
  type TaskError,
  type TaskOwner,
  type TaskSource,
  taskFileData,
  taskSources,
} from './task-file.ts';
export { newTaskId, taskIdPattern, taskIdTimeMs } from './task-id.ts';
export { isTaskType, taskTypePattern } from './task-name.ts';
