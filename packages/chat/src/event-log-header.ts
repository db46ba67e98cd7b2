import type { FileHandle } from 'node:fs/promises';

/**
 * The first line of a compacted event log (decision 0077): `offset` is the global offset of the first byte after
 * this line, so a line at file position `p` has the global offset `offset + p - bytes`. Offsets handed to readers
 * are global and only grow: a compaction drops the oldest lines without moving the others. `copied_to` is the global
 * end of the log the compaction copied (an append that raced it and landed past that is appended again, once).
 */
export interface LogHeader {
  /** Global offset of the first kept byte; 0 for a log never compacted. */
  offset: number;
  /** Length of the header line in bytes; 0 for a log never compacted (it has none). */
  bytes: number;
  /** Global end of the log the last compaction copied; undefined for a log never compacted. */
  copiedTo?: number;
  /** When the compaction ran (ISO 8601). */
  at?: string;
  /**
   * The last compactions' copies, newest first: `[offset of the log copied, global end copied]`. Every compaction
   * cuts something, so a log's `offset` names it among those before and after it: a writer whose file was set aside
   * finds the copy made of that file here, however many compactions ran since (ChatEventLog.append).
   */
  copies?: (readonly [number, number])[];
}

/** How many compactions' copies a header remembers: a writer is never that many compactions behind. */
const rememberedCopies = 16;

export const logHeaderType = 'log_start';
const headerPrefix = Buffer.from(`{"type":"${logHeaderType}"`);
/** Longer than any header this code writes: a header is a few numbers, a time and 16 pairs of numbers. */
const maxHeaderBytes = 1024;

const noHeader: LogHeader = { offset: 0, bytes: 0 };

/** The header line for a compacted log. */
export function headerLine(header: {
  offset: number;
  copiedTo: number;
  at: string;
  copies: readonly (readonly [number, number])[];
}): Buffer {
  return Buffer.from(
    `${JSON.stringify({
      type: logHeaderType,
      offset: header.offset,
      copied_to: header.copiedTo,
      at: header.at,
      copies: header.copies.slice(0, rememberedCopies),
    })}\n`,
  );
}

const isOffset = (value: unknown): value is number =>
  typeof value === 'number' && Number.isSafeInteger(value) && value >= 0;

/**
 * The header of an open log, or `noHeader` when its first line is not one (a log never compacted). A header that
 * starts like one but does not parse is treated as none: its line is then skipped as a broken line by readers.
 */
export async function readHeader(handle: FileHandle): Promise<LogHeader> {
  const buffer = Buffer.alloc(maxHeaderBytes);
  const { bytesRead } = await handle.read(buffer, 0, buffer.length, 0);
  if (bytesRead < headerPrefix.length || !buffer.subarray(0, headerPrefix.length).equals(headerPrefix)) return noHeader;
  const newline = buffer.subarray(0, bytesRead).indexOf(10);
  if (newline === -1) return noHeader;
  try {
    const value = JSON.parse(buffer.subarray(0, newline).toString('utf8')) as Record<string, unknown>;
    const offset = value.offset;
    if (typeof offset !== 'number' || !Number.isSafeInteger(offset) || offset < 0) return noHeader;
    return {
      offset,
      bytes: newline + 1,
      ...(typeof value.copied_to === 'number' ? { copiedTo: value.copied_to } : {}),
      ...(typeof value.at === 'string' ? { at: value.at } : {}),
      ...(Array.isArray(value.copies)
        ? {
            copies: value.copies.filter(
              (pair): pair is [number, number] =>
                Array.isArray(pair) && pair.length === 2 && isOffset(pair[0]) && isOffset(pair[1]),
            ),
          }
        : {}),
    };
  } catch {
    return noHeader;
  }
}
