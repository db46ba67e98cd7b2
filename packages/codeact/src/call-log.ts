import { createHash } from 'node:crypto';
import { mkdir, open, readFile } from 'node:fs/promises';
import path from 'node:path';
import type { JSONValue } from './json-value.ts';

/** What a call gave, as the cell receives it: its value, or the message its rejection carries. */
export type LoggedOutcome = { status: 'ok'; result: JSONValue } | { status: 'error'; error: string };

/**
 * One call of a cell as the log holds it. An entry without `outcome` was started (its tool may have run) and never
 * finished: the worker died while it ran.
 */
export interface CallLogEntry {
  index: number;
  path: string[];
  args: JSONValue[];
  outcome?: LoggedOutcome;
}

/**
 * A cell's durable record of the calls it made, keyed by each call's position in the cell. A call is written as
 * started before its tool runs and as finished before its result returns to the cell; both writes are on disk when
 * they resolve. Running the same code again is answered from it (see runLoggedCell).
 */
export interface CallLog {
  /** The entries recorded so far, by index: the last record of each index wins. */
  read(): Promise<Map<number, CallLogEntry>>;
  started(entry: Omit<CallLogEntry, 'outcome'>): Promise<void>;
  finished(entry: CallLogEntry & { outcome: LoggedOutcome }): Promise<void>;
}

/** Who the cell belongs to, written as the log's first line so a person reading the file knows what it is. */
export interface CallLogHeader {
  task: string;
  /** The agent loop that ran the cell: `system.agent › researcher`. */
  loop: string;
  /** The id of the `run_code` call: one log per call. */
  call_id: string;
  /** sha256 of the cell's code: a log is never answered to other code. */
  code_sha256: string;
}

/**
 * The call log of one `run_code` call: `<root>/<task>/<key>.jsonl`, where the key digests the loop, the call id and
 * the code. JSON lines, appended and fsynced; a line cut short by a crash (the last, without its newline) is ignored,
 * which is safe: a call is only acted on once its line is complete on disk.
 */
export class FileCallLog implements CallLog {
  readonly file: string;
  readonly #header: CallLogHeader;
  /** Whether this process has looked at the file's end (and written the header when it was new). */
  #checked = false;

  constructor(root: string, header: CallLogHeader) {
    this.#header = header;
    const key = createHash('sha256')
      .update(JSON.stringify([header.loop, header.call_id, header.code_sha256]))
      .digest('hex')
      .slice(0, 24);
    this.file = path.join(root, safeName(header.task), `${key}.jsonl`);
  }

  async read(): Promise<Map<number, CallLogEntry>> {
    let text: string;
    try {
      text = await readFile(this.file, 'utf8');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return new Map();
      throw error;
    }
    const entries = new Map<number, CallLogEntry>();
    const lines = text.split('\n');
    // The last piece is '' after a complete line; anything else there is a line a crash cut short.
    for (const line of lines.slice(0, -1)) {
      const entry = parseEntry(line);
      if (entry !== undefined) entries.set(entry.index, entry);
    }
    return entries;
  }

  started(entry: Omit<CallLogEntry, 'outcome'>): Promise<void> {
    return this.#append({ index: entry.index, path: entry.path, args: entry.args, state: 'started' });
  }

  finished(entry: CallLogEntry & { outcome: LoggedOutcome }): Promise<void> {
    return this.#append({
      index: entry.index,
      path: entry.path,
      args: entry.args,
      state: 'finished',
      outcome: entry.outcome,
    });
  }

  async #append(record: Record<string, unknown>): Promise<void> {
    let prefix = '';
    if (!this.#checked) {
      await mkdir(path.dirname(this.file), { recursive: true });
      const existing = await readFile(this.file, 'utf8').catch((error: NodeJS.ErrnoException) => {
        if (error.code === 'ENOENT') return undefined;
        throw error;
      });
      if (existing === undefined || existing === '') prefix = `${JSON.stringify({ call_log: this.#header })}\n`;
      // A line a crash cut short is ended, so it stays one unreadable line instead of spoiling this one.
      else if (!existing.endsWith('\n')) prefix = '\n';
      this.#checked = true;
    }
    const handle = await open(this.file, 'a');
    try {
      await handle.appendFile(`${prefix}${JSON.stringify(record)}\n`);
      await handle.datasync();
    } finally {
      await handle.close();
    }
    // A new file's directory entry, too: a power cut must not take the file with the calls it acknowledged.
    if (prefix.startsWith('{')) {
      const directory = await open(path.dirname(this.file), 'r');
      try {
        await directory.sync();
      } finally {
        await directory.close();
      }
    }
  }
}

/** A task id as one path segment: anything but letters, digits, `.`, `_` and `-` becomes `_`; never `.` or `..`. */
function safeName(name: string): string {
  const safe = name.replace(/[^A-Za-z0-9._-]/g, '_').slice(0, 200);
  return safe === '' || /^\.+$/.test(safe) ? `_${safe}` : safe;
}

function parseEntry(line: string): CallLogEntry | undefined {
  let record: unknown;
  try {
    record = JSON.parse(line);
  } catch {
    return undefined;
  }
  if (typeof record !== 'object' || record === null) return undefined;
  const { index, path: callPath, args, state, outcome } = record as Record<string, unknown>;
  if (typeof index !== 'number' || !Array.isArray(callPath) || !Array.isArray(args)) return undefined;
  const entry: CallLogEntry = { index, path: callPath as string[], args: args as JSONValue[] };
  if (state === 'finished' && isOutcome(outcome)) entry.outcome = outcome;
  return entry;
}

function isOutcome(value: unknown): value is LoggedOutcome {
  if (typeof value !== 'object' || value === null) return false;
  const outcome = value as Record<string, unknown>;
  return (
    (outcome.status === 'ok' && 'result' in outcome) ||
    (outcome.status === 'error' && typeof outcome.error === 'string')
  );
}

/** sha256 of a cell's code, hex: what a call log binds to. */
export function codeDigest(code: string): string {
  return createHash('sha256').update(code).digest('hex');
}
