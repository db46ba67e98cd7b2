export {
  type ChatCompactionReport,
  type ChatRetention,
  compactChat,
  defaultChatRetention,
} from './chat-compaction.ts';
export {
  type ChatEvent,
  type ChatEventEntry,
  ChatEventLog,
  type ChatEventLogOptions,
  type ChatEventType,
  chatEventTypes,
} from './chat-events.ts';
export {
  type ChatDelivery,
  ChatService,
  type ChatServiceOptions,
  chatDeliveries,
  chatTurnPriority,
  chatTurnTaskType,
  conversationIndexPaths,
  defaultChatPersona,
  type PostMessageOptions,
  type PostMessageResult,
} from './chat-service.ts';
export {
  ConversationChanges,
  type ConversationPage,
  maxConversationPageLimit,
} from './conversation-index.ts';
export {
  type AppendMessageOptions,
  type ChatMessage,
  type Conversation,
  ConversationStore,
  type ConversationStoreOptions,
  type ConversationSummary,
  type CreateConversationOptions,
  type ForkConversationOptions,
  type ForkedFrom,
  personaNamePattern,
} from './conversation-store.ts';
export type { CompactionResult, EventLogRetention } from './event-log-compaction.ts';
export {
  type AcceptOptions,
  type AnsweredRecord,
  ChatInbox,
  type ChatInboxOptions,
  type InboxMessage,
} from './inbox.ts';
export { type ChatMode, chatModes, parseChatMode } from './modes.ts';
export type {
  AssistantStatus,
  ChatRole,
  MessageStatus,
  ToolStep,
  TranscriptProblem,
} from './transcript.ts';
export { type AcquireResult, type TurnState, TurnStates, type TurnStatesOptions } from './turn-state.ts';
