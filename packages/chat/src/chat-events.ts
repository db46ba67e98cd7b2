import { mkdir, open, stat } from 'node:fs/promises';
import path from 'node:path';
import { conversationOfLogFile, EventLogWatchers, type LogBatch } from './event-log-watchers.ts';
import { assertConversationId } from './message-id.ts';

/**
 * What a conversation's event stream carries (`GET /api/chats/:id/events`, the CLI, the Telegram listener):
 * - `message`: a message entered the conversation: a user message when the inbox accepted it (status `pending`),
 *   an assistant message when the turn wrote it to the transcript (with `reply_to` and its status).
 * - `turn_started`: a turn began answering `reply_to` (the user message ids of its batch), as task `turn`.
 * - `token`: text of the reply as the model writes it (`text` is a piece, in order).
 * - `step`: a tool step (`tool`, `status` started|finished, and `succeeded` when finished).
 * - `clarification`: the assistant asks the owner (`id`, `question`); the next plain message answers it.
 * - `approval`: an approval request shown in the chat (`id`, `title`, `summary`).
 * - `error`: something the sender must hear (`message`, `code`, the `message_id` it concerns).
 * - `turn_done`: the turn wrote its reply (`reply`, `reply_to`, `status`).
 */
export const chatEventTypes = [
  'message',
  'turn_started',
  'token',
  'step',
  'clarification',
  'approval',
  'error',
  'turn_done',
] as const;
export type ChatEventType = (typeof chatEventTypes)[number];

/** One line of a conversation's event log. */
export interface ChatEvent {
  type: ChatEventType;
  /** ISO 8601, UTC. */
  at: string;
  [key: string]: unknown;
}

/** An event with its position: `offset` is the byte offset just after its line, usable as an SSE event id. */
export interface ChatEventEntry {
  offset: number;
  event: ChatEvent;
}

export interface ChatEventLogOptions {
  /** `data/chat/events`. */
  directory: string;
  /**
   * How often each followed conversation's log size is looked at: while the folder watcher works (a safety net for
   * a change it missed), and when it could not be started. Once per conversation, however many follow it.
   * @default {watching: 2_000, unwatched: 250}
   */
  pollMs?: { watching: number; unwatched: number };
}

/** Longest line read back; a longer one (written by hand) is skipped. */
const maxLineBytes = 1024 * 1024;
/** The most bytes one `read` takes from a log (more than a line may have): the rest is for the next read. */
const maxReadBytes = 4 * maxLineBytes;

/**
 * Batches a follower may have waiting before it stops keeping them and reads the log itself once it catches up: a
 * slow client costs a read, never memory without bound.
 */
const maxWaitingBatches = 256;

/**
 * The append-only event log of each conversation, `directory/<conversation id>.jsonl`: one JSON object per line,
 * appended with O_APPEND in a single write so lines of concurrent writers (server and worker) stay whole. Readers
 * follow it from a byte offset, so a client that reconnects with the last offset it saw misses nothing and sees
 * nothing twice. The log is for live delivery; the transcript note is the record.
 */
export class ChatEventLog {
  readonly directory: string;
  readonly #watchers: EventLogWatchers<ChatEventEntry>;

  constructor(options: ChatEventLogOptions) {
    this.directory = path.resolve(options.directory);
    this.#watchers = new EventLogWatchers({
      directory: this.directory,
      file: (conversationId) => this.file(conversationId),
      conversationOf: conversationOfLogFile,
      read: (conversationId, fromOffset) => this.#read(conversationId, fromOffset),
      ...(options.pollMs === undefined ? {} : { pollMs: options.pollMs }),
    });
  }

  /** How many conversations have followers now: each has one watcher and one reader, whatever their number. */
  get followedConversations(): number {
    return this.#watchers.conversations;
  }

  file(conversationId: string): string {
    return path.join(this.directory, `${assertConversationId(conversationId)}.jsonl`);
  }

  /** Appends one event; returns the offset just after it. */
  async append(conversationId: string, event: Omit<ChatEvent, 'at'> & { at?: string }): Promise<number> {
    const file = this.file(conversationId);
    await mkdir(this.directory, { recursive: true, mode: 0o700 });
    const line = `${JSON.stringify({ ...event, at: event.at ?? new Date().toISOString() })}\n`;
    const handle = await open(file, 'a', 0o600);
    try {
      await handle.write(line);
      return (await handle.stat()).size;
    } finally {
      await handle.close();
    }
  }

  /** The log's current size: the offset a reader that wants only new events starts from. */
  async end(conversationId: string): Promise<number> {
    try {
      return (await stat(this.file(conversationId))).size;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return 0;
      throw error;
    }
  }

  /**
   * The whole events written after `fromOffset`, at most 4 MiB of them, and the offset to read from next (a line
   * still being written is left for the next read; so are the events past 4 MiB: a caller reads again from `next`
   * until it is the log's end). An offset past the end (a log removed by hand) starts again from 0.
   */
  async read(conversationId: string, fromOffset = 0): Promise<{ entries: ChatEventEntry[]; next: number }> {
    const { entries, next } = await this.#read(conversationId, fromOffset);
    return { entries, next };
  }

  /** `read`, saying where it started: 0 rather than `fromOffset` when the log is shorter than that. */
  async #read(
    conversationId: string,
    fromOffset: number,
  ): Promise<{ start: number; entries: ChatEventEntry[]; next: number; more: boolean }> {
    const file = this.file(conversationId);
    let handle: Awaited<ReturnType<typeof open>>;
    try {
      handle = await open(file, 'r');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return { start: 0, entries: [], next: 0, more: false };
      throw error;
    }
    try {
      const size = (await handle.stat()).size;
      const start = fromOffset > size ? 0 : Math.max(0, fromOffset);
      if (size === start) return { start, entries: [], next: start, more: false };
      // At most a read's worth at a time: a long conversation's log is read in pieces, never whole into memory.
      const buffer = Buffer.alloc(Math.min(size - start, maxReadBytes));
      const { bytesRead } = await handle.read(buffer, 0, buffer.length, start);
      const entries: ChatEventEntry[] = [];
      let lineStart = 0;
      for (;;) {
        const newline = buffer.indexOf(10, lineStart);
        if (newline === -1 || newline >= bytesRead) break;
        const line = buffer.subarray(lineStart, newline);
        lineStart = newline + 1;
        if (line.length === 0 || line.length > maxLineBytes) continue;
        const event = parseEvent(line.toString('utf8'));
        if (event) entries.push({ offset: start + lineStart, event });
      }
      if (lineStart === 0 && bytesRead === maxReadBytes) {
        // A line longer than a whole read (so longer than any event is): skipped to its end, if it has one yet.
        const end = await lineEnd(handle, start + bytesRead, size);
        return { start, entries, next: end ?? start, more: end !== undefined && end < size };
      }
      // More whole lines may be past this read's piece: the caller reads again from `next`.
      return { start, entries, next: start + lineStart, more: start + bytesRead < size && lineStart > 0 };
    } finally {
      await handle.close();
    }
  }

  /**
   * Yields events after `fromOffset` as they are appended, until `signal` aborts. The follower reads what is already
   * there on its own, then joins the conversation's one watcher (EventLogWatchers), which reads each new line once
   * for all its followers: a thousand streams of one conversation cost one read per change, not a thousand polls.
   */
  async *follow(
    conversationId: string,
    options: { fromOffset?: number; signal: AbortSignal },
  ): AsyncGenerator<ChatEventEntry> {
    this.file(conversationId);
    await mkdir(this.directory, { recursive: true, mode: 0o700 });
    const { signal } = options;
    const waiting: LogBatch<ChatEventEntry>[] = [];
    // Set when batches were dropped for a slow follower: it reads the log itself from where it is.
    let overflowed = false;
    let wake: (() => void) | undefined;
    // Joined before the first read, so nothing written between that read and joining is missed.
    const unsubscribe = this.#watchers.subscribe(conversationId, {
      deliver: (batch) => {
        if (waiting.length >= maxWaitingBatches) {
          waiting.length = 0;
          overflowed = true;
        } else waiting.push(batch);
        wake?.();
      },
    });
    try {
      // The byte offset just after the last event yielded (or skipped): every later event is yielded once.
      let position = options.fromOffset ?? 0;
      let own: { start: number; entries: ChatEventEntry[]; next: number; more: boolean } | undefined = await this.#read(
        conversationId,
        position,
      );
      this.#watchers.caughtUp(conversationId, own.next);
      while (!signal.aborted) {
        if (own) {
          position = own.start;
          for (const entry of own.entries) {
            if (signal.aborted) return;
            position = entry.offset;
            yield entry;
          }
          position = Math.max(position, own.next);
          // A long log is read a piece at a time: the rest before waiting for the watcher.
          own = own.more ? await this.#read(conversationId, position) : undefined;
          continue;
        }
        if (overflowed) {
          overflowed = false;
          own = await this.#read(conversationId, position);
          continue;
        }
        const batch = waiting.shift();
        if (!batch) {
          await new Promise<void>((resolve) => {
            const done = () => {
              signal.removeEventListener('abort', done);
              wake = undefined;
              resolve();
            };
            wake = done;
            signal.addEventListener('abort', done, { once: true });
            if (signal.aborted || waiting.length > 0 || overflowed) done();
          });
          continue;
        }
        // A log cut shorter (removed by hand) is read again from its start, as `read` does.
        if (batch.restarted) position = batch.from;
        // The reader was ahead of this follower when it joined: read the lines in between on its own.
        if (batch.from > position) {
          own = await this.#read(conversationId, position);
          continue;
        }
        for (const entry of batch.entries) {
          if (entry.offset <= position) continue;
          if (signal.aborted) return;
          position = entry.offset;
          yield entry;
        }
        position = Math.max(position, batch.next);
      }
    } finally {
      unsubscribe();
    }
  }
}

/** The offset just after the next newline at or after `from`, reading a piece at a time; undefined before the end. */
async function lineEnd(
  handle: Awaited<ReturnType<typeof open>>,
  from: number,
  size: number,
): Promise<number | undefined> {
  const piece = Buffer.alloc(64 * 1024);
  for (let position = from; position < size; ) {
    const { bytesRead } = await handle.read(piece, 0, Math.min(piece.length, size - position), position);
    if (bytesRead === 0) return undefined;
    const newline = piece.subarray(0, bytesRead).indexOf(10);
    if (newline !== -1) return position + newline + 1;
    position += bytesRead;
  }
  return undefined;
}

/**
 * One line as an event. A line that does not parse is skipped (a person broke it), except that an event appended
 * after a torn line (a crash or a full disk cut the previous write) shares its line: it is read from its own start,
 * the last `{"type":` of the line, so a tear never takes the next event with it.
 */
function parseEvent(text: string): ChatEvent | undefined {
  for (const candidate of [text, text.slice(Math.max(0, text.lastIndexOf('{"type":')))]) {
    try {
      const event = JSON.parse(candidate) as ChatEvent;
      if (event && typeof event === 'object' && typeof event.type === 'string') return event;
    } catch {
      // Try the next candidate.
    }
  }
  return undefined;
}
