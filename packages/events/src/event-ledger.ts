import { createHash } from 'node:crypto';
import { watch } from 'node:fs';
import { appendFile, mkdir, open, readdir, readFile, rm, stat, truncate } from 'node:fs/promises';
import path from 'node:path';
import { AssistantError } from '@assistant/errors';
import { withFileLock } from '@assistant/notes';
import { EventRegistry } from './event-registry.ts';
import type { EventInput, EventPage, EventQuery, EventRecord, EventSink } from './event-types.ts';

/** What an emit stored, or found stored already. */
type EmitOutcome = { event: EventRecord; duplicate: boolean };

/** An emit waiting for its batch: its line, and the promise to settle once the line is on disk. */
interface PendingEmit {
  id: string;
  line: string;
  resolve: (outcome: EmitOutcome) => void;
  reject: (error: unknown) => void;
}

/** An event with where it ends in the ledger: pass `cursor` as `after` to read what comes next. */
export type LedgerEvent = EventRecord & { cursor: string };

export interface EventLedgerOptions {
  /** `data/events`. */
  directory: string;
  /** @default the built-in types only */
  registry?: EventRegistry;
  /** Whole days older than this are removed by `prune`. @default 90 */
  retentionDays?: number;
  /** A torn line repaired, an unreadable line skipped. */
  warn?: (message: string, details?: Record<string, unknown>) => void;
  /** @default () => Date.now() */
  now?: () => number;
  /** How often `follow` looks when no file event came. @default 250 */
  pollMs?: number;
}

const dayPattern = /^(\d{4}-\d{2}-\d{2})\.jsonl$/;
const cursorPattern = /^(\d{4}-\d{2}-\d{2}):(\d{1,15})$/;
/** Days before today whose ids a new event is checked against (see `#catchUp`). */
const dedupWindowDays = 2;
/** The longest line the ledger writes: a producer's payload is cut to this, not the ledger broken by it. */
const maxLineBytes = 64 * 1024;
/** How many lines, and how many bytes at a time, a read of a day takes: long days are read a batch at a time. */
const readBatchLines = 2_000;
const readPieceBytes = 1024 * 1024;

/** `ev-` and the first 20 hex digits of sha256(type NUL source NUL native id): the same thing is the same event. */
export function eventId(type: string, source: string, nativeId: string): string {
  return `ev-${createHash('sha256').update(`${type}\0${source}\0${nativeId}`).digest('hex').slice(0, 20)}`;
}

/** Orders two cursors (`YYYY-MM-DD:<offset>`): negative when `a` comes first. */
export function compareCursors(a: string, b: string): number {
  const left = parseCursor(a);
  const right = parseCursor(b);
  if (left.day !== right.day) return left.day < right.day ? -1 : 1;
  return left.offset - right.offset;
}

export function parseCursor(cursor: string): { day: string; offset: number } {
  const match = cursorPattern.exec(cursor);
  if (!match) {
    throw new AssistantError('EVENT_CURSOR_INVALID', `"${cursor}" is not an event cursor`, {
      hint: 'a cursor looks like 2026-11-28:1234 (a day and a byte offset), as the ledger returns them',
    });
  }
  return { day: match[1] as string, offset: Number(match[2]) };
}

/**
 * The event ledger: `data/events/YYYY-MM-DD.jsonl`, one JSON event per line, appended (UTC day of the append) and
 * fsynced before `emit` returns. Server and worker both append: a short lock (`data/events/.append.lock`) around
 * "is this id stored? then append" makes the same id stored once across processes. Beside each day,
 * `index/YYYY-MM-DD.idx` holds `id type offset` per event for lookups by id; the JSONL is the truth, and a lookup
 * the index misses (a crash between an append and its index line) reads the day itself. A line torn by a crash mid-append is moved to `YYYY-MM-DD.torn` and
 * cut off at the next append (readers never see past the last newline).
 */
export class EventLedger implements EventSink {
  readonly directory: string;
  readonly registry: EventRegistry;
  readonly retentionDays: number;
  readonly #options: EventLedgerOptions;
  /** Ids seen per day, and how far into that day's file they were read, in this process. */
  readonly #ids = new Map<string, { ids: Map<string, number>; scanned: number }>();
  #loadedDays = false;
  /** The latest day file this process appended to or saw (`#appendDay`). */
  #latestDay: string | undefined;
  /** Emits waiting for the next batch (see `#flush`), and the batch being written, if any. */
  #waiting: PendingEmit[] = [];
  #flushing: Promise<void> | undefined;
  #madeIndexDirectory = false;

  constructor(options: EventLedgerOptions) {
    this.directory = options.directory;
    this.registry = options.registry ?? new EventRegistry();
    this.retentionDays = options.retentionDays ?? 90;
    this.#options = options;
  }

  #now(): number {
    return (this.#options.now ?? Date.now)();
  }

  #file(day: string): string {
    return path.join(this.directory, `${day}.jsonl`);
  }

  #indexFile(day: string): string {
    return path.join(this.directory, 'index', `${day}.idx`);
  }

  async emit(input: EventInput): Promise<EmitOutcome> {
    const id = eventId(input.type, input.source, input.nativeId);
    const problem = this.registry.check(input.type, input.data);
    const event: EventRecord = {
      id,
      type: input.type,
      at: input.at ?? new Date(this.#now()).toISOString(),
      source: input.source,
      native_id: input.nativeId,
      ...(input.causedBy && input.causedBy.length > 0 ? { caused_by: [...input.causedBy] } : {}),
      data: input.data,
      ...(problem === undefined ? {} : { problem }),
    };
    let line = `${JSON.stringify(event)}\n`;
    if (Buffer.byteLength(line) > maxLineBytes) {
      const cut: EventRecord = {
        ...event,
        data: {},
        problem: `the payload was over ${maxLineBytes} bytes and was left out`,
      };
      line = `${JSON.stringify(cut)}\n`;
    }
    return new Promise((resolve, reject) => {
      this.#waiting.push({ id, line, resolve, reject });
      this.#flushing ??= this.#flush();
    });
  }

  /**
   * Group commit: every emit that arrives while a batch is being written joins the next batch, which takes the append
   * lock once, catches up once, and writes and fsyncs its lines in one append. Each emit still resolves only once its
   * own line is on disk, so "written, and fsynced, before what produced it is acknowledged" holds; a worker running
   * eight tasks pays about one fsync (and one lock, one catch-up) per batch instead of one per task.
   */
  async #flush(): Promise<void> {
    try {
      while (this.#waiting.length > 0) {
        const batch = this.#waiting;
        this.#waiting = [];
        try {
          const outcomes = await this.#append(batch);
          for (const [index, waiter] of batch.entries()) waiter.resolve(outcomes[index] as EmitOutcome);
        } catch (error) {
          for (const waiter of batch) waiter.reject(error);
        }
      }
    } finally {
      this.#flushing = undefined;
    }
  }

  /** Appends a batch's new lines under the lock; a line whose id is stored (or earlier in the batch) is a duplicate. */
  async #append(batch: readonly PendingEmit[]): Promise<EmitOutcome[]> {
    if (!this.#madeIndexDirectory) {
      await mkdir(path.join(this.directory, 'index'), { recursive: true, mode: 0o700 });
      this.#madeIndexDirectory = true;
    }
    return withFileLock(path.join(this.directory, '.append'), async () => {
      const day = await this.#appendDay();
      const seen = await this.#catchUp(day);
      const outcomes: (EmitOutcome | undefined)[] = [];
      const fresh: { index: number; line: string; id: string }[] = [];
      const inBatch = new Map<string, number>();
      for (const [index, waiter] of batch.entries()) {
        const stored = inBatch.has(waiter.id) ? undefined : await this.#find(waiter.id);
        if (stored) outcomes[index] = { event: stored, duplicate: true };
        else if (!inBatch.has(waiter.id)) {
          inBatch.set(waiter.id, index);
          fresh.push({ index, line: waiter.line, id: waiter.id });
        }
      }
      if (fresh.length > 0) {
        const file = this.#file(day);
        let offset = await this.#repairTail(day, seen);
        const handle = await open(file, 'a', 0o600);
        try {
          await handle.write(fresh.map((entry) => entry.line).join(''));
          await handle.sync();
        } finally {
          await handle.close();
        }
        const known = this.#dayIds(day);
        let indexLines = '';
        for (const entry of fresh) {
          const event = JSON.parse(entry.line) as EventRecord;
          indexLines += `${entry.id} ${event.type} ${offset}\n`;
          known.ids.set(entry.id, offset);
          offset += Buffer.byteLength(entry.line);
          outcomes[entry.index] = { event, duplicate: false };
        }
        known.scanned = offset;
        // The index is a convenience: written after the events are durable, rebuilt from the JSONL when it lags.
        await appendFile(this.#indexFile(day), indexLines, { mode: 0o600 }).catch(() => {});
      }
      // The same id twice in one batch: the later ones are duplicates of the first, as if they had come after it.
      for (const [index, waiter] of batch.entries()) {
        if (outcomes[index] !== undefined) continue;
        const first = outcomes[inBatch.get(waiter.id) as number] as EmitOutcome;
        outcomes[index] = { event: JSON.parse(JSON.stringify(first.event)) as EventRecord, duplicate: true };
      }
      return outcomes as EmitOutcome[];
    });
  }

  /**
   * The day file new lines go to: today's (UTC), or a later day's that exists already. A wall clock set back across
   * midnight (an NTP step) would otherwise append to an earlier file than one a reader has moved past: `list` and
   * `follow` read the days in order from a cursor, and would never see those lines (a hook would never fire). A later
   * file is found by this process's own appends, the folder's listing at the first append, and — in the last hour of
   * a UTC day, where a clock set back by up to an hour lands — a stat of tomorrow's (another process's appends).
   */
  async #appendDay(): Promise<string> {
    const nowMs = this.#now();
    const today = new Date(nowMs).toISOString().slice(0, 10);
    if (this.#latestDay === undefined) this.#latestDay = (await this.days()).at(-1) ?? today;
    else if (this.#latestDay <= today && nowMs % 86_400_000 >= 23 * 3_600_000) {
      const tomorrow = new Date(nowMs + 86_400_000).toISOString().slice(0, 10);
      if (
        await stat(this.#file(tomorrow)).then(
          () => true,
          () => false,
        )
      )
        this.#latestDay = tomorrow;
    }
    if (today > this.#latestDay) this.#latestDay = today;
    return this.#latestDay;
  }

  #dayIds(day: string): { ids: Map<string, number>; scanned: number } {
    let known = this.#ids.get(day);
    if (!known) {
      known = { ids: new Map(), scanned: 0 };
      this.#ids.set(day, known);
    }
    return known;
  }

  /**
   * Reads what other processes appended since this one last looked, over the dedup window: today and the two days
   * before. A source that reports the same thing again days later (a mail moved back into the inbox) makes a new
   * line; hooks still fire once for it, by their firing records. Keeping every retained day's ids would cost a busy
   * installation hundreds of MB read at start.
   */
  async #catchUp(appendDay: string): Promise<Map<string, number | undefined>> {
    const nowMs = this.#now();
    const today = new Date(nowMs).toISOString().slice(0, 10);
    const oldest = new Date(nowMs - dedupWindowDays * 86_400_000).toISOString().slice(0, 10);
    // The window's days by name, oldest first, rather than a listing of the folder: a stat each, once per batch.
    const days = Array.from({ length: dedupWindowDays + 1 }, (_, back) =>
      new Date(nowMs - (dedupWindowDays - back) * 86_400_000).toISOString().slice(0, 10),
    );
    // A later day than today, when the clock was set back (`#appendDay`): its ids count for dedup too.
    if (appendDay > today) days.push(appendDay);
    for (const day of this.#ids.keys()) if (day < oldest) this.#ids.delete(day);
    /** The size of each day's file as it was read to its end now (undefined: there is none). */
    const sizes = new Map<string, number | undefined>();
    for (const day of days) {
      if (this.#loadedDays && day < today && this.#ids.has(day)) continue;
      const size = (await stat(this.#file(day)).catch(() => undefined))?.size;
      if (size === undefined) {
        sizes.set(day, undefined);
        continue;
      }
      const known = this.#dayIds(day);
      // Nothing appended since this process last looked (the common case): the file is not opened.
      if (size !== known.scanned) {
        for await (const entry of this.#eachLine(day, known.scanned)) {
          if (entry.event) known.ids.set(entry.event.id, entry.offset);
          known.scanned = entry.end;
        }
      }
      if (known.scanned === size) sizes.set(day, size);
    }
    this.#loadedDays = true;
    return sizes;
  }

  async #find(id: string): Promise<EventRecord | undefined> {
    for (const [day, known] of this.#ids) {
      const offset = known.ids.get(id);
      if (offset === undefined) continue;
      const { lines } = await this.#readLines(day, offset, 1);
      if (!lines[0]?.event) return undefined;
      const { cursor: _cursor, ...event } = lines[0].event;
      return event;
    }
    return undefined;
  }

  /**
   * The day file's length once a torn last line (a crash mid-append) is cut off and kept in `YYYY-MM-DD.torn`.
   * Only called under the append lock: no other writer is mid-line.
   */
  async #repairTail(day: string, seen: Map<string, number | undefined>): Promise<number> {
    // Looked at under this lock a moment ago by #catchUp, and read to its end: no file, or one ending in a newline.
    if (seen.has(day)) return seen.get(day) ?? 0;
    const file = this.#file(day);
    const info = await stat(file).catch(() => undefined);
    if (!info || info.size === 0) return 0;
    const handle = await open(file, 'r');
    let keep: number;
    let torn: Buffer;
    try {
      const last = Buffer.alloc(1);
      await handle.read(last, 0, 1, info.size - 1);
      if (last[0] === 10) return info.size;
      const tail = Math.min(info.size, maxLineBytes * 2);
      const buffer = Buffer.alloc(tail);
      await handle.read(buffer, 0, tail, info.size - tail);
      const newline = buffer.lastIndexOf(10);
      keep = newline < 0 ? info.size - tail : info.size - tail + newline + 1;
      torn = buffer.subarray(newline + 1);
    } finally {
      await handle.close();
    }
    await appendFile(path.join(this.directory, `${day}.torn`), Buffer.concat([torn, Buffer.from('\n')]), {
      mode: 0o600,
    });
    await truncate(file, keep);
    this.#options.warn?.(
      `repaired a torn last line in data/events/${day}.jsonl (${torn.length} bytes kept in ${day}.torn)`,
      {
        day,
        bytes: torn.length,
      },
    );
    return keep;
  }

  /**
   * The complete lines of a day from `from`, parsed, at most `limit` of them; an unreadable line is skipped (and
   * reported once). The file is read a piece at a time, only as far as the lines asked for: a caller that wants the
   * rest asks again from `end`, so a long day is never read whole into memory.
   */
  async #readLines(
    day: string,
    from: number,
    limit = readBatchLines,
  ): Promise<{ lines: { event?: LedgerEvent; offset: number }[]; end: number }> {
    const lines: { event?: LedgerEvent; offset: number }[] = [];
    let end = from;
    let handle: Awaited<ReturnType<typeof open>>;
    try {
      handle = await open(this.#file(day), 'r');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return { lines, end };
      throw error;
    }
    try {
      const size = (await handle.stat()).size;
      // What is left of the previous piece: the start of a line that goes on in the next one.
      let carry = Buffer.alloc(0);
      let position = from;
      while (position < size && lines.length < limit) {
        const piece = Buffer.alloc(Math.min(readPieceBytes, size - position));
        const { bytesRead } = await handle.read(piece, 0, piece.length, position);
        if (bytesRead === 0) break;
        const buffer =
          carry.length > 0 ? Buffer.concat([carry, piece.subarray(0, bytesRead)]) : piece.subarray(0, bytesRead);
        const base = position - carry.length;
        position += bytesRead;
        let start = 0;
        while (lines.length < limit) {
          const newline = buffer.indexOf(10, start);
          if (newline < 0) break;
          const offset = base + start;
          end = base + newline + 1;
          const text = buffer.subarray(start, newline).toString('utf8');
          start = newline + 1;
          if (text.trim() === '') continue;
          try {
            const event = JSON.parse(text) as EventRecord;
            lines.push({ event: { ...event, cursor: `${day}:${end}` }, offset });
          } catch {
            this.#options.warn?.(`skipped an unreadable line in data/events/${day}.jsonl at byte ${offset}`, {
              day,
              offset,
            });
            lines.push({ offset });
          }
        }
        carry = Buffer.from(buffer.subarray(start));
      }
    } finally {
      await handle.close();
    }
    return { lines, end };
  }

  /** Every complete line of a day from `from`, a batch at a time (see #readLines). */
  async *#eachLine(day: string, from: number): AsyncGenerator<{ event?: LedgerEvent; offset: number; end: number }> {
    let position = from;
    for (;;) {
      const { lines, end } = await this.#readLines(day, position);
      for (const [index, line] of lines.entries()) yield { ...line, end: lines[index + 1]?.offset ?? end };
      if (lines.length < readBatchLines || end === position) return;
      position = end;
    }
  }

  /** The days that have a ledger file, oldest first. */
  async days(): Promise<string[]> {
    let names: string[];
    try {
      names = await readdir(this.directory);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
      throw error;
    }
    return names.flatMap((name) => dayPattern.exec(name)?.[1] ?? []).sort();
  }

  /** Events in the order appended, filtered and paged. */
  async list(query: EventQuery = {}): Promise<EventPage> {
    const limit = Math.max(1, Math.min(query.limit ?? 100, 10_000));
    const after = query.after === undefined ? undefined : parseCursor(query.after);
    const since = query.since === undefined ? undefined : Date.parse(query.since);
    const until = query.until === undefined ? undefined : Date.parse(query.until);
    const types = query.types && query.types.length > 0 ? new Set(query.types) : undefined;
    const events: LedgerEvent[] = [];
    for (const day of await this.days()) {
      if (after && day < after.day) continue;
      // A day's file holds events appended that day: one ending before `since` is skipped whole.
      if (since !== undefined && Date.parse(`${day}T23:59:59.999Z`) < since) continue;
      if (until !== undefined && Date.parse(`${day}T00:00:00.000Z`) > until) break;
      const from = after && day === after.day ? after.offset : 0;
      for await (const { event } of this.#eachLine(day, from)) {
        if (!event) continue;
        const at = Date.parse(event.at);
        if (types && !types.has(event.type)) continue;
        if (since !== undefined && at < since) continue;
        if (until !== undefined && at > until) continue;
        events.push(event);
        if (events.length === limit) return { events, next: event.cursor };
      }
    }
    return { events };
  }

  /** The event with this id, if the ledger holds it. */
  async get(id: string): Promise<LedgerEvent | undefined> {
    if (!/^ev-[0-9a-f]{20}$/.test(id)) return undefined;
    for (const day of (await this.days()).reverse()) {
      const index = await readFile(this.#indexFile(day), 'utf8').catch(() => '');
      const hit = index.split('\n').find((entry) => entry.startsWith(`${id} `));
      if (hit) {
        const offset = Number(hit.split(' ')[2]);
        const { lines } = await this.#readLines(day, offset, 1);
        if (lines[0]?.event?.id === id) return lines[0].event;
      }
      // The index lags (a crash between the append and its index line): the day itself is the truth.
      for await (const entry of this.#eachLine(day, 0)) if (entry.event?.id === id) return entry.event;
    }
    return undefined;
  }

  /** The cursor after the last complete event: follow from here to see only what comes next. */
  async end(): Promise<string> {
    const days = await this.days();
    const day = days.at(-1) ?? new Date(this.#now()).toISOString().slice(0, 10);
    return `${day}:${await lastLineEnd(this.#file(day))}`;
  }

  /** Every event after `after` (default: the end now), then new ones as any process appends them, until `signal`. */
  async *follow(options: { after?: string; signal: AbortSignal }): AsyncGenerator<LedgerEvent> {
    let cursor = options.after ?? (await this.end());
    let wake: (() => void) | undefined;
    let watcher: ReturnType<typeof watch> | undefined;
    try {
      await mkdir(this.directory, { recursive: true, mode: 0o700 });
      watcher = watch(this.directory, () => wake?.());
      watcher.on('error', () => {});
    } catch {
      // The poll still finds new events.
    }
    try {
      while (!options.signal.aborted) {
        const page = await this.list({ after: cursor, limit: 500 });
        for (const event of page.events) {
          cursor = event.cursor;
          yield event;
          if (options.signal.aborted) return;
        }
        if (page.next) continue;
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, this.#options.pollMs ?? 250);
          wake = () => {
            clearTimeout(timer);
            resolve();
          };
          options.signal.addEventListener('abort', wake, { once: true });
        });
        wake = undefined;
      }
    } finally {
      watcher?.close();
    }
  }

  /** Removes whole days older than the retention; returns the days removed. */
  async prune(): Promise<string[]> {
    const oldest = new Date(this.#now() - this.retentionDays * 86_400_000).toISOString().slice(0, 10);
    const removed: string[] = [];
    for (const day of await this.days()) {
      if (day >= oldest) break;
      await rm(this.#file(day), { force: true });
      await rm(this.#indexFile(day), { force: true });
      await rm(path.join(this.directory, `${day}.torn`), { force: true });
      this.#ids.delete(day);
      removed.push(day);
    }
    return removed;
  }
}

/** The offset just after the last newline of a file (0 without one, or without the file), read from its end. */
async function lastLineEnd(file: string): Promise<number> {
  let handle: Awaited<ReturnType<typeof open>>;
  try {
    handle = await open(file, 'r');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return 0;
    throw error;
  }
  try {
    const piece = Buffer.alloc(64 * 1024);
    for (let stop = (await handle.stat()).size; stop > 0; ) {
      const start = Math.max(0, stop - piece.length);
      const { bytesRead } = await handle.read(piece, 0, stop - start, start);
      const newline = piece.subarray(0, bytesRead).lastIndexOf(10);
      if (newline >= 0) return start + newline + 1;
      stop = start;
    }
    return 0;
  } finally {
    await handle.close();
  }
}
