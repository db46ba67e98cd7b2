import { randomBytes } from 'node:crypto';
import { type FileHandle, link, open, readdir, stat, unlink } from 'node:fs/promises';
import path from 'node:path';
import { headerLine, type LogHeader, readHeader } from './event-log-header.ts';

/** How a conversation's event log is kept bounded (chat instance setting `retention`, decision 0077). */
export interface EventLogRetention {
  /** A log longer than this (bytes after its header) is cut to its newest half. */
  maxBytes: number;
  /** Events older than this are removed. */
  maxAgeMs: number;
  /**
   * A log appended to within this time is left alone (a conversation in use keeps its recent log whole) unless it
   * is past twice `maxBytes`.
   */
  idleMs: number;
}

export interface CompactionResult {
  /** Bytes of events removed (0: the log was left as it was). */
  removedBytes: number;
  /** Why it was left alone, when it was. */
  skipped?: 'missing' | 'recent' | 'within-retention' | 'busy';
}

/** The name a log has while a compaction copies it; no writer creates the log while it exists. */
export function compactingFile(file: string): string {
  return `${file}.compacting`;
}

/** Whether a compaction holds the log's set-aside name this moment (or a writer creating the log does). */
export async function isCompacting(file: string): Promise<boolean> {
  return stat(compactingFile(file)).then(
    () => true,
    () => false,
  );
}

/**
 * A scratch file beside the log (a compaction's copy, a writer's empty new log): a name `recoverEventLogs` removes
 * once it is old, when its maker died before removing it.
 */
export function scratchFileOf(file: string): string {
  return path.join(path.dirname(file), `.${path.basename(file)}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`);
}

const tmpPattern = /^\..+\.jsonl\.\d+\.[0-9a-f]+\.tmp$/;
/** A piece of a log read at a time by a compaction: a long log is never read whole into memory. */
const pieceBytes = 1024 * 1024;

/**
 * Compacts one conversation's event log when it is past `retention` and idle (decision 0077):
 * 1. the log is linked to `<file>.compacting` (exclusive: one compaction at a time, whichever process runs it) and
 *    then unlinked, so no writer opens it any more; appends wait while `.compacting` exists, readers see no change;
 * 2. the newest events are copied, after a header line whose `offset` keeps every kept event's offset as it was,
 *    to a temporary file, fsynced;
 * 3. that file is linked to the log's name (failing if a recovery put the old log back meanwhile), the folder is
 *    fsynced, and `.compacting` is removed.
 * A crash leaves `.compacting` (put back by `recoverCompaction`) or a temporary file (removed). An append that
 * opened the log before step 1 and wrote after step 2's copy is appended again by its writer (ChatEventLog.append).
 */
export async function compactEventLog(options: {
  file: string;
  retention: EventLogRetention;
  now: Date;
}): Promise<CompactionResult> {
  const { file, retention, now } = options;
  const before = await stat(file).catch(() => undefined);
  if (!before) return { removedBytes: 0, skipped: 'missing' };
  // Whole milliseconds: the file system's time may be a fraction ahead of `now` for a write just made. A log in use
  // is left alone until it passes twice maxBytes: a conversation that is never idle (the notifications one) is
  // bounded too, and compacting under its writers is safe, only less kind to a reader far behind.
  const recent = now.getTime() - Math.floor(before.mtimeMs) < retention.idleMs;
  if (recent && before.size <= 2 * retention.maxBytes) return { removedBytes: 0, skipped: 'recent' };
  const cut = await findCut(file, retention, now);
  if (cut === undefined) return { removedBytes: 0, skipped: 'within-retention' };
  const aside = compactingFile(file);
  try {
    await link(file, aside);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'EEXIST') return { removedBytes: 0, skipped: 'busy' };
    if (code === 'ENOENT') return { removedBytes: 0, skipped: 'missing' };
    throw error;
  }
  await unlink(file);
  const tmp = scratchFileOf(file);
  let published = false;
  try {
    const source = await open(aside, 'r');
    let removedBytes: number;
    try {
      // Read again now that no writer opens the log: what it holds is final but for appends already under way.
      const header = await readHeader(source);
      const size = (await source.stat()).size;
      const from = Math.max(header.bytes, Math.min(cut.filePosition, size));
      const global = (position: number) => header.offset + position - header.bytes;
      const target = await open(tmp, 'wx', 0o600);
      try {
        await target.write(
          headerLine({
            offset: global(from),
            copiedTo: global(size),
            at: now.toISOString(),
            copies: [[header.offset, global(size)], ...(header.copies ?? [])],
          }),
        );
        await copyRange(source, target, from, size);
        await target.sync();
      } finally {
        await target.close();
      }
      removedBytes = from - header.bytes;
    } finally {
      await source.close();
    }
    try {
      await link(tmp, file);
      published = true;
    } catch (error) {
      // A recovery judged this compaction dead and put the old log back: it stays, as it is.
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
    await syncFolder(path.dirname(file));
    if (published) await unlink(aside).catch(() => {});
    return published ? { removedBytes } : { removedBytes: 0, skipped: 'busy' };
  } catch (error) {
    // Put the log back as it was, unless a writer is already waiting on a new one (it cannot be: they wait).
    if (!published) await link(aside, file).catch(() => {});
    await unlink(aside).catch(() => {});
    throw error;
  } finally {
    await unlink(tmp).catch(() => {});
  }
}

/**
 * Where to cut: the file position of the first line kept, or undefined when nothing is to be removed. Lines are
 * removed from the front while the rest is longer than half of `maxBytes` (once the log passed `maxBytes`) or the
 * line is older than `maxAgeMs`.
 */
async function findCut(
  file: string,
  retention: EventLogRetention,
  now: Date,
): Promise<{ filePosition: number } | undefined> {
  let handle: FileHandle;
  try {
    handle = await open(file, 'r');
  } catch {
    return undefined;
  }
  try {
    const header = await readHeader(handle);
    const size = (await handle.stat()).size;
    const body = size - header.bytes;
    // Cut by size first: to a line boundary at or after the point that leaves half of maxBytes.
    let position = header.bytes;
    if (body > retention.maxBytes) {
      const target = size - Math.floor(retention.maxBytes / 2);
      const newline = await nextNewline(handle, target - 1, size);
      position = newline === undefined ? size : newline + 1;
    }
    // Then by age: whole lines older than maxAgeMs (their `at`), until the first one that is not.
    const oldest = now.getTime() - retention.maxAgeMs;
    for (;;) {
      if (position >= size) break;
      const newline = await nextNewline(handle, position, size);
      if (newline === undefined) break;
      const length = newline - position;
      if (length > pieceBytes) {
        position = newline + 1;
        continue;
      }
      const line = Buffer.alloc(length);
      await handle.read(line, 0, length, position);
      const at = eventTime(line.toString('utf8'));
      if (at !== undefined && at >= oldest) break;
      position = newline + 1;
    }
    return position > header.bytes ? { filePosition: position } : undefined;
  } finally {
    await handle.close();
  }
}

/** The `at` of an event line in ms, or undefined (a broken line is removed with its old neighbours). */
function eventTime(text: string): number | undefined {
  try {
    const value = JSON.parse(text) as { at?: unknown };
    const at = typeof value.at === 'string' ? Date.parse(value.at) : Number.NaN;
    return Number.isNaN(at) ? undefined : at;
  } catch {
    return undefined;
  }
}

/** The position of the first newline at or after `from`, reading a piece at a time. */
async function nextNewline(handle: FileHandle, from: number, size: number): Promise<number | undefined> {
  const piece = Buffer.alloc(64 * 1024);
  for (let position = Math.max(0, from); position < size; ) {
    const { bytesRead } = await handle.read(piece, 0, Math.min(piece.length, size - position), position);
    if (bytesRead === 0) return undefined;
    const newline = piece.subarray(0, bytesRead).indexOf(10);
    if (newline !== -1) return position + newline;
    position += bytesRead;
  }
  return undefined;
}

async function copyRange(source: FileHandle, target: FileHandle, from: number, to: number): Promise<void> {
  const piece = Buffer.alloc(Math.min(pieceBytes, Math.max(1, to - from)));
  for (let position = from; position < to; ) {
    const { bytesRead } = await source.read(piece, 0, Math.min(piece.length, to - position), position);
    if (bytesRead === 0) break;
    await target.write(piece.subarray(0, bytesRead));
    position += bytesRead;
  }
}

async function syncFolder(folder: string): Promise<void> {
  const directory = await open(folder, 'r');
  try {
    await directory.sync();
  } finally {
    await directory.close();
  }
}

/**
 * Finishes or undoes a compaction that died (or outlived `staleMs`, by the set-aside file's change time): its
 * set-aside log is put back when no new log was published, and removed when one was (it holds nothing the new log
 * needs: an append that landed past the copy is appended again by its writer). Returns whether it did anything.
 */
export async function recoverCompaction(file: string, options: { staleMs: number; now?: Date }): Promise<boolean> {
  const aside = compactingFile(file);
  const stats = await stat(aside).catch(() => undefined);
  if (!stats) return false;
  if ((options.now ?? new Date()).getTime() - Math.floor(stats.ctimeMs) < options.staleMs) return false;
  try {
    await link(aside, file);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  }
  await syncFolder(path.dirname(file));
  await unlink(aside).catch(() => {});
  return true;
}

/**
 * The leftovers of compactions that died in `directory`: set-aside logs put back (or dropped when a new log was
 * published) and temporary copies removed, each once older than `staleMs`. Returns how many it cleared.
 */
export async function recoverEventLogs(directory: string, options: { staleMs: number; now: Date }): Promise<number> {
  let names: string[];
  try {
    names = await readdir(directory);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return 0;
    throw error;
  }
  let cleared = 0;
  for (const name of names) {
    if (name.endsWith('.jsonl.compacting')) {
      const file = path.join(directory, name.slice(0, -'.compacting'.length));
      if (await recoverCompaction(file, options)) cleared += 1;
    } else if (tmpPattern.test(name)) {
      const tmp = path.join(directory, name);
      const stats = await stat(tmp).catch(() => undefined);
      if (stats && options.now.getTime() - Math.floor(stats.mtimeMs) >= options.staleMs) {
        await unlink(tmp).catch(() => {});
        cleared += 1;
      }
    }
  }
  return cleared;
}

/** How far back from the end of its file, as it stood just after the write, a writer looks for its own line. */
const ownLineWindowBytes = 256 * 1024;

/**
 * After an append whose file was set aside by a compaction meanwhile (the log's name no longer leads to the file it
 * wrote to): whether its line landed past what the compaction copied, so its writer must append it again. Waits
 * (up to `waitMs`, then recovers it as dead) for the compaction to publish the new log, whose header remembers the
 * last compactions' copies: the one made of the written file (named by its `offset`, which every compaction moves
 * on) says up to where it copied, however many compactions ran since. A header without that memory (a log compacted
 * by an older version) is answered by looking for the line at its own offset in the log (a kept event's offset never
 * changes, decision 0077); a line not found is appended again (at least once, never lost).
 */
export async function lostInCompaction(options: {
  file: string;
  /** The writer's handle on the file it wrote to, opened for reading too. */
  handle: FileHandle;
  /** That file's header, as read after the write. */
  header: LogHeader;
  line: Buffer;
  waitMs: number;
}): Promise<boolean> {
  const { file, handle, header, line } = options;
  // Where the line is in the file it was written to: the last copy of its bytes near the end (other writers of the
  // same file may have appended a little after it; its timestamp makes a line its writer's own).
  const written = await handle.stat();
  const windowStart = Math.max(header.bytes, written.size - ownLineWindowBytes);
  const tail = Buffer.alloc(written.size - windowStart);
  const { bytesRead } = await handle.read(tail, 0, tail.length, windowStart);
  const found = tail.subarray(0, bytesRead).lastIndexOf(line);
  // Not in its own file (cut short by hand): nothing to compare; it is not appended twice.
  if (found === -1) return false;
  const lineOffset = header.offset + windowStart + found - header.bytes;
  const deadline = Date.now() + options.waitMs;
  for (let look = 1; ; look += 1) {
    while (await isCompacting(file)) {
      if (Date.now() > deadline) await recoverCompaction(file, { staleMs: 0 });
      else await new Promise((resolve) => setTimeout(resolve, 5));
    }
    let current: FileHandle;
    try {
      current = await open(file, 'r');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
      // Another compaction set the new log aside between the look and the open: wait for it too. No log at all
      // (removed by hand) after three looks: nothing to append to again.
      if (look >= 3) return false;
      continue;
    }
    try {
      // The log's name leads to the written file again (a recovery put it back): the line is in the log.
      if ((await current.stat()).ino === written.ino) return false;
      const published = await readHeader(current);
      // The copy made of the written file (named by its offset): the line was in it if it ended before its end.
      const copy = published.copies?.find(([copiedFrom]) => copiedFrom === header.offset);
      if (copy) return lineOffset + line.length > copy[1];
      // A log compacted by an older version (no copies in its header): the line is where it was, or appended again.
      if (published.offset > lineOffset) return true;
      const there = Buffer.alloc(line.length);
      const read = await current.read(there, 0, there.length, lineOffset - published.offset + published.bytes);
      return !(read.bytesRead === line.length && there.equals(line));
    } finally {
      await current.close();
    }
  }
}
