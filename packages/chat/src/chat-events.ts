import { constants } from 'node:fs';
import { type FileHandle, link, mkdir, open, readdir, stat, unlink } from 'node:fs/promises';
import path from 'node:path';
import {
  type CompactionResult,
  compactEventLog,
  compactingFile,
  type EventLogRetention,
  isCompacting,
  lostInCompaction,
  recoverCompaction,
  recoverEventLogs,
  scratchFileOf,
} from './event-log-compaction.ts';
import { logHeaderType, readHeader } from './event-log-header.ts';
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
 * - `compacted`: never written; what a reader gets in place of events a compaction removed (decision 0077): the
 *   events from `from` up to its offset are gone, and the transcript note is where they are recorded.
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
  'compacted',
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

/** How long an append or a reader waits for a compaction before recovering it as one that died. */
const compactionWaitMs = 30_000;

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

  /**
   * Appends one event; returns the (global) offset just after it. The line is written with O_APPEND in one write.
   * A compaction (decision 0077) sets the log aside while it copies it: an append waits for it, and an append that
   * landed in the set-aside file after the copy was taken is appended again to the new log, once.
   */
  async append(conversationId: string, event: Omit<ChatEvent, 'at'> & { at?: string }): Promise<number> {
    const file = this.file(conversationId);
    await mkdir(this.directory, { recursive: true, mode: 0o700 });
    const line = Buffer.from(`${JSON.stringify({ ...event, at: event.at ?? new Date().toISOString() })}\n`);
    for (;;) {
      const handle = await this.#openForAppend(file);
      try {
        await handle.write(line);
        const written = await handle.stat();
        const header = await readHeader(handle);
        const offset = header.offset + written.size - header.bytes;
        const current = await stat(file).then(
          (stats) => stats.ino,
          () => undefined,
        );
        // Still the log's file after the write: any compaction sets it aside later and copies this line.
        if (current === written.ino) return offset;
        if (!(await lostInCompaction({ file, handle, header, line, waitMs: compactionWaitMs }))) return offset;
      } finally {
        await handle.close();
      }
    }
  }

  /**
   * Opens the log to append, never creating it while a compaction has it set aside (that would restart its
   * offsets): waits for the compaction, and recovers one that died (its set-aside file older than `staleMs`).
   */
  async #openForAppend(file: string): Promise<FileHandle> {
    const deadline = Date.now() + compactionWaitMs;
    for (;;) {
      try {
        return await open(file, constants.O_RDWR | constants.O_APPEND);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
      }
      if (await createLog(file)) continue;
      if (Date.now() > deadline) await recoverCompaction(file, { staleMs: 0 });
      else await new Promise((resolve) => setTimeout(resolve, 5));
    }
  }

  /** The log's current end (global offset, decision 0077): the offset a reader that wants only new events starts from. */
  async end(conversationId: string): Promise<number> {
    const file = this.file(conversationId);
    const deadline = Date.now() + compactionWaitMs;
    for (;;) {
      const handle = await openToRead(file);
      if (handle === 'missing') return 0;
      if (handle === 'compacting') {
        // Set aside by a compaction this moment: its end is known once it publishes the new log (the set-aside
        // file may hold a line past the copy, which is appended again).
        if (Date.now() > deadline) await recoverCompaction(file, { staleMs: 0 });
        else await new Promise((resolve) => setTimeout(resolve, 5));
        continue;
      }
      try {
        const header = await readHeader(handle);
        return header.offset + (await handle.stat()).size - header.bytes;
      } finally {
        await handle.close();
      }
    }
  }

  /**
   * The whole events written after `fromOffset`, at most 4 MiB of them, and the offset to read from next (a line
   * still being written is left for the next read; so are the events past 4 MiB: a caller reads again from `next`
   * until it is the log's end). An offset past the end (a log removed by hand) starts again from the log's first
   * event. An offset a compaction removed gets one `compacted` entry instead of the events that were there.
   */
  async read(conversationId: string, fromOffset = 0): Promise<{ entries: ChatEventEntry[]; next: number }> {
    const { entries, next } = await this.#read(conversationId, fromOffset);
    return { entries, next };
  }

  /** `read`, saying where it started: the log's first offset rather than `fromOffset` when it is past the end. */
  async #read(
    conversationId: string,
    fromOffset: number,
  ): Promise<{ start: number; entries: ChatEventEntry[]; next: number; more: boolean }> {
    const file = this.file(conversationId);
    const handle = await openToRead(file);
    // Set aside by a compaction this moment: nothing new to read until it publishes the log again.
    if (handle === 'compacting') return { start: fromOffset, entries: [], next: fromOffset, more: false };
    if (handle === 'missing') return { start: 0, entries: [], next: 0, more: false };
    try {
      const header = await readHeader(handle);
      const stats = await handle.stat();
      const size = stats.size;
      const first = header.offset;
      const end = header.offset + size - header.bytes;
      // Events removed by a compaction: one `compacted` entry says so, then the read goes on from the first kept.
      const gone: ChatEventEntry | undefined =
        fromOffset < first
          ? {
              offset: first,
              event: { type: 'compacted', at: header.at ?? new Date().toISOString(), from: fromOffset },
            }
          : undefined;
      const from = gone ? first : fromOffset;
      const start = from > end ? first : from;
      // A reader before the first kept event started where it asked (no restart), and was told of the gap.
      const startedAt = gone ? fromOffset : start;
      if (end === start) return { start: startedAt, entries: gone ? [gone] : [], next: start, more: false };
      // File positions and global offsets differ by what compactions removed, less the header line.
      const position = start - header.offset + header.bytes;
      const global = (filePosition: number) => header.offset + filePosition - header.bytes;
      // At most a read's worth at a time: a long conversation's log is read in pieces, never whole into memory.
      const buffer = Buffer.alloc(Math.min(size - position, maxReadBytes));
      const { bytesRead } = await handle.read(buffer, 0, buffer.length, position);
      // Set aside by a compaction while this read was under way: what it read may hold a line appended after the
      // compaction's copy, which its writer appends again elsewhere. Nothing is taken from it; the next read (the new
      // log's appearance wakes the watchers) reads the new log.
      const current = await stat(file).then(
        (now) => now.ino,
        () => undefined,
      );
      if (current !== stats.ino) return { start: fromOffset, entries: [], next: fromOffset, more: false };
      const entries: ChatEventEntry[] = gone ? [gone] : [];
      let lineStart = 0;
      for (;;) {
        const newline = buffer.indexOf(10, lineStart);
        if (newline === -1 || newline >= bytesRead) break;
        const line = buffer.subarray(lineStart, newline);
        lineStart = newline + 1;
        if (line.length === 0 || line.length > maxLineBytes) continue;
        const event = parseEvent(line.toString('utf8'));
        if (event) entries.push({ offset: global(position + lineStart), event });
      }
      if (lineStart === 0 && bytesRead === maxReadBytes) {
        // A line longer than a whole read (so longer than any event is): skipped to its end, if it has one yet.
        const lineEndAt = await lineEnd(handle, position + bytesRead, size);
        return {
          start: startedAt,
          entries,
          next: lineEndAt === undefined ? start : global(lineEndAt),
          more: lineEndAt !== undefined && lineEndAt < size,
        };
      }
      // More whole lines may be past this read's piece: the caller reads again from `next`.
      return {
        start: startedAt,
        entries,
        next: global(position + lineStart),
        more: position + bytesRead < size && lineStart > 0,
      };
    } finally {
      await handle.close();
    }
  }

  /** The conversations that have an event log. */
  async conversations(): Promise<string[]> {
    try {
      return (await readdir(this.directory))
        .map((name) => conversationOfLogFile(name))
        .filter((id): id is string => id !== undefined && !id.startsWith('.'));
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
      throw error;
    }
  }

  /**
   * Removes a conversation's oldest events past `retention` when its log has been idle for `retention.idleMs`
   * (decision 0077). Offsets of the events kept do not change; a reader at a removed one gets a `compacted` entry.
   */
  async compact(
    conversationId: string,
    options: { retention: EventLogRetention; now?: Date },
  ): Promise<CompactionResult> {
    return compactEventLog({
      file: this.file(conversationId),
      retention: options.retention,
      now: options.now ?? new Date(),
    });
  }

  /** Clears what compactions that died left behind (older than `staleMs`); returns how many leftovers. */
  async recover(options: { staleMs: number; now?: Date }): Promise<number> {
    return recoverEventLogs(this.directory, { staleMs: options.staleMs, now: options.now ?? new Date() });
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
async function lineEnd(handle: FileHandle, from: number, size: number): Promise<number | undefined> {
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
      // A compaction's header line is never an event (it is skipped by position; this covers a damaged one).
      if (event && typeof event === 'object' && typeof event.type === 'string' && String(event.type) !== logHeaderType)
        return event;
    } catch {
      // Try the next candidate.
    }
  }
  return undefined;
}

/**
 * Opens a conversation's log to read: its handle, `compacting` while a compaction has it set aside, or `missing`
 * when there is no log. A compaction can publish its new log and remove the set-aside file between a failed open and
 * the look for that file, which would look like a log removed and send a reader back to the first event it kept
 * (every event after it again): so the log is called missing only when three looks in a row find neither file.
 */
async function openToRead(file: string): Promise<FileHandle | 'compacting' | 'missing'> {
  for (let look = 1; ; look += 1) {
    try {
      return await open(file, 'r');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    }
    if (await isCompacting(file)) return 'compacting';
    if (look >= 3) return 'missing';
  }
}

/**
 * Creates a conversation's log where there is none, holding the compaction's set-aside name (`.compacting`) while it
 * does: a compaction holds that name from before it takes the log's name away until after it publishes the new log,
 * so while a writer holds it none is under way and none starts. Creating the log on a name a compaction had just
 * freed would restart the offsets at 0 and lose every event before. False when a compaction holds the name (wait for
 * it); true when the log is there now, made here or by someone else meanwhile.
 */
async function createLog(file: string): Promise<boolean> {
  const fresh = scratchFileOf(file);
  await (await open(fresh, 'wx', 0o600)).close();
  const aside = compactingFile(file);
  try {
    try {
      await link(fresh, aside);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'EEXIST') return false;
      throw error;
    }
    try {
      await link(fresh, file);
    } catch (error) {
      // Made by another writer, or published by a compaction that ended just before this one took the name.
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    } finally {
      // Only while it is still this writer's (a recovery may have put it in place as the log meanwhile).
      const [held, made] = await Promise.all([stat(aside).catch(() => undefined), stat(fresh)]);
      if (held?.ino === made.ino) await unlink(aside).catch(() => {});
    }
    return true;
  } finally {
    await unlink(fresh).catch(() => {});
  }
}
