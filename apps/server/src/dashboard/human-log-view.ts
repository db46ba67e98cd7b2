import { open, readdir } from 'node:fs/promises';
import { taskIdPattern } from '@assistant/queue';
import { html, type SafeHtml } from './html.ts';

/**
 * The daily human log as the dashboard shows it: lines read from the end of a file by byte offsets (never the whole
 * file: a busy day has thousands of lines), parsed from the markdown `HumanLog` writes
 * (`- 14:03:22 **source** message (reason) [→](link)`) into fields, and rendered as escaped text. The markdown is
 * parsed here, never rendered as HTML: every part of a line may come from an outside subject.
 */
export interface LogLine {
  /** `HH:MM:SS`; undefined for a line not written by `HumanLog` (rendered whole as the message). */
  time: string | undefined;
  source: string | undefined;
  message: string;
  reason: string | undefined;
  link: string | undefined;
}

/** Lines longer than this are cut for display (the file keeps them whole). */
const maxShownCharacters = 2_000;

export function parseLogLine(line: string): LogLine {
  const match = /^- (\d{2}:\d{2}:\d{2}) \*\*(.+?)\*\* ?(.*)$/.exec(line);
  if (!match) return { time: undefined, source: undefined, message: line, reason: undefined, link: undefined };
  const [, time, source, rest = ''] = match;
  let body = rest;
  let link: string | undefined;
  const linked = /^(.*?) ?\[→\]\(([^()\s]*)\)$/.exec(body);
  if (linked) {
    body = linked[1] ?? '';
    link = linked[2];
  }
  let reason: string | undefined;
  if (body.endsWith(')')) {
    // The reason is the last balanced `( … )` group after a space; a message may hold parentheses of its own.
    let depth = 0;
    for (let index = body.length - 1; index >= 0; index -= 1) {
      const character = body[index];
      if (character === ')') depth += 1;
      else if (character === '(') depth -= 1;
      if (depth === 0) {
        if (index > 0 && body[index - 1] === ' ') {
          reason = body.slice(index + 1, -1);
          body = body.slice(0, index - 1);
        }
        break;
      }
    }
  }
  return { time, source, message: body, reason, link };
}

/**
 * Where a line's link goes in the dashboard: a task id to its task page, a note path to its note page. Anything else
 * (an absolute URL, a path climbing out of the notes) gets no link: the text is shown, not followed.
 */
export function dashboardHrefOf(link: string | undefined): string | undefined {
  if (link === undefined || link === '') return undefined;
  let decoded: string;
  try {
    decoded = decodeURIComponent(link);
  } catch {
    return undefined;
  }
  const task = /^(?:tasks\/)?([0-9a-z]+)$/.exec(decoded)?.[1];
  if (task !== undefined && taskIdPattern.test(task)) return `/tasks/${task}`;
  const segments = decoded.replace(/^notes\//, '').split('/');
  const safe =
    !decoded.startsWith('/') &&
    !decoded.includes('\\') &&
    !/^[a-z][a-z0-9+.-]*:/i.test(decoded) &&
    segments.every((segment) => segment !== '' && segment !== '.' && segment !== '..');
  if (!safe) return undefined;
  return `/notes/${segments.map((segment) => encodeURIComponent(segment)).join('/')}`;
}

function shorten(text: string): string {
  return text.length > maxShownCharacters ? `${text.slice(0, maxShownCharacters)}…` : text;
}

/**
 * The subject of the item a line links to, by the note's dashboard address (`/notes/…`): the link then reads as the
 * item's subject instead of "note".
 */
export type LinkSubjects = ReadonlyMap<string, string | undefined>;

/** The note paths the lines link to (what to look up for their subjects). */
export function linkedNotePaths(lines: readonly LogLine[]): string[] {
  const found = new Set<string>();
  for (const line of lines) {
    const href = dashboardHrefOf(line.link);
    if (href?.startsWith('/notes/'))
      found.add(href.slice('/notes/'.length).split('/').map(decodeURIComponent).join('/'));
  }
  return [...found];
}

/** One line as a list item: time, source, message, reason, link; all text escaped. */
export function renderLogLine(line: LogLine, subjects?: LinkSubjects): SafeHtml {
  const href = dashboardHrefOf(line.link);
  const subject = href === undefined ? undefined : subjects?.get(href);
  const link =
    line.link === undefined
      ? ''
      : href === undefined
        ? html` <span class="log-link muted">${shorten(line.link)}</span>`
        : subject === undefined
          ? html` <a class="log-link" href="${href}">${linkLabel(href)}</a>`
          : html` <a class="log-link log-subject" href="${href}"><span class="visually-hidden">note: </span>“${shorten(subject)}”</a>`;
  // A failed action stands out from the `decided:` and `done:` lines around it.
  const failed = line.message.startsWith('FAILED:') ? html` class="log-failed"` : '';
  return html`<li${failed}>${line.time === undefined ? '' : html`<time>${line.time}</time>`}${
    line.source === undefined ? '' : html`<span class="log-source">${line.source}</span> `
  }<span class="log-message">${shorten(line.message)}</span>${
    line.reason === undefined ? '' : html` <span class="log-reason">(${shorten(line.reason)})</span>`
  }${link}</li>`;
}

/**
 * The newest lines of a chunk whose rendering fits in `maxBytes` (at least one), and the offset of the first one
 * kept: a page of long lines shows fewer of them and links to the rest.
 */
export function renderLinesWithin(
  chunk: Pick<LogChunk, 'lines' | 'offsets' | 'startOffset'>,
  maxBytes: number,
  subjects?: LinkSubjects,
): { items: SafeHtml[]; startOffset: number } {
  const items: SafeHtml[] = [];
  let bytes = 0;
  let startOffset = chunk.startOffset;
  for (let index = chunk.lines.length - 1; index >= 0; index -= 1) {
    const line = chunk.lines[index];
    if (!line) continue;
    const item = renderLogLine(line, subjects);
    bytes += Buffer.byteLength(item.toString());
    if (bytes > maxBytes && items.length > 0) break;
    items.push(item);
    startOffset = chunk.offsets[index] ?? startOffset;
  }
  return { items: items.reverse(), startOffset };
}

function linkLabel(href: string): string {
  return href.startsWith('/tasks/') ? 'task' : 'note';
}

export interface LogChunk {
  lines: LogLine[];
  /** The byte offset where each line of `lines` starts. */
  offsets: number[];
  /** Byte offset of the first line read (an "earlier" link starts before it). */
  startOffset: number;
  /** Byte offset just after the last whole line read (a live cursor goes on from it). */
  endOffset: number;
  /** Lines between the asked-for offset and `startOffset` that were skipped to stay within the limits. */
  skipped: boolean;
}

export interface ReadLogOptions {
  /** At most this many lines, the last ones of the range. */
  maxLines: number;
  /** At most this many bytes read. @default 262_144 */
  maxBytes?: number;
}

async function readRange(file: string, start: number, end: number): Promise<Buffer> {
  const handle = await open(file, 'r');
  try {
    const buffer = Buffer.alloc(Math.max(0, end - start));
    let read = 0;
    while (read < buffer.length) {
      const { bytesRead } = await handle.read(buffer, read, buffer.length - read, start + read);
      if (bytesRead === 0) break;
      read += bytesRead;
    }
    return buffer.subarray(0, read);
  } finally {
    await handle.close();
  }
}

async function sizeOf(file: string): Promise<number | undefined> {
  try {
    const handle = await open(file, 'r');
    try {
      return (await handle.stat()).size;
    } finally {
      await handle.close();
    }
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
}

/**
 * The whole lines in `[start, end)` of a file, at most `maxLines` of the last ones. A `start` that is not known to be
 * a line's beginning (`atLineStart` false) skips the partial line it falls in.
 */
async function readWholeLines(
  file: string,
  range: { start: number; end: number; atLineStart: boolean; maxLines: number },
): Promise<LogChunk> {
  const buffer = await readRange(file, range.start, range.end);
  let first = 0;
  if (!range.atLineStart) {
    const newline = buffer.indexOf(10);
    first = newline === -1 ? buffer.length : newline + 1;
  }
  const lastNewline = buffer.lastIndexOf(10);
  const last = lastNewline < first ? first : lastNewline + 1;
  const texts = splitLines(buffer.subarray(first, last));
  const offsets: number[] = [];
  let offset = range.start + first;
  for (const text of texts) {
    offsets.push(offset);
    offset += text.bytes + 1;
  }
  const kept = texts.slice(-range.maxLines);
  const keptOffsets = offsets.slice(offsets.length - kept.length);
  const startOffset = keptOffsets[0] ?? range.start + last;
  return {
    lines: kept.map((text) => parseLogLine(text.line)),
    offsets: keptOffsets,
    startOffset,
    endOffset: range.start + last,
    skipped: startOffset > range.start,
  };
}

/**
 * The last lines of a log file that end before `beforeOffset` (default: the end of the file), and the file's size.
 * An empty chunk when the file does not exist.
 */
export async function readLogBefore(
  file: string,
  options: ReadLogOptions & { beforeOffset?: number },
): Promise<LogChunk & { fileSize: number }> {
  const size = await sizeOf(file);
  if (size === undefined) return { lines: [], offsets: [], startOffset: 0, endOffset: 0, skipped: false, fileSize: 0 };
  const end = Math.min(size, Math.max(0, options.beforeOffset ?? size));
  const start = Math.max(0, end - (options.maxBytes ?? 262_144));
  const chunk = await readWholeLines(file, { start, end, atLineStart: start === 0, maxLines: options.maxLines });
  return { ...chunk, fileSize: size };
}

/**
 * The whole lines written after `afterOffset` (what a live page has not shown yet), at most `maxLines` of the newest:
 * when more came, `skipped` says so. A file shorter than the offset (replaced) starts again from its beginning.
 */
export async function readLogAfter(file: string, options: ReadLogOptions & { afterOffset: number }): Promise<LogChunk> {
  const size = await sizeOf(file);
  if (size === undefined) return { lines: [], offsets: [], startOffset: 0, endOffset: 0, skipped: false };
  const from = options.afterOffset > size ? 0 : Math.max(0, options.afterOffset);
  const start = Math.max(from, size - (options.maxBytes ?? 262_144));
  return readWholeLines(file, { start, end: size, atLineStart: start === from, maxLines: options.maxLines });
}

function splitLines(buffer: Buffer): { line: string; bytes: number }[] {
  const lines: { line: string; bytes: number }[] = [];
  let start = 0;
  while (start < buffer.length) {
    let end = buffer.indexOf(10, start);
    if (end === -1) end = buffer.length;
    const raw = buffer.subarray(start, end);
    lines.push({ line: raw.toString('utf8').replace(/\r$/, ''), bytes: raw.length });
    start = end + 1;
  }
  return lines;
}

/** `YYYY-MM-DD`, a real calendar date; anything else (a path, `2026-02-30`) is undefined. */
export function parseLogDate(text: string | undefined): Date | undefined {
  const match = /^(\d{4})-(\d{2})-(\d{2})$/.exec(text ?? '');
  if (!match) return undefined;
  const [year, month, day] = [Number(match[1]), Number(match[2]), Number(match[3])];
  // Noon, local time: the same calendar day whatever the daylight-saving shift.
  const date = new Date(year, month - 1, day, 12);
  if (date.getFullYear() !== year || date.getMonth() !== month - 1 || date.getDate() !== day) return undefined;
  return date;
}

export function formatLogDate(date: Date): string {
  const pad = (value: number) => String(value).padStart(2, '0');
  return `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())}`;
}

/** The dates that have a log file, newest first. */
export async function logDates(directory: string): Promise<string[]> {
  let names: string[];
  try {
    names = await readdir(directory);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw error;
  }
  return names
    .filter((name) => /^\d{4}-\d{2}-\d{2}\.md$/.test(name))
    .map((name) => name.slice(0, -'.md'.length))
    .filter((name) => parseLogDate(name) !== undefined)
    .sort()
    .reverse();
}
