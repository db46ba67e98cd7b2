import path from 'node:path';
import { AssistantError } from '@assistant/errors';
import { FileNoteStore, type NoteStore } from '@assistant/notes';
import type { TaskQueue } from '@assistant/queue';
import { ControlFiles } from '@assistant/steering';
import { type ChatEventEntry, ChatEventLog } from './chat-events.ts';
import { ConversationChanges, ConversationIndex, type ConversationPage, pageOf } from './conversation-index.ts';
import {
  type Conversation,
  ConversationStore,
  type ConversationSummary,
  type CreateConversationOptions,
  type ForkConversationOptions,
} from './conversation-store.ts';
import { ChatInbox } from './inbox.ts';
import { assertConversationId } from './message-id.ts';
import { type ChatMode, parseChatMode } from './modes.ts';
import { TurnStates } from './turn-state.ts';

/**
 * What became of a message the moment it was stored, as the sender is told (`POST /api/chats/:id/messages`):
 * - `started`: no turn was running; a turn starts with it.
 * - `steered`: a turn is running and the message goes into it at its next step (mode `steer`).
 * - `queued`: a turn is running; the message gets a turn of its own after it (mode `followup`).
 * - `collected`: it waits with the others of a quiet window, answered together in one turn (mode `collect`).
 * - `answered_question`: the running turn asked the owner a question; this message is the answer.
 * For `interrupt`, the running turn is stopped and a new one starts: `started`.
 * It describes the moment of acceptance: a turn that ends just then answers a `steered` message in the next turn.
 * Whatever it says, the message is answered exactly once.
 */
export const chatDeliveries = ['started', 'steered', 'queued', 'collected', 'answered_question'] as const;
export type ChatDelivery = (typeof chatDeliveries)[number];

/** The task type of a turn, and its priority: chat goes before everything else on the queue. */
export const chatTurnTaskType = 'chat.turn';
export const chatTurnPriority = 1;

/** The persona of the owner's chat when the chat instance names none (its `persona` setting's default). */
export const defaultChatPersona = 'assistant';

export interface ChatServiceOptions {
  notes: NoteStore;
  /** The data directory: the inbox, event logs and turn states live under `<dataDir>/chat/`. */
  dataDir: string;
  /** `data/control`, where `stop` writes the steering request for the running turn's task. */
  controlRoot: string;
  /** Where turns are enqueued. */
  queue: Pick<TaskQueue, 'enqueue'>;
  /** The chat instance whose settings turns run with. @default 'chat' */
  instance?: string;
  /** The mode of a new conversation (the chat instance's `mode` setting). @default 'followup' */
  defaultMode?: ChatMode;
  /** The persona recorded on a new conversation (the chat instance's `persona` setting). @default 'assistant' */
  defaultPersona?: string;
  /** Inbox caps (text bytes, pending messages per conversation). */
  maxTextBytes?: number;
  maxPending?: number;
}

export interface PostMessageOptions {
  text: string;
  mode?: ChatMode;
  clientId?: string;
}

export interface PostMessageResult {
  id: string;
  delivery: ChatDelivery;
  /** True when the client id named a message stored before: nothing new was stored. */
  duplicate: boolean;
}

/**
 * Chat as the server, the CLI and the Telegram listener use it: conversations (notes), messages (the durable inbox,
 * then a turn task on the queue), the live event stream, and stopping a turn. The worker's turn runner answers.
 */
export class ChatService {
  readonly conversations: ConversationStore;
  readonly inbox: ChatInbox;
  readonly events: ChatEventLog;
  readonly turns: TurnStates;
  readonly #queue: Pick<TaskQueue, 'enqueue'>;
  readonly #instance: string;
  readonly #controlRoot: string;
  readonly #defaultMode: ChatMode;
  readonly #index: ConversationIndex | undefined;

  constructor(options: ChatServiceOptions) {
    const root = path.join(options.dataDir, 'chat');
    this.inbox = new ChatInbox({
      directory: path.join(root, 'inbox'),
      ...(options.maxTextBytes === undefined ? {} : { maxTextBytes: options.maxTextBytes }),
      ...(options.maxPending === undefined ? {} : { maxPending: options.maxPending }),
    });
    this.#defaultMode = options.defaultMode ?? 'followup';
    // The list's index needs the notes on disk here (the server's); without them the list reads every note.
    const indexPaths =
      options.notes instanceof FileNoteStore ? conversationIndexPaths(options.dataDir, options.notes.root) : undefined;
    this.conversations = new ConversationStore({
      notes: options.notes,
      inbox: this.inbox,
      defaultMode: this.#defaultMode,
      defaultPersona: options.defaultPersona ?? defaultChatPersona,
      ...(indexPaths ? { changes: new ConversationChanges(indexPaths) } : {}),
    });
    const conversations = this.conversations;
    this.#index = indexPaths
      ? new ConversationIndex({ ...indexPaths, readSummary: (notePath) => conversations.summaryOf(notePath) })
      : undefined;
    this.events = new ChatEventLog({ directory: path.join(root, 'events') });
    this.turns = new TurnStates({ directory: path.join(root, 'turns') });
    this.#queue = options.queue;
    this.#instance = options.instance ?? 'chat';
    this.#controlRoot = options.controlRoot;
  }

  create(options: CreateConversationOptions = {}): Promise<ConversationSummary> {
    return this.conversations.create({
      ...options,
      mode: options.mode === undefined ? this.#defaultMode : parseChatMode(options.mode),
    });
  }

  /**
   * A new conversation from a past turn: the messages of `conversation` up to and including `message`, frontmatter
   * `forked_from: {conversation, message}`, the original untouched (ConversationStore.fork). The fork is an ordinary
   * conversation afterwards. The `notifications` conversation cannot be forked: what it holds is text from outside
   * (reasons, mail subjects) that must not become a turn's context.
   */
  async fork(options: ForkConversationOptions): Promise<ConversationSummary> {
    const original = await this.get(options.conversation);
    if (original.channel === 'notifications') {
      throw new AssistantError(
        'CHAT_INPUT_INVALID',
        `Conversation ${original.id} holds notifications and cannot be forked: its text came from outside and is never a turn's context`,
      );
    }
    return this.conversations.fork(options);
  }

  list(): Promise<ConversationSummary[]> {
    return this.conversations.list();
  }

  /**
   * Conversations newest first, `limit` (default 50, at most 500) from `cursor` (a page's `nextCursor`), from the
   * index under `data/chat/index/` rather than by reading every note (when the notes are on disk here).
   */
  async page(options: { limit?: number; cursor?: string } = {}): Promise<ConversationPage> {
    if (this.#index) return this.#index.page(options);
    const broken: string[] = [];
    const all = await this.conversations.list({ onBroken: (error) => broken.push(error.message) });
    return pageOf(all, broken, options);
  }

  /** The conversation with its messages, those still only in the inbox as `pending`; CHAT_NOT_FOUND when none. */
  get(id: string): Promise<Conversation> {
    return this.conversations.get(assertConversationId(id));
  }

  /**
   * The conversation of a channel and peer (a Telegram chat, say): the newest one with both, created when there is
   * none or when `fresh` (the peer said `/new`).
   */
  async conversationFor(options: { channel: string; peer: string; fresh?: boolean; title?: string }): Promise<string> {
    if (!options.fresh) {
      const found = (await this.list()).find(
        (conversation) => conversation.channel === options.channel && conversation.peer === options.peer,
      );
      if (found) return found.id;
    }
    const created = await this.create({
      channel: options.channel,
      peer: options.peer,
      ...(options.title === undefined ? {} : { title: options.title }),
    });
    return created.id;
  }

  /**
   * Stores a message durably, then enqueues its turn and says how it will be answered. A resend with the same
   * client id returns the stored message's id (`duplicate`) and enqueues its turn again, which is a no-op when it
   * runs after the message was answered: a crash between storing and enqueueing loses nothing once the client
   * retries, and `resume` covers clients that do not.
   */
  async post(conversationId: string, options: PostMessageOptions): Promise<PostMessageResult> {
    const conversation = await this.get(conversationId);
    if (conversation.channel === 'notifications') {
      throw new AssistantError(
        'CHAT_INPUT_INVALID',
        `Conversation ${conversation.id} holds notifications and takes no messages`,
        {
          hint: 'answer an approval with /approve ID or /reject ID, a question with `assistant steer`; start a chat with /new',
        },
      );
    }
    const mode = options.mode === undefined ? undefined : parseChatMode(options.mode);
    const accepted = await this.inbox.accept(conversation.id, {
      text: options.text,
      ...(options.clientId === undefined ? {} : { clientId: options.clientId }),
      ...(mode === undefined ? {} : { mode }),
    });
    if (!accepted.duplicate) {
      const stored = (await this.inbox.messages(conversation.id)).find((message) => message.id === accepted.id);
      await this.events.append(conversation.id, {
        type: 'message',
        message: {
          id: accepted.id,
          role: 'user',
          text: stored?.text ?? options.text,
          at: stored?.at ?? new Date().toISOString(),
          status: 'pending',
          ...(mode === undefined ? {} : { mode }),
        },
      });
    }
    const delivery = await this.#delivery(conversation.id, mode ?? conversation.mode, accepted.id);
    if (!accepted.duplicate || (await this.inbox.answeredBy(conversation.id, accepted.id)) === undefined) {
      await this.#enqueueTurn(conversation.id, accepted.id);
    }
    return { id: accepted.id, delivery, duplicate: accepted.duplicate };
  }

  /**
   * Enqueues a turn for every message no reply has answered yet, in every conversation: after a crash between
   * storing a message and enqueueing its turn. Turns of messages answered meanwhile finish at once.
   */
  async resume(): Promise<{ enqueued: number }> {
    let enqueued = 0;
    for (const conversation of await this.list()) {
      for (const message of await this.inbox.pending(conversation.id)) {
        await this.#enqueueTurn(conversation.id, message.id);
        enqueued += 1;
      }
    }
    return { enqueued };
  }

  /** Stops the running turn of a conversation (its partial reply is kept); `task` is undefined when none ran. */
  async stop(conversationId: string, reason = 'stopped by the owner'): Promise<{ task?: string }> {
    const running = await this.turns.running(assertConversationId(conversationId));
    if (!running) return {};
    const files = new ControlFiles({ root: this.#controlRoot, taskId: running.task });
    await files.request({ action: 'stop', reason, source: 'chat' });
    return { task: running.task };
  }

  /** The offset new events will be written at: follow from here to see only what happens next. */
  end(conversationId: string): Promise<number> {
    return this.events.end(conversationId);
  }

  /** The conversation's events after `fromOffset` (default: its start), as they are written, until `signal`. */
  follow(conversationId: string, options: { fromOffset?: number; signal: AbortSignal }): AsyncIterable<ChatEventEntry> {
    return this.events.follow(conversationId, options);
  }

  async #delivery(conversationId: string, mode: ChatMode, messageId: string): Promise<ChatDelivery> {
    const running = await this.turns.running(conversationId);
    if (!running) return mode === 'collect' ? 'collected' : 'started';
    if (running.question || running.answers?.includes(messageId)) return 'answered_question';
    switch (mode) {
      case 'steer':
        return 'steered';
      case 'followup':
        return 'queued';
      case 'collect':
        return 'collected';
      case 'interrupt':
        return 'started';
    }
  }

  async #enqueueTurn(conversationId: string, messageId: string): Promise<void> {
    const outcome = await this.#queue.enqueue({
      type: chatTurnTaskType,
      payload: { conversation: conversationId, message: messageId },
      priority: chatTurnPriority,
      source: 'api',
      integration: this.#instance,
    });
    if (outcome.status === 'rate_limited') {
      throw new AssistantError('CHAT_PENDING_FULL', `The chat turn could not be enqueued: ${outcome.reason}`, {
        hint: 'The message is stored; send it again with the same client id to retry.',
      });
    }
  }
}

/** The conversation list's index files, over the notes root's `chats/` folder. */
export function conversationIndexPaths(
  dataDir: string,
  notesRoot: string,
): { directory: string; folder: string; notesFolder: string } {
  return {
    directory: path.join(dataDir, 'chat', 'index'),
    folder: path.join(notesRoot, 'chats'),
    notesFolder: 'chats',
  };
}
