import { watch } from 'node:fs';
import { mkdir, open, stat } from 'node:fs/promises';
import path from 'node:path';
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
}

/** Longest line read back; a longer one (written by hand) is skipped. */
const maxLineBytes = 1024 * 1024;

/**
 * The append-only event log of each conversation, `directory/<conversation id>.jsonl`: one JSON object per line,
 * appended with O_APPEND in a single write so lines of concurrent writers (server and worker) stay whole. Readers
 * follow it from a byte offset, so a client that reconnects with the last offset it saw misses nothing and sees
 * nothing twice. The log is for live delivery; the transcript note is the record.
 */
export class ChatEventLog {
  readonly directory: string;

  constructor(options: ChatEventLogOptions) {
    this.directory = path.resolve(options.directory);
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
   * The whole events written after `fromOffset`, and the offset to read from next (a line still being written
   * is left for the next read). An offset past the end (a log removed by hand) starts again from 0.
   */
  async read(conversationId: string, fromOffset = 0): Promise<{ entries: ChatEventEntry[]; next: number }> {
    const file = this.file(conversationId);
    let handle: Awaited<ReturnType<typeof open>>;
    try {
      handle = await open(file, 'r');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return { entries: [], next: 0 };
      throw error;
    }
    try {
      const size = (await handle.stat()).size;
      const start = fromOffset > size ? 0 : Math.max(0, fromOffset);
      if (size === start) return { entries: [], next: start };
      const buffer = Buffer.alloc(size - start);
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
      return { entries, next: start + lineStart };
    } finally {
      await handle.close();
    }
  }

  /**
   * Yields events after `fromOffset` as they are appended, until `signal` aborts: a watcher on the folder wakes it
   * at once, a poll every `pollMs` covers file systems where watching does not work.
   */
  async *follow(
    conversationId: string,
    options: { fromOffset?: number; signal: AbortSignal; pollMs?: number },
  ): AsyncGenerator<ChatEventEntry> {
    const file = this.file(conversationId);
    await mkdir(this.directory, { recursive: true, mode: 0o700 });
    let offset = options.fromOffset ?? 0;
    // Set by the watcher; checked before sleeping, so a line appended while the last read ran is not slept over.
    let changed = false;
    let wake: (() => void) | undefined;
    let watcher: ReturnType<typeof watch> | undefined;
    try {
      watcher = watch(this.directory, (_event, name) => {
        if (name !== null && name !== path.basename(file)) return;
        changed = true;
        wake?.();
      });
      watcher.on('error', () => {});
    } catch {
      // The poll below still finds new lines.
    }
    try {
      while (!options.signal.aborted) {
        changed = false;
        const { entries, next } = await this.read(conversationId, offset);
        offset = next;
        for (const entry of entries) {
          if (options.signal.aborted) return;
          yield entry;
        }
        if (entries.length > 0 || changed) continue;
        await new Promise<void>((resolve) => {
          const done = () => {
            clearTimeout(timer);
            options.signal.removeEventListener('abort', done);
            wake = undefined;
            resolve();
          };
          const timer = setTimeout(done, options.pollMs ?? 250);
          wake = done;
          options.signal.addEventListener('abort', done, { once: true });
        });
      }
    } finally {
      watcher?.close();
    }
  }
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
