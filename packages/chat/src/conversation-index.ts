import { appendFile, mkdir, open, readdir, readFile, rename, stat } from 'node:fs/promises';
import path from 'node:path';
import { AssistantError } from '@assistant/errors';
import type { ConversationSummary } from './conversation-store.ts';

/**
 * Where the conversation list's index lives and which folder it indexes: `data/chat/index/conversations.json` (the
 * snapshot) and `changes.jsonl` (the writers' journal), over the notes' `chats/` folder on disk.
 */
export interface ConversationIndexPaths {
  /** `data/chat/index`. */
  directory: string;
  /** The conversation notes' folder on disk (`notes/chats`). */
  folder: string;
  /** The folder as notes name it (`chats`): a summary's `path` is `<notesFolder>/<id>.md`. */
  notesFolder: string;
}

/** One line of the journal: a conversation note written, and the folder's mtime just before and after. */
interface ChangeLine {
  id: string;
  before: number;
  after: number;
}

/**
 * The writers' half of the index: ConversationStore wraps each write of a conversation note in `around`, which
 * appends `{id, before, after}` (the chats folder's mtime before and after the write) to the journal. The reader
 * re-reads only the conversations the journal names, and finds a change nobody journaled (a person's edit, a
 * remote worker's write) by the folder mtimes not chaining up.
 */
export class ConversationChanges {
  readonly #paths: ConversationIndexPaths;

  constructor(paths: ConversationIndexPaths) {
    this.#paths = paths;
  }

  get journal(): string {
    return path.join(this.#paths.directory, 'changes.jsonl');
  }

  async around<T>(conversationId: string, write: () => Promise<T>): Promise<T> {
    const before = await folderMtimeMs(this.#paths.folder);
    const result = await write();
    const after = await folderMtimeMs(this.#paths.folder);
    try {
      await mkdir(this.#paths.directory, { recursive: true, mode: 0o700 });
      await appendFile(this.journal, `${JSON.stringify({ id: conversationId, before, after })}\n`, { mode: 0o600 });
    } catch {
      // The note is written; an index that missed it finds the change by the folder's mtime and rescans.
    }
    return result;
  }
}

/** One indexed conversation, or a note that could not be read, with the file's mtime and size when it was read. */
interface IndexEntry {
  file: string;
  mtimeMs: number;
  size: number;
  summary?: ConversationSummary;
  broken?: string;
}

/** The snapshot written to `conversations.json`. */
interface Snapshot {
  version: 1;
  /** The chats folder's mtime the snapshot is current for. */
  folderMtimeMs: number;
  /** How far into the journal the snapshot has taken in. */
  journalOffset: number;
  entries: IndexEntry[];
}

/** Refuses a limit out of range or a cursor no page gave, before any work. */
function checkPageOptions(options: { limit?: number; cursor?: string }): void {
  const limit = options.limit ?? defaultLimit;
  if (!Number.isInteger(limit) || limit < 1 || limit > maxConversationPageLimit) {
    throw new AssistantError(
      'CHAT_INPUT_INVALID',
      `limit: expected a whole number 1–${maxConversationPageLimit}, got ${limit}`,
    );
  }
  if (options.cursor !== undefined) decodeCursor(options.cursor);
}

/** A page of conversations already sorted newest first: `limit` after the one `cursor` names. */
export function pageOf(
  sorted: readonly ConversationSummary[],
  broken: string[],
  options: { limit?: number; cursor?: string },
): ConversationPage {
  checkPageOptions(options);
  const limit = options.limit ?? defaultLimit;
  const start = options.cursor === undefined ? 0 : firstAfter(sorted, decodeCursor(options.cursor));
  const chats = sorted.slice(start, start + limit);
  const last = chats.at(-1);
  const nextCursor = last !== undefined && start + limit < sorted.length ? encodeCursor(last) : null;
  return { chats, broken, nextCursor };
}

/** Bytes of journal past which the reader starts a new one (the snapshot holds everything it said). */
const journalRotateBytes = 1024 * 1024;
const defaultLimit = 50;
export const maxConversationPageLimit = 500;

/** What `page` answers: a page of conversations newest first, and the cursor of the next page (null at the end). */
export interface ConversationPage {
  chats: ConversationSummary[];
  /** Notes under the folder that cannot be read: their messages (all of them, on every page). */
  broken: string[];
  nextCursor: string | null;
}

export interface ConversationIndexOptions extends ConversationIndexPaths {
  /** Reads one conversation note's summary (ConversationStore.summaryOf); CHAT_NOTE_BROKEN when it cannot. */
  readSummary: (notePath: string) => Promise<ConversationSummary | undefined>;
}

/**
 * The conversation list served from an index rather than by reading every conversation note: a derived file under
 * `data/chat/index/` that can be deleted at any time (it is rebuilt, reading every note once). A list first looks
 * at the chats folder's mtime: unchanged, it answers from memory; changed, it re-reads only the conversations the
 * writers' journal names, or — when the journal does not account for the change (a person edited a note, or
 * the journal was lost) — looks at every note's mtime and size and re-reads those that changed.
 */
export class ConversationIndex {
  readonly #options: ConversationIndexOptions;
  #memory: { snapshot: Snapshot; sorted: ConversationSummary[]; broken: string[] } | undefined;
  #chain: Promise<void> = Promise.resolve();

  constructor(options: ConversationIndexOptions) {
    this.#options = options;
  }

  get file(): string {
    return path.join(this.#options.directory, 'conversations.json');
  }

  get #journal(): string {
    return path.join(this.#options.directory, 'changes.jsonl');
  }

  /**
   * Conversations newest first (by `updated`, then `created`, then id), `limit` at a time from `cursor` (the
   * `nextCursor` of the page before).
   */
  async page(options: { limit?: number; cursor?: string } = {}): Promise<ConversationPage> {
    // Checked before the index is brought up to date: a bad request costs nothing.
    checkPageOptions(options);
    await this.#current();
    return pageOf(this.#memory?.sorted ?? [], this.#memory?.broken ?? [], options);
  }

  /** Every conversation, newest first (the whole index). */
  async all(): Promise<ConversationPage> {
    await this.#current();
    return { chats: [...(this.#memory?.sorted ?? [])], broken: this.#memory?.broken ?? [], nextCursor: null };
  }

  /**
   * Brings the index up to date. Calls run one after another in this process (a chain, not a flag checked across an
   * await), so two lists at once never refresh, or write the snapshot, at the same time.
   */
  #current(): Promise<void> {
    const run = this.#chain.then(async () => {
      const folderMtime = await folderMtimeMs(this.#options.folder);
      if (this.#memory && this.#memory.snapshot.folderMtimeMs === folderMtime) return;
      await this.#refresh(folderMtime);
    });
    // A refresh that failed fails its own caller; the next one starts afresh.
    this.#chain = run.catch(() => {});
    return run;
  }

  async #refresh(folderMtime: number): Promise<void> {
    const snapshot = this.#memory?.snapshot ?? (await this.#load());
    let next: Snapshot;
    if (!snapshot) next = await this.#rescan(folderMtime, undefined, await this.#journalSize());
    else if (snapshot.folderMtimeMs === folderMtime) next = snapshot;
    else {
      const journal = await this.#readJournal(snapshot.journalOffset);
      if (journal && accountsFor(journal.lines, snapshot.folderMtimeMs, folderMtime)) {
        next = await this.#reread(snapshot, journal.lines, folderMtime, journal.end);
      } else next = await this.#rescan(folderMtime, snapshot, journal?.end ?? (await this.#journalSize()));
    }
    if (next !== snapshot || !this.#memory) {
      if (next !== snapshot) next = await this.#save(next);
      this.#memory = { snapshot: next, ...sortedOf(next) };
    }
  }

  async #load(): Promise<Snapshot | undefined> {
    try {
      const parsed = JSON.parse(await readFile(this.file, 'utf8')) as Snapshot;
      if (parsed?.version !== 1 || !Array.isArray(parsed.entries)) return undefined;
      return parsed;
    } catch {
      // Missing or unreadable: it is derived, so it is rebuilt.
      return undefined;
    }
  }

  async #journalSize(): Promise<number> {
    return stat(this.#journal).then(
      (stats) => stats.size,
      () => 0,
    );
  }

  /** The journal's whole lines after `offset`; undefined when it is shorter than that (rotated or removed). */
  async #readJournal(offset: number): Promise<{ lines: ChangeLine[]; end: number } | undefined> {
    let handle: Awaited<ReturnType<typeof open>>;
    try {
      handle = await open(this.#journal, 'r');
    } catch {
      return offset === 0 ? { lines: [], end: 0 } : undefined;
    }
    try {
      const size = (await handle.stat()).size;
      if (size < offset) return undefined;
      const buffer = Buffer.alloc(size - offset);
      await handle.read(buffer, 0, buffer.length, offset);
      const text = buffer.toString('utf8');
      const whole = text.slice(0, text.lastIndexOf('\n') + 1);
      const lines: ChangeLine[] = [];
      for (const line of whole.split('\n')) {
        if (line === '') continue;
        try {
          const parsed = JSON.parse(line) as ChangeLine;
          if (typeof parsed.id === 'string' && typeof parsed.before === 'number' && typeof parsed.after === 'number') {
            lines.push(parsed);
          }
        } catch {
          // A torn line: the change it was for shows as unaccounted for, and the index rescans.
        }
      }
      return { lines, end: offset + Buffer.byteLength(whole) };
    } finally {
      await handle.close();
    }
  }

  /** Re-reads the conversations the journal named; the rest stays as it was. */
  async #reread(snapshot: Snapshot, lines: ChangeLine[], folderMtime: number, end: number): Promise<Snapshot> {
    const byFile = new Map(snapshot.entries.map((entry) => [entry.file, entry]));
    for (const id of new Set(lines.map((line) => line.id))) {
      const file = `${id}.md`;
      const entry = await this.#entry(file);
      if (entry) byFile.set(file, entry);
      else byFile.delete(file);
    }
    return { version: 1, folderMtimeMs: folderMtime, journalOffset: end, entries: [...byFile.values()] };
  }

  /** Looks at every note's mtime and size, re-reading the new and the changed ones (all of them with no snapshot). */
  async #rescan(folderMtime: number, snapshot: Snapshot | undefined, end: number): Promise<Snapshot> {
    const known = new Map((snapshot?.entries ?? []).map((entry) => [entry.file, entry]));
    let names: string[];
    try {
      names = (await readdir(this.#options.folder)).filter((name) => name.endsWith('.md'));
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
      names = [];
    }
    const entries: IndexEntry[] = [];
    // A few at a time: thousands of reads at once would hold the thread pool every other request needs.
    for (let start = 0; start < names.length; start += 32) {
      const found = await Promise.all(
        names.slice(start, start + 32).map(async (name) => {
          const was = known.get(name);
          if (was) {
            const now = await stat(path.join(this.#options.folder, name)).catch(() => undefined);
            if (now && now.mtimeMs === was.mtimeMs && now.size === was.size) return was;
          }
          return this.#entry(name);
        }),
      );
      for (const entry of found) if (entry) entries.push(entry);
    }
    return { version: 1, folderMtimeMs: folderMtime, journalOffset: end, entries };
  }

  /** One note as an entry: its summary, or why it cannot be read; undefined when it is gone. */
  async #entry(file: string): Promise<IndexEntry | undefined> {
    const stats = await stat(path.join(this.#options.folder, file)).catch(() => undefined);
    if (!stats?.isFile()) return undefined;
    const base = { file, mtimeMs: stats.mtimeMs, size: stats.size };
    try {
      const summary = await this.#options.readSummary(`${this.#options.notesFolder}/${file}`);
      return summary ? { ...base, summary } : undefined;
    } catch (error) {
      if (error instanceof AssistantError) return { ...base, broken: error.message };
      throw error;
    }
  }

  /** Writes the snapshot atomically, and starts a new journal once the old one is long and fully taken in. */
  async #save(snapshot: Snapshot): Promise<Snapshot> {
    await mkdir(this.#options.directory, { recursive: true, mode: 0o700 });
    let saved = snapshot;
    if (snapshot.journalOffset > journalRotateBytes) {
      // A line a writer appends between this rename and the snapshot below lands in the old file and is lost: its
      // change then shows as unaccounted for (the folder mtimes do not chain) and the next list rescans.
      await rename(this.#journal, `${this.#journal}.old`).catch(() => {});
      saved = { ...snapshot, journalOffset: 0 };
    }
    const temporary = `${this.file}.${process.pid}.tmp`;
    await writeFileSynced(temporary, JSON.stringify(saved));
    await rename(temporary, this.file);
    return saved;
  }
}

async function writeFileSynced(file: string, text: string): Promise<void> {
  const handle = await open(file, 'w', 0o600);
  try {
    await handle.writeFile(text);
  } finally {
    await handle.close();
  }
}

/**
 * True when the journal's lines explain the folder going from `fromMtime` to `toMtime`: every write started from a
 * state the index knows (the snapshot's, or another journaled write's end) and the folder is now at one of those
 * ends. A change between them that no writer journaled breaks the chain.
 */
function accountsFor(lines: ChangeLine[], fromMtime: number, toMtime: number): boolean {
  const known = new Set([fromMtime, ...lines.map((line) => line.after)]);
  return known.has(toMtime) && lines.every((line) => known.has(line.before));
}

async function folderMtimeMs(folder: string): Promise<number> {
  return stat(folder).then(
    (stats) => stats.mtimeMs,
    () => 0,
  );
}

function sortedOf(snapshot: Snapshot): { sorted: ConversationSummary[]; broken: string[] } {
  const sorted = snapshot.entries.flatMap((entry) => (entry.summary ? [entry.summary] : [])).sort(newestFirst);
  const broken = snapshot.entries.flatMap((entry) => (entry.broken === undefined ? [] : [entry.broken])).sort();
  return { sorted, broken };
}

type SortKey = [updated: string, created: string, id: string];

const keyOf = (summary: ConversationSummary): SortKey => [summary.updated, summary.created, summary.id];

function compareKeys(left: SortKey, right: SortKey): number {
  return right[0].localeCompare(left[0]) || right[1].localeCompare(left[1]) || right[2].localeCompare(left[2]);
}

function newestFirst(left: ConversationSummary, right: ConversationSummary): number {
  return compareKeys(keyOf(left), keyOf(right));
}

/** The index of the first conversation that sorts after `key`. */
function firstAfter(sorted: readonly ConversationSummary[], key: SortKey): number {
  let low = 0;
  let high = sorted.length;
  while (low < high) {
    const middle = (low + high) >> 1;
    const candidate = sorted[middle];
    if (candidate && compareKeys(keyOf(candidate), key) <= 0) low = middle + 1;
    else high = middle;
  }
  return low;
}

function encodeCursor(summary: ConversationSummary): string {
  return Buffer.from(JSON.stringify(keyOf(summary))).toString('base64url');
}

function decodeCursor(cursor: string): SortKey {
  try {
    const parsed = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as unknown;
    if (Array.isArray(parsed) && parsed.length === 3 && parsed.every((part) => typeof part === 'string')) {
      return parsed as SortKey;
    }
  } catch {
    // Reported below.
  }
  throw new AssistantError(
    'CHAT_INPUT_INVALID',
    `cursor: expected the next_cursor of a previous page, got ${JSON.stringify(cursor.slice(0, 100))}`,
  );
}
