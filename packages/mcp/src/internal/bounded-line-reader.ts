/** A line longer than the limit: its bytes were counted and dropped, never held whole. */
export interface OversizedLine {
  type: 'oversized';
  /** How many bytes the line had (its newline not counted). */
  bytes: number;
  /** Its first and last bytes (up to 256 each), to tell whose answer it was. */
  head: string;
  tail: string;
}

export type ReadLine = { type: 'line'; text: string } | OversizedLine;

/** Bytes kept of each end of an oversized line. */
const keptEndBytes = 256;
const newline = 0x0a;

/**
 * Splits a byte stream into newline-terminated lines (MCP's stdio framing) holding at most `maxLineBytes` of the
 * current line. The SDK's ReadBuffer throws past its 10 MiB, inside the stream's `data` listener where nothing can
 * catch it (the worker died of it), and copies its whole buffer on every chunk; this one never throws: a line past
 * the limit is counted and dropped up to its newline, and reported as `oversized`, after which reading goes on with
 * the next line.
 */
export class BoundedLineReader {
  readonly #maxLineBytes: number;
  /** The current line's chunks while it is within the limit. */
  #chunks: Buffer[] = [];
  #lineBytes = 0;
  /** Past the limit: the line is being dropped; only its ends are kept. */
  #dropping = false;
  #head = Buffer.alloc(0);
  #tail = Buffer.alloc(0);

  constructor(options: { maxLineBytes: number }) {
    this.#maxLineBytes = options.maxLineBytes;
  }

  /** Takes the next chunk; returns each line it completes, in order. */
  push(chunk: Buffer): ReadLine[] {
    const lines: ReadLine[] = [];
    let start = 0;
    while (start < chunk.length) {
      const end = chunk.indexOf(newline, start);
      const piece = chunk.subarray(start, end === -1 ? chunk.length : end);
      this.#take(piece);
      if (end === -1) break;
      lines.push(this.#finishLine());
      start = end + 1;
    }
    return lines;
  }

  /** Forgets the line in progress. */
  clear(): void {
    this.#chunks = [];
    this.#lineBytes = 0;
    this.#dropping = false;
    this.#head = Buffer.alloc(0);
    this.#tail = Buffer.alloc(0);
  }

  #take(piece: Buffer): void {
    if (piece.length === 0) return;
    this.#lineBytes += piece.length;
    if (!this.#dropping && this.#lineBytes <= this.#maxLineBytes) {
      // A copy: the stream may reuse the chunk's memory, and a subarray would pin the whole chunk.
      this.#chunks.push(Buffer.from(piece));
      return;
    }
    if (!this.#dropping) {
      this.#dropping = true;
      const held = Buffer.concat([...this.#chunks, piece]);
      this.#chunks = [];
      this.#head = Buffer.from(held.subarray(0, keptEndBytes));
      this.#tail = Buffer.from(held.subarray(-keptEndBytes));
      return;
    }
    this.#tail = Buffer.from(Buffer.concat([this.#tail, piece]).subarray(-keptEndBytes));
  }

  #finishLine(): ReadLine {
    const line: ReadLine = this.#dropping
      ? {
          type: 'oversized',
          bytes: this.#lineBytes,
          head: this.#head.toString('utf8'),
          tail: this.#tail.toString('utf8'),
        }
      : { type: 'line', text: Buffer.concat(this.#chunks).toString('utf8').replace(/\r$/, '') };
    this.clear();
    return line;
  }
}
