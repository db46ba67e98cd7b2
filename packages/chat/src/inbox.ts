import { createHash, randomBytes } from 'node:crypto';
import { link, mkdir, open, readdir, readFile, unlink } from 'node:fs/promises';
import path from 'node:path';
import { AssistantError } from '@assistant/errors';
import * as z from 'zod';
import { assertConversationId, idPattern, messageIdTime, newMessageId } from './message-id.ts';
import { type ChatMode, chatModeSchema, parseChatMode } from './modes.ts';
import { normaliseText } from './transcript.ts';

/** A message the inbox accepted: stored durably before `accept` returned. */
export interface InboxMessage {
  id: string;
  conversationId: string;
  text: string;
  /** ISO 8601 time, UTC, of the accept that stored it. */
  at: string;
  clientId?: string;
  mode?: ChatMode;
}

/** The record that an assistant message answered an inbox message. */
export interface AnsweredRecord {
  id: string;
  replyId: string;
  at: string;
}

export interface ChatInboxOptions {
  /** `data/chat/inbox`. */
  directory: string;
  /** Longest text accepted, in bytes of UTF-8. @default 32768 */
  maxTextBytes?: number;
  /** Most accepted-but-unanswered messages per conversation. @default 100 */
  maxPending?: number;
  /** @default () => new Date() */
  now?: () => Date;
}

export interface AcceptOptions {
  text: string;
  /** The sender's own id for this message: a resend with the same one is the same message. */
  clientId?: string;
  /** Overrides the conversation's mode for this message. */
  mode?: ChatMode;
}

const messageSchema = z.object({
  id: z.string().regex(idPattern),
  conversationId: z.string().regex(idPattern),
  text: z.string(),
  at: z.string(),
  clientId: z.string().optional(),
  mode: chatModeSchema.optional(),
});

const answeredSchema = z.object({ id: z.string(), replyId: z.string(), at: z.string() });

/**
 * The durable chat inbox (decision 0009). Per conversation, under `directory/<conversationId>/`:
 * - `messages/<key>.json`, one file per accepted message, `key` being `c-<sha256(conversation, clientId)>` for a
 *   message with a client id and its own id otherwise. The file is written to a temporary name, fsynced, then
 *   linked to its name (link fails when the name exists) and the folder fsynced: once `accept` returns, the
 *   message survives a crash, and two processes accepting the same client id store it once.
 * - `answered/<id>.json`, created exclusively by `markAnswered`: which reply answered the message.
 * The order of messages is the order of their ids, which grow with the time of acceptance.
 */
export class ChatInbox {
  readonly directory: string;
  readonly #maxTextBytes: number;
  readonly #maxPending: number;
  readonly #now: () => Date;

  constructor(options: ChatInboxOptions) {
    this.directory = path.resolve(options.directory);
    this.#maxTextBytes = options.maxTextBytes ?? 32 * 1024;
    this.#maxPending = options.maxPending ?? 100;
    this.#now = options.now ?? (() => new Date());
  }

  #folder(conversationId: string, kind: 'messages' | 'answered'): string {
    return path.join(this.directory, assertConversationId(conversationId), kind);
  }

  /**
   * Stores an inbound message durably, then returns its id. `duplicate` is true when a message with the same
   * client id was stored before in this conversation (by any process): nothing new is stored, and its id is
   * returned. Refused, with nothing stored: text too long (CHAT_MESSAGE_TOO_LARGE), too many pending
   * (CHAT_PENDING_FULL). The pending cap is checked before the write, so processes accepting at the same moment
   * can overshoot it by at most one message each.
   */
  async accept(conversationId: string, options: AcceptOptions): Promise<{ id: string; duplicate: boolean }> {
    const folder = this.#folder(conversationId, 'messages');
    const text = normaliseText(options.text);
    if (text === '') throw new AssistantError('CHAT_INPUT_INVALID', 'Expected a message `text`, got an empty one');
    const bytes = Buffer.byteLength(text);
    if (bytes > this.#maxTextBytes) {
      throw new AssistantError(
        'CHAT_MESSAGE_TOO_LARGE',
        `A chat message may hold at most ${this.#maxTextBytes} bytes of UTF-8, got ${bytes}`,
        { hint: 'Split the text into several messages.' },
      );
    }
    if (options.clientId !== undefined && (options.clientId === '' || options.clientId.length > 200)) {
      throw new AssistantError(
        'CHAT_INPUT_INVALID',
        `Expected \`clientId\` to be 1-200 characters, got ${JSON.stringify(options.clientId.slice(0, 40))}`,
      );
    }
    const mode = options.mode === undefined ? undefined : parseChatMode(options.mode);
    const key = options.clientId === undefined ? undefined : clientKey(conversationId, options.clientId);
    if (key) {
      // A resend is answered from what is stored, even when the conversation is full.
      const stored = await readMessage(path.join(folder, `${key}.json`));
      if (stored) return { id: stored.id, duplicate: true };
    }
    const pending = await this.pending(conversationId);
    if (pending.length >= this.#maxPending) {
      throw new AssistantError(
        'CHAT_PENDING_FULL',
        `Conversation ${conversationId} already holds ${pending.length} messages not yet answered (at most ${this.#maxPending}); this one was not stored`,
        { hint: 'Send it again once the assistant has answered.' },
      );
    }
    const id = newMessageId(this.#now().getTime());
    const message: InboxMessage = {
      id,
      conversationId,
      text,
      at: this.#now().toISOString(),
      ...(options.clientId === undefined ? {} : { clientId: options.clientId }),
      ...(mode === undefined ? {} : { mode }),
    };
    const file = path.join(folder, `${key ?? id}.json`);
    const created = await createDurably(file, `${JSON.stringify(message)}\n`);
    if (!created) {
      // Another accept of the same client id linked its file first: that one is the message.
      const stored = await readMessage(file);
      if (!stored) throw new Error(`${file} existed a moment ago and is gone`);
      return { id: stored.id, duplicate: true };
    }
    return { id, duplicate: false };
  }

  /** Every accepted message of the conversation, in order. */
  async messages(conversationId: string): Promise<InboxMessage[]> {
    const folder = this.#folder(conversationId, 'messages');
    const found: InboxMessage[] = [];
    for (const name of await listJson(folder)) {
      const file = path.join(folder, name);
      // A message file never changes once linked into place: read once per process, then kept.
      let message = readMessages.get(file);
      if (message === undefined) {
        message = await readMessage(file);
        if (message) rememberMessage(file, message);
      }
      if (message) found.push(message);
    }
    return found.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  }

  /** Accepted messages that no reply has answered yet, in order. */
  async pending(conversationId: string): Promise<InboxMessage[]> {
    const answered = new Set(
      (await listJson(this.#folder(conversationId, 'answered'))).map((name) => name.slice(0, -'.json'.length)),
    );
    return (await this.messages(conversationId)).filter((message) => !answered.has(message.id));
  }

  /** Which reply answered a message; undefined while it is pending. */
  async answeredBy(conversationId: string, id: string): Promise<AnsweredRecord | undefined> {
    const file = path.join(this.#folder(conversationId, 'answered'), `${checkId(id)}.json`);
    return readAnswered(file);
  }

  /**
   * Records that the assistant message `replyId` answered `ids`. Each record is created exclusively: marking again
   * with the same reply is a no-op, with another reply it fails with CHAT_ALREADY_ANSWERED (nothing is answered
   * twice). Ids not in the inbox fail with CHAT_INPUT_INVALID before anything is written.
   */
  async markAnswered(conversationId: string, options: { ids: readonly string[]; replyId: string }): Promise<void> {
    const folder = this.#folder(conversationId, 'answered');
    checkId(options.replyId);
    const known = new Set((await this.messages(conversationId)).map((message) => message.id));
    const unknown = options.ids.filter((id) => !known.has(id));
    if (unknown.length > 0) {
      throw new AssistantError(
        'CHAT_INPUT_INVALID',
        `Conversation ${conversationId} has no accepted message ${unknown.map((id) => JSON.stringify(id)).join(', ')}`,
      );
    }
    for (const id of options.ids) {
      const file = path.join(folder, `${id}.json`);
      const record: AnsweredRecord = { id, replyId: options.replyId, at: this.#now().toISOString() };
      if (await createDurably(file, `${JSON.stringify(record)}\n`)) continue;
      const existing = await readAnswered(file);
      if (existing?.replyId !== options.replyId) {
        throw new AssistantError(
          'CHAT_ALREADY_ANSWERED',
          `Message ${id} was answered by ${existing?.replyId ?? 'another reply'}, not ${options.replyId}`,
        );
      }
    }
  }

  /** The conversations that have an inbox folder. */
  async conversations(): Promise<string[]> {
    try {
      return (await readdir(this.directory, { withFileTypes: true }))
        .filter((entry) => entry.isDirectory() && idPattern.test(entry.name))
        .map((entry) => entry.name);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
      throw error;
    }
  }

  /**
   * Removes the messages answered more than `answeredRetentionMs` ago (their reply is in the transcript note) with
   * their answered records (decision 0078). Unanswered messages are never removed. A message file goes first, its
   * record second: a crash between leaves a record without its message (removed by the next pass), never a message
   * without its record (which would be answered again). Removing a message with a client id ends its
   * deduplication: a resend after that is a new message, so the retention is the deduplication window.
   */
  async compact(
    conversationId: string,
    options: { answeredRetentionMs: number; now?: Date },
  ): Promise<{ removed: number }> {
    const oldest = (options.now ?? this.#now()).getTime() - options.answeredRetentionMs;
    const messagesFolder = this.#folder(conversationId, 'messages');
    const answeredFolder = this.#folder(conversationId, 'answered');
    const answeredNames = await listJson(answeredFolder);
    // A pass reads only the records that may be old enough: a message id carries the time it was accepted, and its
    // answer came later, so one accepted after the cutoff is skipped unread (thousands of recent records cost a
    // listing, not thousands of reads).
    const candidates: { file: string; record: AnsweredRecord }[] = [];
    for (const name of answeredNames) {
      const acceptedMs = messageIdTime(name.slice(0, -'.json'.length));
      if (acceptedMs !== undefined && acceptedMs > oldest) continue;
      const file = path.join(answeredFolder, name);
      const record = await readAnswered(file).catch(() => undefined);
      // A record that does not parse (edited by hand) is left for a person to look at.
      if (!record) continue;
      const answeredAt = Date.parse(record.at);
      if (Number.isNaN(answeredAt) || answeredAt > oldest) continue;
      candidates.push({ file, record });
    }
    if (candidates.length === 0) return { removed: 0 };
    const fileOf = new Map<string, string>();
    for (const name of await listJson(messagesFolder)) {
      const file = path.join(messagesFolder, name);
      // A message without a client id is named by its id: no need to read it.
      if (!name.startsWith('c-')) {
        fileOf.set(name.slice(0, -'.json'.length), file);
        continue;
      }
      const message = readMessages.get(file) ?? (await readMessage(file).catch(() => undefined));
      if (message) fileOf.set(message.id, file);
    }
    let removed = 0;
    for (const { file: recordFile, record } of candidates) {
      const messageFile = fileOf.get(record.id);
      if (messageFile) {
        await unlink(messageFile).catch((error: NodeJS.ErrnoException) => {
          if (error.code !== 'ENOENT') throw error;
        });
        readMessages.delete(messageFile);
        removed += 1;
      }
      await unlink(recordFile).catch((error: NodeJS.ErrnoException) => {
        if (error.code !== 'ENOENT') throw error;
      });
    }
    return { removed };
  }
}

function checkId(id: string): string {
  if (!idPattern.test(id)) {
    throw new AssistantError('CHAT_INPUT_INVALID', `Expected a message id of [a-z0-9-], got ${JSON.stringify(id)}`);
  }
  return id;
}

/** `c-` and a SHA-256 of conversation and client id: a fixed-length file name, whatever the client sends. */
function clientKey(conversationId: string, clientId: string): string {
  return `c-${createHash('sha256').update(`${conversationId}\0${clientId}`).digest('hex')}`;
}

async function listJson(folder: string): Promise<string[]> {
  try {
    return (await readdir(folder)).filter((name) => name.endsWith('.json') && !name.startsWith('.'));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw error;
  }
}

async function readJson(file: string): Promise<unknown> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
  try {
    return JSON.parse(text) as unknown;
  } catch (error) {
    throw new Error(`${file} is not valid JSON: ${(error as Error).message}`, { cause: error });
  }
}

/**
 * Inbox messages read by this process, by file. Each file is created whole and exclusively and never rewritten, so
 * what was read stays true; a file removed by hand drops out of the listing, which is read every time. Bounded: the
 * oldest entries go first.
 */
const readMessages = new Map<string, InboxMessage>();
const maxReadMessages = 20_000;

function rememberMessage(file: string, message: InboxMessage): void {
  readMessages.set(file, message);
  if (readMessages.size > maxReadMessages) {
    const oldest = readMessages.keys().next().value;
    if (oldest !== undefined) readMessages.delete(oldest);
  }
}

async function readMessage(file: string): Promise<InboxMessage | undefined> {
  const value = await readJson(file);
  if (value === undefined) return undefined;
  const parsed = messageSchema.safeParse(value);
  if (!parsed.success) throw new Error(`${file} is not an inbox message: ${parsed.error.issues[0]?.message ?? ''}`);
  const { clientId, mode, ...rest } = parsed.data;
  return { ...rest, ...(clientId === undefined ? {} : { clientId }), ...(mode === undefined ? {} : { mode }) };
}

async function readAnswered(file: string): Promise<AnsweredRecord | undefined> {
  const value = await readJson(file);
  if (value === undefined) return undefined;
  const parsed = answeredSchema.safeParse(value);
  if (!parsed.success) throw new Error(`${file} is not an answered record: ${parsed.error.issues[0]?.message ?? ''}`);
  return parsed.data;
}

/**
 * Creates `file` with `text` unless it exists, durably: written and fsynced under a temporary name, linked to its
 * name (atomic, and EEXIST when another writer got there first: then false), then the folder fsynced so the new
 * name survives a crash too. A reader never sees a half-written file.
 */
async function createDurably(file: string, text: string): Promise<boolean> {
  const folder = path.dirname(file);
  await mkdir(folder, { recursive: true, mode: 0o700 });
  const tmp = path.join(folder, `.${process.pid}.${randomBytes(6).toString('hex')}.tmp`);
  const handle = await open(tmp, 'wx', 0o600);
  try {
    await handle.writeFile(text);
    await handle.sync();
  } finally {
    await handle.close();
  }
  let created = true;
  try {
    await link(tmp, file);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    created = false;
  } finally {
    await unlink(tmp).catch(() => {});
  }
  // Also after EEXIST: the caller is about to acknowledge that name, and the writer that made it may not have
  // synced the folder yet.
  {
    const directory = await open(folder, 'r');
    try {
      await directory.sync();
    } finally {
      await directory.close();
    }
  }
  return created;
}
