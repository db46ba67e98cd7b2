import { listApprovals, withRendering } from '@assistant/actions';
import type { ChatMessage, ChatService } from '@assistant/chat';
import { AssistantError } from '@assistant/errors';
import type { AssistantBackend, ChatReplyResult, NoteView } from '@assistant/mcp';
import { BrokenNoteError, NotePathError, type NoteStore, searchNotes } from '@assistant/notes';
import type { TaskQueue, TaskSource } from '@assistant/queue';
import { dataPaths } from '../data-paths.ts';
import { titleOf } from '../routes/note-routes.ts';
import { listEntry, taskRecordView } from '../routes/task-routes.ts';
import type { ServerCatalog } from '../server-catalog.ts';

/**
 * Conversations an MCP client starts: their channel, so the owner can tell them from the terminal's and Telegram's,
 * and their peer, which is not `owner`: the chat's owner-only tools (deciding an approval the owner wrote `approve
 * ap-…` for, stopping a task) refuse in them. Otherwise a client, or a prompt injection steering the client's model,
 * could approve by writing that line. Approval stays with the owner's own channels.
 */
const mcpChannel = 'mcp';
const mcpPeer = 'mcp-client';

export interface StoreMcpBackendOptions {
  notes: NoteStore;
  queue: () => TaskQueue;
  chat: () => ChatService;
  /** What `trigger` enqueues: the integration registry's (or the server catalog's) entry task. */
  entryTask: ServerCatalog['entryTask'];
  /** The data directory and the queue's, so paths and error messages are shown relative to them. */
  dataDir: string;
  queueDir: string;
  /** How triggered tasks are marked: `api` from the server, `cli` from `assistant mcp serve`. */
  source: Extract<TaskSource, 'api' | 'cli'>;
  /** Told about notes and approval requests that cannot be read (they are skipped). @default ignored */
  warn?: (message: string) => void;
}

/**
 * The MCP server's backend over Assistant's own stores: the notes, the queue, approval notes and the chat inbox.
 * The server passes its stores; `assistant mcp serve` opens the data directory's files as the other commands do. The
 * building blocks are those of `assistant notes search`, `queue ls`, `task show`, `trigger`, `approvals` and `chat`
 * (and their REST routes), so MCP answers what they answer. It offers nothing that decides, steers or writes notes.
 */
export function storeMcpBackend(options: StoreMcpBackendOptions): AssistantBackend {
  const { notes } = options;
  const paths = dataPaths({ dataDir: options.dataDir, queueDir: options.queueDir });
  const warn = options.warn ?? (() => {});

  return {
    async searchNotes({ query, limit }) {
      const broken: string[] = [];
      const found = await searchNotes(notes, { text: query, limit, onBroken: (error) => broken.push(error.message) });
      return {
        notes: found.notes.map((note) => ({ path: note.path, ...titleOf(note.data) })),
        total: found.total,
        broken,
      };
    },

    async listNotes({ limit }) {
      return (await notes.list()).slice(0, limit);
    },

    async readNote({ path }) {
      try {
        const text = await notes.readText(path);
        if (!text) {
          throw new AssistantError('NOT_FOUND', `no note at ${path}`, {
            hint: 'search_notes finds notes by their text; paths are relative to the notes folder',
          });
        }
        const view: NoteView = { path: text.path, text: text.text, body: text.text };
        try {
          const note = await notes.read(path);
          if (note) return { ...view, data: note.data, body: note.body };
        } catch (error) {
          if (!(error instanceof BrokenNoteError)) throw error;
          return { ...view, problem: error.message };
        }
        return view;
      } catch (error) {
        throw asNoteError(error, path);
      }
    },

    async listTasks(request) {
      const entries = await options.queue().list(request);
      return entries.map((entry) => listEntry(entry));
    },

    async showTask({ id }) {
      const record = await options.queue().get(id);
      if (!record) {
        throw new AssistantError('NOT_FOUND', `no task with id ${id}`, {
          hint: 'list_tasks lists tasks; done and failed tasks are pruned after their retention',
        });
      }
      return { id, ...taskRecordView(record, paths) };
    },

    async trigger({ instance, platform }) {
      const entry = options.entryTask(instance, platform);
      if (!entry.ok) {
        throw new AssistantError(entry.status === 404 ? 'NOT_FOUND' : 'CONFLICT', entry.message, {
          hint:
            entry.status === 409
              ? 'the owner must set `enabled: true` in config.yaml first'
              : 'instances are the `name:`s under `integrations:` in config.yaml',
        });
      }
      const outcome = await options.queue().enqueue({
        type: entry.type,
        payload: entry.payload,
        priority: entry.priority,
        integration: entry.integration,
        source: options.source,
        policies: false,
      });
      if (outcome.status !== 'enqueued')
        throw new Error(`unexpected ${outcome.status}: manual triggers bypass policies`);
      return { id: outcome.task.id, type: entry.type, state: 'pending', path: outcome.location };
    },

    async listApprovals({ status }) {
      const broken: string[] = [];
      const approvals = await listApprovals(notes, {
        ...(status === undefined ? {} : { status }),
        onBroken: (message) => {
          broken.push(message);
          warn(`skipped ${message}`);
        },
      });
      // Each with what it will do in full: an MCP client reads what the owner would approve, not a summary.
      return { approvals: approvals.map(withRendering), broken };
    },

    async sendChatMessage({ text, conversation }) {
      const chat = options.chat();
      if (conversation !== undefined) {
        const found = await chat.get(conversation);
        if (found.channel !== mcpChannel) {
          throw new AssistantError(
            'FORBIDDEN',
            `conversation ${conversation} is the owner's ${found.channel} conversation; MCP clients post only to conversations they started`,
            { hint: 'leave out `conversation` to start one, and pass the id it returns in later calls' },
          );
        }
      }
      const id =
        conversation ?? (await chat.create({ channel: mcpChannel, peer: mcpPeer, title: titleFromText(text) })).id;
      const posted = await chat.post(id, { text });
      return { conversation: id, message: posted.id, delivery: posted.delivery, created: conversation === undefined };
    },

    async readChatReply({ conversation, after, timeoutMs, signal }) {
      const chat = options.chat();
      // Where the event log ends before the transcript is read: a reply written in between is seen in the log.
      const fromOffset = await chat.end(conversation);
      const current = await chat.get(conversation);
      const message = after ?? current.messages.findLast((entry) => entry.role === 'user')?.id;
      if (message === undefined) {
        throw new AssistantError('NOT_FOUND', `conversation ${conversation} has no message of yours to reply to`, {
          hint: 'send one with send_chat_message',
        });
      }
      if (!current.messages.some((entry) => entry.id === message)) {
        throw new AssistantError('NOT_FOUND', `conversation ${conversation} has no message ${message}`, {
          hint: 'use the message id send_chat_message returned',
        });
      }
      const replied = (messages: ChatMessage[]): ChatReplyResult | undefined => {
        const reply = messages.find((entry) => entry.role === 'assistant' && entry.reply_to?.includes(message));
        if (!reply) return undefined;
        return {
          status: 'replied',
          conversation,
          message,
          reply: { id: reply.id, text: reply.text, status: reply.status, at: reply.at, reply_to: reply.reply_to ?? [] },
        };
      };
      const already = replied(current.messages);
      if (already) return already;
      const waiting = AbortSignal.any([AbortSignal.timeout(timeoutMs), ...(signal ? [signal] : [])]);
      const errors: string[] = [];
      try {
        for await (const { event } of chat.follow(conversation, { fromOffset, signal: waiting })) {
          if (event.type === 'error' && (event.message_id === undefined || event.message_id === message)) {
            errors.push(String(event.message ?? 'the turn failed'));
          }
          if (event.type !== 'turn_done') continue;
          const found = replied((await chat.get(conversation)).messages);
          if (found) return found;
        }
      } catch (error) {
        // follow() ends quietly when its signal aborts; anything else is a real failure.
        if (!waiting.aborted) throw error;
      }
      signal?.throwIfAborted();
      return {
        status: 'waiting',
        conversation,
        message,
        reason: `no reply to ${message} within ${timeoutMs / 1_000} s${errors.length > 0 ? ` (the turn reported: ${errors.join('; ')})` : ''}. Is Assistant's worker running (\`assistant start\` or \`assistant work\`)? The message is stored and will be answered: call read_chat_reply again later.`,
      };
    },
  };
}

/** The store's path and broken-note errors, as messages a client's model can act on. */
function asNoteError(error: unknown, notePath: string): unknown {
  if (error instanceof NotePathError) {
    return new AssistantError('BAD_REQUEST', `${error.message}: only notes inside the notes folder can be read`, {
      hint: 'give a path relative to the notes folder, as search_notes lists them',
    });
  }
  const code = (error as NodeJS.ErrnoException).code;
  if (code === 'EISDIR') {
    return new AssistantError('NOT_FOUND', `${notePath} is a folder, not a note`, {
      hint: 'search_notes lists notes; the notes resources list every note',
    });
  }
  // A path through a file (`a.md/b`) or with a segment too long for the file system: no note, said without the
  // system error, whose message would show the client the data directory's absolute path.
  if (code === 'ENOTDIR' || code === 'ENAMETOOLONG') {
    return new AssistantError('NOT_FOUND', `no note at ${notePath}`, {
      hint: 'search_notes finds notes by their text; paths are relative to the notes folder',
    });
  }
  return error;
}

/** A new conversation's title: the start of its first message, on one line. */
function titleFromText(text: string): string {
  const line = text.replace(/\s+/g, ' ').trim();
  return line.length > 60 ? `${line.slice(0, 59)}…` : line;
}
