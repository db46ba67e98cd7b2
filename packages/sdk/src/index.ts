// What an integration's handlers import. Re-exports only: the code lives in the runtime, the agent, the LLM layer
// and the queue.
export {
  type AgentResult,
  defineTool,
  type SteerableHandle,
  startAgent,
  type Tool,
  type ToolContext,
} from '@assistant/agent';
export { type ChatMessage, type ChatModel, Conversation } from '@assistant/llm';
export { DelayedError, type JsonValue, RetryableError, type Task, UnrecoverableError } from '@assistant/queue';
export {
  ActionNotTakenError,
  type ActPayload,
  type AgentTaskOptions,
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
  type RunActionOnceResult,
  renderTemplate,
  runActionOnce,
  runScript,
  SandboxUnavailableError,
  ScriptFailedError,
  type ScriptsContext,
  ScriptTimeoutError,
  type TaskHandler,
} from '@assistant/runtime';
