export { type ModelCapabilities, modelCapabilities } from './capabilities.ts';
export {
  type ChatDelta,
  type ChatMessage,
  type ChatModel,
  type ChatOptions,
  type ChatRequest,
  type ChatResponse,
  type ImagePart,
  type ProviderKind,
  providerKinds,
  type ReasoningBlock,
  type TokenUsage,
  type ToolCall,
  type ToolSpec,
} from './chat-types.ts';
export { Conversation, type StructuredOptions } from './conversation.ts';
export {
  LlmAbortedError,
  LlmContextTooLongError,
  LlmOutputError,
  LlmRequestError,
  LlmResponseMalformedError,
  LlmSchemaUnsupportedError,
} from './llm-errors.ts';
export { createLlmProfiles, type LlmProfiles, type LlmProfilesOptions } from './llm-profiles.ts';
export {
  findModelUnavailable,
  type ModelBreakerState,
  type ModelProfileLimits,
  type ModelProfileStatus,
  ModelUnavailableError,
} from './model-gate.ts';
export { createOpenAiChatModel, type OpenAiChatModelOptions, retryDelay } from './openai-chat-model.ts';
export { classificationAnswerSchema, classificationQuestions } from './prompts/classification-answers.ts';
export {
  type FencedText,
  type FenceUntrustedOptions,
  fencedToolResultsInstruction,
  fenceUntrusted,
  type UntrustedFields,
} from './prompts/fence-untrusted.ts';
export {
  createProviderChatModel,
  defaultBaseUrls,
  type ProviderChatModelOptions,
} from './providers/provider-chat-model.ts';
export { historyForProvider } from './providers/provider-switch.ts';
export { parseReactReply, reactMessages } from './react-strategy.ts';
export { fixtureKey } from './record-replay/fixture-files.ts';
export {
  type CacheMode,
  cacheModes,
  createRecordReplayFetch,
  findReplayMiss,
  type RecordReplayOptions,
  ReplayMissError,
  withCurrentMintedValues,
} from './record-replay/record-replay-fetch.ts';
export { canonicalRequest, recognizeModelRequest } from './record-replay/wire-formats.ts';
export {
  currentTimePrefix,
  type TimeAwarenessOptions,
  timeAwareChatModel,
  withCurrentTime,
  zonedDay,
} from './time-awareness.ts';
