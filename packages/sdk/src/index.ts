// What an integration's handlers import. Re-exports only: the code lives in the runtime and the queue.
export { DelayedError, type JsonValue, RetryableError, type Task, UnrecoverableError } from '@assistant/queue';
export {
  type ActPayload,
  type AutomationMatch,
  actPayloadSchema,
  type EnqueueActionsResult,
  expireApprovals,
  fenceUntrusted,
  type HandlerContext,
  type HandlerEnqueueOptions,
  type HumanLogDetails,
  type InstanceContext,
  type ItemFacts,
  type PlannedAction,
  type PlatformContext,
  renderTemplate,
  runScript,
  ScriptFailedError,
  ScriptTimeoutError,
  type TaskHandler,
} from '@assistant/runtime';
