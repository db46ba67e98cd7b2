import { appendFile, mkdir, readdir, rm } from 'node:fs/promises';
import path from 'node:path';
import { scrubSecrets } from '@assistant/errors';

export interface HumanLogEntry {
  /** `email/inbox`, or `queue`, `worker`: what the line is about. */
  source: string;
  /** What happened, in words a person reads: `archived "Weekly digest" from news@example.com`. */
  message: string;
  /** Why, when there is a reason: `rule "archive newsletters": human < 0.2`. */
  reason?: string;
  /** A note or task the line is about, as a relative link. */
  link?: string;
  /** @default now */
  at?: Date;
}

/** The daily log people read: FileHumanLog appends to this machine's `data/logs`, HttpHumanLog to the server's. */
export interface HumanLog {
  write(entry: HumanLogEntry): Promise<void>;
}

export interface FileHumanLogOptions {
  /** `data/logs`. */
  directory: string;
}

/**
 * The daily human log: `logs/YYYY-MM-DD.md`, one line per event:
 * `- 14:03:22 **email/inbox** archived "Weekly digest" (rule "archive newsletters") [note](…)`.
 * Each line is a single write to the file opened with O_APPEND: the kernel puts each write at the end whole, so
 * two processes logging at once never interleave parts of lines.
 */
export class FileHumanLog implements HumanLog {
  readonly directory: string;

  constructor(options: FileHumanLogOptions) {
    this.directory = options.directory;
  }

  fileFor(date: Date): string {
    return path.join(this.directory, `${localDate(date)}.md`);
  }

  /**
   * Removes the day files (`YYYY-MM-DD.md`, nothing else in the folder) of days more than `retentionDays` before the
   * day of `now`: with 30, today and the 30 days before it are kept. Returns how many it removed.
   */
  async prune(options: { retentionDays: number; now?: Date }): Promise<number> {
    const today = options.now ?? new Date();
    const oldest = localDate(
      new Date(today.getFullYear(), today.getMonth(), today.getDate() - options.retentionDays, 12),
    );
    let names: string[];
    try {
      names = await readdir(this.directory);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return 0;
      throw error;
    }
    let removed = 0;
    for (const name of names) {
      const day = /^(\d{4}-\d{2}-\d{2})\.md$/.exec(name)?.[1];
      if (day === undefined || day >= oldest) continue;
      await rm(path.join(this.directory, name), { force: true });
      removed += 1;
    }
    return removed;
  }

  async write(entry: HumanLogEntry): Promise<void> {
    const at = entry.at ?? new Date();
    const oneLine = (text: string) => scrubSecrets(text.replace(/[\r\n]+/g, ' ').trim());
    let line = `- ${localTime(at)} **${oneLine(entry.source)}** ${oneLine(entry.message)}`;
    if (entry.reason) line += ` (${oneLine(entry.reason)})`;
    if (entry.link) line += ` [→](${scrubSecrets(entry.link).replace(/[()\s]/g, encodeURIComponent)})`;
    const file = this.fileFor(at);
    // Lines that come while an append to their file is under way go together in the next one, in order: a worker
    // running eight tasks makes one append for their lines instead of eight. Each write still returns only once its
    // line is in the file, as before.
    let batch = this.#waiting.get(file);
    if (!batch) {
      const lines: string[] = [];
      const before = this.#appending.get(file);
      const done = (async () => {
        await before?.catch(() => {});
        // From here on, lines wait for the next batch.
        if (this.#waiting.get(file)?.lines === lines) this.#waiting.delete(file);
        await this.#append(file, lines.join(''));
      })();
      batch = { lines, done };
      this.#waiting.set(file, batch);
      this.#appending.set(file, done);
      const forget = () => {
        if (this.#appending.get(file) === done) this.#appending.delete(file);
      };
      done.then(forget, forget);
    }
    batch.lines.push(`${line}\n`);
    await batch.done;
  }

  /** Lines for each day's file not yet handed to an append, and the promise of the append that will take them. */
  readonly #waiting = new Map<string, { lines: string[]; done: Promise<void> }>();
  /** The last append started for each file: the next batch waits for it, so lines stay in order. */
  readonly #appending = new Map<string, Promise<void>>();

  async #append(file: string, text: string): Promise<void> {
    try {
      await appendFile(file, text, { flag: 'a', mode: 0o600 });
    } catch (error) {
      // The folder is made on the first line (or again after someone removed it), not checked on every line.
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
      await mkdir(this.directory, { recursive: true, mode: 0o700 });
      await appendFile(file, text, { flag: 'a', mode: 0o600 });
    }
  }
}

function pad(value: number): string {
  return String(value).padStart(2, '0');
}

function localDate(date: Date): string {
  return `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())}`;
}

function localTime(date: Date): string {
  return `${pad(date.getHours())}:${pad(date.getMinutes())}:${pad(date.getSeconds())}`;
}
