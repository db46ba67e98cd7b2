export type {
  AssistantBackend,
  ChatReplyResult,
  ListTasksRequest,
  NoteView,
  ReadChatReplyRequest,
  SearchNotesRequest,
  SearchNotesResult,
  SentChatMessage,
  TaskListing,
  TriggeredTask,
} from './assistant-backend.ts';
export { createAssistantMcpServer } from './create-assistant-mcp-server.ts';
export { handleMcpHttpRequest } from './handle-mcp-http-request.ts';
export { serveMcpOverStdio } from './serve-mcp-over-stdio.ts';
