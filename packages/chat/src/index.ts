export {
  type AppendMessageOptions,
  type ChatMessage,
  type Conversation,
  ConversationStore,
  type ConversationStoreOptions,
  type ConversationSummary,
  type CreateConversationOptions,
} from './conversation-store.ts';
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
