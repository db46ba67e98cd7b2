// What an integration's handlers import. Re-exports only: the code lives in the actions, the integration host, the
// script sandbox, the agent, the LLM layer, the outbound rules and the queue.

export {
  ActionNotTakenError,
  type ActPayload,
  actPayloadSchema,
  approvalRendering,
  describeAction,
  describeApproval,
  type EnqueueActionsResult,
  expireApprovals,
  fitRendering,
  type PlannedAction,
  type RunActionOnceResult,
  renderTemplate,
  runActionOnce,
} from '@assistant/actions';
export {
  type AgentResult,
  defineTool,
  type SteerableHandle,
  startAgent,
  type Tool,
  type ToolContext,
  type ToolTier,
} from '@assistant/agent';
export type { AutomationMatch, ItemFacts, ResolvedAction } from '@assistant/automations';
export type { Secret } from '@assistant/config';
export type {
  AgentTaskOptions,
  ChatConsole,
  ChatContext,
  ChatWorkflowSummary,
  HandlerContext,
  HandlerEnqueueOptions,
  HumanLogDetails,
  InboundEnqueue,
  InboundEnqueueOptions,
  InboundEnqueueOutcome,
  InstanceContext,
  ListenerApprovalSummary,
  ListenerApprovals,
  ListenerCondition,
  ListenerContext,
  ListenerFunction,
  PlatformContext,
  ScriptsContext,
  TaskHandler,
  WebhookContext,
  WebhookFunction,
  WebhookReply,
  WebhookRequest,
} from '@assistant/integration-host';
// memory
export {
  type ClassifyItemPrompt,
  classifyItemNote,
  dayIn,
  enqueueClassifyAfterCollect,
  enqueueConsolidation,
  type MemoryContext,
  type MemoryPromptOptions,
  type MemoryToolsOptions,
  memoryPromptContext,
  memoryToolNames,
  memoryTools,
  needsClassification,
  noteTools,
  pruneConsolidationMarkers,
  withCodeMode,
} from '@assistant/integration-host';
export {
  type ChatMessage,
  type ChatModel,
  Conversation,
  classificationAnswerSchema,
  classificationQuestions,
  type FencedText,
  fenceUntrusted,
  findModelUnavailable,
  ModelUnavailableError,
} from '@assistant/llm';
export {
  isPublicAddress,
  type LookupAll,
  OutboundError,
  type OutboundPolicy,
  publicHttpsOnly,
  publicWebOnly,
  type SafeFetchOptions,
  type SafeFetchResult,
  safeFetch,
} from '@assistant/outbound';
export {
  DelayedError,
  type JsonValue,
  outageDelay,
  RetryableError,
  type Task,
  UnrecoverableError,
} from '@assistant/queue';
export { runScript, SandboxUnavailableError, ScriptFailedError, ScriptTimeoutError } from '@assistant/sandbox';
