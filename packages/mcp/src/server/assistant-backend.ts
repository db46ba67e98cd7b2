/**
 * What Assistant's MCP server asks of the process it runs in. `assistant mcp serve` (stdio) answers from the data
 * directory's files, as the other CLI commands do; the server's `/mcp` answers from its own stores. The MCP layer
 * knows nothing of either: it validates arguments, calls these methods and turns what they return (or throw) into
 * MCP results. Errors are thrown as ordinary `Error`s whose message says what was wrong and what to do (an optional
 * `hint` property is appended); the client's model reads them.
 *
 * Deliberately missing: deciding approvals, steering tasks, writing or deleting notes. An MCP client is another
 * program's model acting for the owner at one remove; those stay with the owner's own channels (docs/mcp.md).
 */
export interface AssistantBackend {
  /** Notes whose frontmatter or body contains `query` (any case), as `assistant notes search` and `GET /api/notes?q=`. */
  searchNotes(options: SearchNotesRequest): Promise<SearchNotesResult>;
  /** Every note path under the notes root, sorted (the resource list). */
  listNotes(options: { limit: number }): Promise<string[]>;
  /** One note, confined to the notes root: a path with `..`, an absolute one or a link outside it is refused. */
  readNote(options: { path: string }): Promise<NoteView>;
  /** Tasks from their file names, as `assistant queue ls` and `GET /api/tasks`. */
  listTasks(options: ListTasksRequest): Promise<TaskListing[]>;
  /** One task's file with its state and path, as `assistant task show --json`. */
  showTask(options: { id: string }): Promise<Record<string, unknown>>;
  /** Enqueues an integration platform's entry task now, as `assistant trigger` does. */
  trigger(options: { instance: string; platform: string }): Promise<TriggeredTask>;
  /** Approval requests, newest first; `status` undefined means every one. Read only: nothing here decides one. */
  listApprovals(options: { status?: ApprovalStatus }): Promise<{ approvals: unknown[]; broken: string[] }>;
  /** Posts a message as the owner; a new conversation is started when none is named. */
  sendChatMessage(options: { text: string; conversation?: string }): Promise<SentChatMessage>;
  /**
   * The assistant's reply to a message of a conversation (`after`, default: its newest message from the owner),
   * waiting up to `timeoutMs` for a worker to write it. `waiting` when none came in time: nothing is lost, the
   * message stays stored and a later call can still read the reply.
   */
  readChatReply(options: ReadChatReplyRequest): Promise<ChatReplyResult>;
}

export interface SearchNotesRequest {
  query: string;
  /** At most this many notes are returned (the rest are counted in `total`). */
  limit: number;
}

export interface SearchNotesResult {
  notes: { path: string; title?: string }[];
  /** How many notes matched, before `limit`. */
  total: number;
  /** Notes whose frontmatter could not be read: skipped, with why. */
  broken: string[];
}

export interface NoteView {
  /** Relative to the notes root, with `/` separators. */
  path: string;
  /** The note file's exact text. */
  text: string;
  /** Its frontmatter, when it parses; undefined for a note whose frontmatter is broken (`problem` says why). */
  data?: Record<string, unknown>;
  /** The markdown after the frontmatter (the whole text when the frontmatter is broken). */
  body: string;
  problem?: string;
}

export const taskStates = ['pending', 'active', 'done', 'failed'] as const;
type TaskStateName = (typeof taskStates)[number];

export interface ListTasksRequest {
  state?: TaskStateName;
  /** An exact task type or a pattern with `*`. */
  type?: string;
  limit: number;
}

export interface TaskListing {
  id: string | null;
  type: string | null;
  state: TaskStateName;
  priority: number | null;
  ready_at: string | null;
  /** Relative to the data directory. */
  path: string;
}

export interface TriggeredTask {
  id: string;
  type: string;
  state: 'pending';
  path: string;
}

export const approvalStatuses = ['pending', 'approved', 'rejected', 'expired'] as const;
type ApprovalStatus = (typeof approvalStatuses)[number];

export interface SentChatMessage {
  conversation: string;
  message: string;
  /** How the message will be answered (`started`, `queued`…), as `POST /api/chats/:id/messages` says. */
  delivery: string;
  /** True when this call started the conversation. */
  created: boolean;
}

export interface ReadChatReplyRequest {
  conversation: string;
  /** The message whose reply is wanted. @default the conversation's newest message from the owner */
  after?: string;
  timeoutMs: number;
  signal?: AbortSignal;
}

export type ChatReplyResult =
  | {
      status: 'replied';
      conversation: string;
      /** The message the reply answers. */
      message: string;
      reply: { id: string; text: string; status: string; at: string; reply_to: string[] };
    }
  | { status: 'waiting'; conversation: string; message: string; reason: string };
