// For system.housekeeping: the consolidation markers of notes that are gone.
export { dayIn, pruneConsolidationMarkers } from '@assistant/memory';
export type {
  ChatConsole,
  ChatSteerAction,
  ChatWorkflowRun,
  ChatWorkflowSummary,
  TriggerOutcome,
} from './chat-console.ts';
export { type ConfigCheck, checkConfig, checkPersonas } from './check-config.ts';
export {
  type ClassifyItemPrompt,
  classifyItemNote,
  enqueueClassifyAfterCollect,
  needsClassification,
} from './classify-item-note.ts';
export { type CodeToolsOptions, codeToolNames, codeTools, withCodeMode } from './code-tools.ts';
export type {
  AgentsContext,
  AgentTaskOptions,
  ChatContext,
  CodeActContext,
  HandlerContext,
  HandlerEnqueueOptions,
  HumanLogDetails,
  InstanceContext,
  PlatformContext,
  ScriptsContext,
  SubAgentsFor,
  TaskHandler,
} from './handler-context.ts';
export {
  domainEnqueue,
  findWebhook,
  type InboundEnqueue,
  type InboundEnqueueOptions,
  type InboundEnqueueOutcome,
  importInboundHandler,
  type ListenerCondition,
  type ListenerContext,
  type ListenerFunction,
  type ListenerSpec,
  listenerSpecs,
  type QueueEnqueue,
  type WebhookContext,
  type WebhookFunction,
  type WebhookReply,
  type WebhookRequest,
} from './inbound-handlers.ts';
export {
  type DoctorCheckFunction,
  type EntryTaskResult,
  HandlerLoadError,
  type HandlerReference,
  type HandlerSelection,
  type InboundHandlerInfo,
  type InboundKind,
  IntegrationRegistry,
  integrationConfigSchemas,
  type RuntimeInstance,
  type TaskTypeInfo,
  type TaskTypeKind,
} from './integration-registry.ts';
export { type ListenerApprovalSummary, type ListenerApprovals, listenerApprovals } from './listener-approvals.ts';
export {
  type Installation,
  ignoredPackageIntegrations,
  type LoadedRuntime,
  type LoadRuntimeOptions,
  loadRuntime,
} from './load-runtime.ts';
// memory
export {
  consolidateTaskType,
  enqueueConsolidation,
  type MemoryContacts,
  type MemoryContext,
  type MemoryFacts,
  type MemoryGuidance,
  type MemorySearch,
  type MemoryStoresView,
  type MemoryTasks,
  memoryInstanceOf,
} from './memory-context.ts';
export { type MemoryPromptOptions, memoryPromptContext } from './memory-prompt.ts';
export { type MemoryToolsOptions, memoryToolNames, memoryTools } from './memory-tools.ts';
export { noteTools } from './note-tools.ts';
export { noteTranscript, transcriptsFolder } from './note-transcript.ts';
export { resolvePauseTarget } from './pause-targets.ts';
export { type ScriptToolsOptions, scriptTools } from './script-tools.ts';
