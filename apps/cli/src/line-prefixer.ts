import { StringDecoder } from 'node:string_decoder';

export interface LinePrefixerOptions {
  /** Put before every line, e.g. `[server] `. */
  prefix: string;
  /** Receives whole lines only, each ending in a newline, several at a time. */
  write: (text: string) => void;
  /**
   * A line longer than this is written in pieces rather than held in memory indefinitely.
   * @default 65536
   */
  maxLineChars?: number;
}

export interface LinePrefixer {
  /** Takes output as it arrives, split anywhere, even inside a UTF-8 character. */
  push(chunk: Buffer | string): void;
  /** Writes what remains of an unfinished last line, with a newline. */
  end(): void;
}

/**
 * Prefixes each line of a child's output. It writes whole lines only, so two children writing at once never
 * interleave mid-line.
 */
export function createLinePrefixer(options: LinePrefixerOptions): LinePrefixer {
  const maxLineChars = options.maxLineChars ?? 65_536;
  const decoder = new StringDecoder('utf8');
  let pending = '';
  const flushLines = (text: string) => {
    if (text === '') return;
    const lines = text.endsWith('\n') ? text.slice(0, -1).split('\n') : text.split('\n');
    options.write(lines.map((line) => `${options.prefix}${line}\n`).join(''));
  };
  return {
    push(chunk) {
      pending += typeof chunk === 'string' ? chunk : decoder.write(chunk);
      const lastNewline = pending.lastIndexOf('\n');
      if (lastNewline >= 0) {
        flushLines(pending.slice(0, lastNewline + 1));
        pending = pending.slice(lastNewline + 1);
      }
      if (pending.length > maxLineChars) {
        flushLines(pending);
        pending = '';
      }
    },
    end() {
      pending += decoder.end();
      flushLines(pending);
      pending = '';
    },
  };
}
