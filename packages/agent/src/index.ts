export { summaryPrefix } from './compression/compress-messages.ts';
export { estimateTokensByCharacters } from './compression/estimate-tokens.ts';
export type {
  AgentEvent,
  AgentEventPayload,
  AgentEventSource,
  PausePoint,
  SteeringAction,
} from './loop/agent-event.ts';
export type {
  AgentOptions,
  AgentResult,
  AgentResultStatus,
  CompressionOptions,
  OwnerWait,
} from './loop/agent-options.ts';
export { startAgent } from './loop/start-agent.ts';
export type { Clarification, HandleStatus, Notification, SteerableHandle } from './steering/steerable-handle.ts';
export { steeringMessages } from './steering/steering-messages.ts';
export { defineTool, type Tool, type ToolContext, type ToolDefinition, type ToolTier } from './tools/define-tool.ts';
export type { ToolGate, ToolGateDecision, ToolGateRequest } from './tools/tool-gate.ts';
export type { TranscriptMeta, TranscriptStore } from './transcript/transcript-store.ts';
