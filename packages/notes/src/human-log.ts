import { appendFile, mkdir } from 'node:fs/promises';
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

  async write(entry: HumanLogEntry): Promise<void> {
    const at = entry.at ?? new Date();
    const oneLine = (text: string) => scrubSecrets(text.replace(/[\r\n]+/g, ' ').trim());
    let line = `- ${localTime(at)} **${oneLine(entry.source)}** ${oneLine(entry.message)}`;
    if (entry.reason) line += ` (${oneLine(entry.reason)})`;
    if (entry.link) line += ` [→](${scrubSecrets(entry.link).replace(/[()\s]/g, encodeURIComponent)})`;
    const file = this.fileFor(at);
    try {
      await appendFile(file, `${line}\n`, { flag: 'a', mode: 0o600 });
    } catch (error) {
      // The folder is made on the first line (or again after someone removed it), not checked on every line.
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
      await mkdir(this.directory, { recursive: true, mode: 0o700 });
      await appendFile(file, `${line}\n`, { flag: 'a', mode: 0o600 });
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
