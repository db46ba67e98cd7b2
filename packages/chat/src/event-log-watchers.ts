import { type FSWatcher, watch } from 'node:fs';
import { stat } from 'node:fs/promises';
import path from 'node:path';

/** What a conversation's watcher read in one go: the entries after `from`, up to `next` (a line boundary). */
export interface LogBatch<Entry> {
  /** Where the read started; a log cut shorter than where its watcher was (removed by hand) starts again at 0. */
  from: number;
  next: number;
  entries: Entry[];
  /** The log was cut shorter than the watcher had read (removed or rewritten by hand): it was read from 0. */
  restarted: boolean;
}

/** One follower of a conversation: told of every batch its conversation's watcher read. */
export interface LogSubscriber<Entry> {
  deliver(batch: LogBatch<Entry>): void;
}

export interface EventLogWatchersOptions<Entry> {
  directory: string;
  /** The log file of a conversation, and the conversation a file name in `directory` belongs to. */
  file(conversationId: string): string;
  conversationOf(fileName: string): string | undefined;
  /** Reads a conversation's entries from `fromOffset`, as ChatEventLog.read does, saying where it really started. */
  /** `more`: the read stopped at its size limit before the end; the watcher reads on from `next` at once. */
  read(
    conversationId: string,
    fromOffset: number,
  ): Promise<{ start: number; next: number; entries: Entry[]; more?: boolean }>;
  /**
   * How often each followed conversation's size is looked at when the folder watcher works (a safety net for a
   * change it missed), and when it could not be started (then the poll is all there is). @default 2_000 and 250
   */
  pollMs?: { watching: number; unwatched: number };
}

/** One followed conversation: its subscribers, and how far its one reader has read. */
interface Followed<Entry> {
  subscribers: Set<LogSubscriber<Entry>>;
  /** Unknown until the first subscriber caught up (a line boundary it read to). */
  offset: number | undefined;
  reading: boolean;
  again: boolean;
}

/**
 * One watcher per conversation, fanned out to every follower: however many streams follow a conversation (browser
 * tabs, API clients, the CLI), one folder watcher wakes its one reader, which reads each new line once and hands
 * the batch to all of them. A poll per followed conversation (not per follower) covers a change the watcher missed,
 * slowly while the watcher works and quickly when it could not be started. Everything is started by the first
 * follower and stopped when the last one leaves.
 */
export class EventLogWatchers<Entry> {
  readonly #options: EventLogWatchersOptions<Entry>;
  readonly #followed = new Map<string, Followed<Entry>>();
  #watcher: FSWatcher | undefined;
  #poll: NodeJS.Timeout | undefined;
  #looking = false;

  constructor(options: EventLogWatchersOptions<Entry>) {
    this.#options = options;
  }

  /** How many conversations are followed now (for tests and figures). */
  get conversations(): number {
    return this.#followed.size;
  }

  /** Adds a follower of a conversation; the returned function removes it. */
  subscribe(conversationId: string, subscriber: LogSubscriber<Entry>): () => void {
    let followed = this.#followed.get(conversationId);
    if (!followed) {
      followed = { subscribers: new Set(), offset: undefined, reading: false, again: false };
      this.#followed.set(conversationId, followed);
      if (this.#followed.size === 1) this.#start();
    }
    followed.subscribers.add(subscriber);
    const entry = followed;
    return () => {
      entry.subscribers.delete(subscriber);
      if (entry.subscribers.size > 0 || this.#followed.get(conversationId) !== entry) return;
      this.#followed.delete(conversationId);
      if (this.#followed.size === 0) this.#stop();
    };
  }

  /**
   * A follower caught up to `offset` (a line boundary) by reading on its own: the conversation's reader starts there
   * if it has not started yet, and looks once for what came meanwhile.
   */
  caughtUp(conversationId: string, offset: number): void {
    const followed = this.#followed.get(conversationId);
    if (!followed) return;
    if (followed.offset === undefined) followed.offset = offset;
    this.#wake(conversationId);
  }

  #start(): void {
    let watching = false;
    try {
      this.#watcher = watch(this.#options.directory, (_event, name) => {
        if (name === null) {
          for (const conversationId of this.#followed.keys()) this.#wake(conversationId);
          return;
        }
        const conversationId = this.#options.conversationOf(String(name));
        if (conversationId !== undefined && this.#followed.has(conversationId)) this.#wake(conversationId);
      });
      // A watcher that breaks (the folder removed) leaves the poll to find changes.
      this.#watcher.on('error', () => {});
      watching = true;
    } catch {
      // No watching on this file system: the poll below is all there is.
    }
    const pollMs = this.#options.pollMs ?? { watching: 2_000, unwatched: 250 };
    this.#poll = setInterval(() => void this.#look(), watching ? pollMs.watching : pollMs.unwatched);
    this.#poll.unref();
  }

  #stop(): void {
    this.#watcher?.close();
    this.#watcher = undefined;
    clearInterval(this.#poll);
    this.#poll = undefined;
  }

  /** The poll: one stat per followed conversation, and a read only where the size moved. */
  async #look(): Promise<void> {
    // A look that outlasts the interval (thousands of conversations on a slow disk) is not started twice.
    if (this.#looking) return;
    this.#looking = true;
    try {
      for (const [conversationId, followed] of this.#followed) {
        if (followed.offset === undefined || followed.reading) continue;
        const size = await stat(this.#options.file(conversationId)).then(
          (stats) => stats.size,
          () => 0,
        );
        if (size !== followed.offset) this.#wake(conversationId);
      }
    } finally {
      this.#looking = false;
    }
  }

  /** Reads what is new once (again if woken meanwhile) and hands it to every follower. */
  #wake(conversationId: string): void {
    const followed = this.#followed.get(conversationId);
    if (!followed || followed.offset === undefined) return;
    if (followed.reading) {
      followed.again = true;
      return;
    }
    followed.reading = true;
    void (async () => {
      try {
        do {
          followed.again = false;
          const from = followed.offset ?? 0;
          const read = await this.#options.read(conversationId, from);
          followed.offset = read.next;
          if (read.more) followed.again = true;
          const restarted = read.start < from;
          if (read.entries.length === 0 && !restarted) continue;
          const batch: LogBatch<Entry> = { from: read.start, next: read.next, entries: read.entries, restarted };
          for (const subscriber of followed.subscribers) subscriber.deliver(batch);
        } while (followed.again && this.#followed.get(conversationId) === followed);
      } catch {
        // A read that failed (the file is being replaced): the next change or poll tries again.
      } finally {
        followed.reading = false;
      }
    })();
  }
}

/** The conversation a log file name belongs to: `<id>.jsonl`. */
export function conversationOfLogFile(fileName: string): string | undefined {
  const base = path.basename(fileName);
  return base.endsWith('.jsonl') ? base.slice(0, -'.jsonl'.length) : undefined;
}
