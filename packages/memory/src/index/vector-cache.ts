import { createHash, randomBytes } from 'node:crypto';
import { mkdir, open, rename, stat, unlink } from 'node:fs/promises';
import path from 'node:path';
import { withFileLock } from '@assistant/notes';
import { z } from 'zod';

export interface VectorCacheOptions {
  /** `data/memory/index/`. */
  directory: string;
  /** The embedder's model id: one file per model. */
  model: string;
}

/** The first line of every cache file: what it is and which model made its vectors. */
const headerSchema = z.object({
  format: z.literal('assistant-memory-vectors'),
  version: z.literal(1),
  model: z.string(),
});

/**
 * The persisted vectors of one embedding model: `vectors-<model>-<hash of model>.jsonl` in the index directory, an
 * append-only file of JSON lines (a header naming the model, then `{hash, vector}` with the content hash of the text
 * embedded and the vector as base64 of little-endian float32). Keyed by content, not by note path, so a note renamed
 * or edited back keeps its vector, and two notes with the same text share one.
 *
 * Two processes (server and worker) keep an index over the same data directory: each appends under `withFileLock`,
 * and reads what the other appended (`sync`) before embedding, so a note is embedded once, not once per process. A
 * line torn by a crash is skipped (its note is embedded again); `compact` rewrites the file to the live vectors with
 * a rename, which a reader notices by the file's identity and answers by reading it whole again.
 */
export class VectorCache {
  readonly file: string;
  readonly #options: VectorCacheOptions;
  readonly #vectors = new Map<string, Float32Array>();
  /** How far the file has been read, and which file (inode) that was. */
  #offset = 0;
  #inode: number | undefined;
  /** Lines that could not be read (a torn tail, a hand edit), since the last full read. */
  #skipped = 0;
  /** The file's header names another model: nothing in it is used. */
  #foreign = false;

  constructor(options: VectorCacheOptions) {
    this.#options = options;
    this.file = path.join(options.directory, cacheFileName(options.model));
  }

  get size(): number {
    return this.#vectors.size;
  }

  get skippedLines(): number {
    return this.#skipped;
  }

  get(hash: string): Float32Array | undefined {
    return this.#vectors.get(hash);
  }

  /** Reads what was appended since the last read (by this process or another); the whole file when it was replaced. */
  async sync(): Promise<void> {
    const seen = await stat(this.file).catch((error: NodeJS.ErrnoException) => {
      if (error.code === 'ENOENT') return undefined;
      throw error;
    });
    if (!seen) {
      // Dropped (a rebuild elsewhere): what we hold is no longer on disk, so forget it as the file did.
      if (this.#inode !== undefined) this.#reset();
      return;
    }
    if (seen.ino !== this.#inode || seen.size < this.#offset) {
      this.#reset();
      this.#inode = seen.ino;
    }
    if (seen.size === this.#offset) return;
    const handle = await open(this.file, 'r');
    try {
      const length = seen.size - this.#offset;
      const buffer = Buffer.alloc(length);
      const { bytesRead } = await handle.read(buffer, 0, length, this.#offset);
      // Only whole lines: a line still being written (or torn) is read again next time.
      const end = buffer.subarray(0, bytesRead).lastIndexOf(0x0a);
      if (end === -1) return;
      this.#readLines(buffer.subarray(0, end).toString('utf8'), this.#offset === 0);
      this.#offset += end + 1;
    } finally {
      await handle.close();
    }
  }

  /** Appends vectors (the file and its header are made on first use) and keeps them in memory. */
  async append(records: ReadonlyArray<{ hash: string; vector: Float32Array }>): Promise<void> {
    if (records.length === 0) return;
    await mkdir(this.#options.directory, { recursive: true });
    await withFileLock(this.file, async () => {
      await this.sync();
      const handle = await open(this.file, 'a+');
      try {
        const { size } = await handle.stat();
        let text = '';
        if (size === 0)
          text += `${JSON.stringify({ format: 'assistant-memory-vectors', version: 1, model: this.#options.model })}\n`;
        else {
          // A writer that crashed mid-line left no newline: start on a fresh line so this record is not glued to it.
          const last = Buffer.alloc(1);
          await handle.read(last, 0, 1, size - 1);
          if (last[0] !== 0x0a) text += '\n';
        }
        for (const record of records)
          text += `${JSON.stringify({ hash: record.hash, vector: encodeVector(record.vector) })}\n`;
        await handle.write(text);
      } finally {
        await handle.close();
      }
      // Our own lines are read back by the next sync like anyone's; holding them now saves the wait.
      for (const record of records) this.#vectors.set(record.hash, record.vector);
    });
  }

  /** Removes this model's file (a rebuild): every vector is made again. */
  async drop(): Promise<void> {
    await mkdir(this.#options.directory, { recursive: true });
    await withFileLock(this.file, async () => {
      await unlink(this.file).catch((error: NodeJS.ErrnoException) => {
        if (error.code !== 'ENOENT') throw error;
      });
    });
    this.#reset();
  }

  /**
   * Rewrites the file with only the vectors whose hashes are live (edits leave old versions behind), when the dead
   * outnumber the live; a rename makes the new file whole at once.
   */
  async compact(live: ReadonlySet<string>): Promise<boolean> {
    await mkdir(this.#options.directory, { recursive: true });
    return await withFileLock(this.file, async () => {
      await this.sync();
      const dead = [...this.#vectors.keys()].filter((hash) => !live.has(hash)).length;
      if (dead < 1000 || dead < this.#vectors.size - dead) return false;
      const lines = [JSON.stringify({ format: 'assistant-memory-vectors', version: 1, model: this.#options.model })];
      for (const [hash, vector] of this.#vectors) {
        if (live.has(hash)) lines.push(JSON.stringify({ hash, vector: encodeVector(vector) }));
      }
      const temporary = path.join(
        this.#options.directory,
        `.${path.basename(this.file)}.${randomBytes(6).toString('hex')}`,
      );
      const handle = await open(temporary, 'wx', 0o600);
      try {
        await handle.write(`${lines.join('\n')}\n`);
        await handle.sync();
      } finally {
        await handle.close();
      }
      await rename(temporary, this.file);
      this.#reset();
      await this.sync();
      return true;
    });
  }

  #reset(): void {
    this.#vectors.clear();
    this.#offset = 0;
    this.#inode = undefined;
    this.#skipped = 0;
    this.#foreign = false;
  }

  #readLines(text: string, fromStart: boolean): void {
    const lines = text.split('\n');
    let first = 0;
    if (fromStart) {
      first = 1;
      const header = headerSchema.safeParse(parseJson(lines[0] ?? ''));
      // A file of another model under this name (a hash collision, a copy by hand) is not ours to use.
      this.#foreign = !header.success || header.data.model !== this.#options.model;
    }
    if (this.#foreign) {
      this.#skipped += lines.length;
      return;
    }
    for (let index = first; index < lines.length; index++) {
      const line = lines[index] as string;
      if (line === '') continue;
      // Our own appends come back through the next sync: the vector held already is kept, not decoded twice.
      const hashAt = line.indexOf('"hash":"');
      if (hashAt !== -1) {
        const hashEnd = line.indexOf('"', hashAt + 8);
        if (hashEnd !== -1 && this.#vectors.has(line.slice(hashAt + 8, hashEnd)) && line.endsWith('"}')) continue;
      }
      const record = parseJson(line) as { hash?: unknown; vector?: unknown } | undefined;
      // Checked by hand, not with a zod schema: this runs for every line at every start (a third of its time).
      const vector =
        typeof record?.hash === 'string' && record.hash !== '' && typeof record.vector === 'string'
          ? decodeVector(record.vector)
          : undefined;
      if (vector === undefined) {
        this.#skipped++;
        continue;
      }
      this.#vectors.set(record?.hash as string, vector);
    }
  }
}

/** `vectors-<model, made safe>-<8 hex of the model>.jsonl`: readable, and distinct for models the slug would merge. */
export function cacheFileName(model: string): string {
  const slug = model
    .toLowerCase()
    .replace(/[^a-z0-9._-]+/g, '_')
    .slice(0, 60);
  const hash = createHash('sha256').update(model).digest('hex').slice(0, 8);
  return `vectors-${slug}-${hash}.jsonl`;
}

function encodeVector(vector: Float32Array): string {
  return Buffer.from(vector.buffer, vector.byteOffset, vector.byteLength).toString('base64');
}

function decodeVector(text: string): Float32Array | undefined {
  const bytes = Buffer.from(text, 'base64');
  if (bytes.length === 0 || bytes.length % 4 !== 0) return undefined;
  // Copied into a fresh buffer: a Buffer from the pool may start at an offset a Float32Array cannot view.
  const vector = new Float32Array(bytes.length / 4);
  new Uint8Array(vector.buffer).set(bytes);
  for (const value of vector) if (!Number.isFinite(value)) return undefined;
  return vector;
}

function parseJson(line: string): unknown {
  try {
    return JSON.parse(line);
  } catch {
    return undefined;
  }
}
