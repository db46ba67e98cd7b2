import { once } from 'node:events';
import { createReadStream, createWriteStream } from 'node:fs';
import { finished } from 'node:stream/promises';
import { createGunzip, createGzip } from 'node:zlib';

// A small tar (POSIX pax/ustar) writer and reader over Node's zlib, for `assistant backup` and `restore`. No tar
// package is installed, and the reader must be strict where general-purpose ones are lenient: a backup holds only
// regular files and directories, so every other entry type (links above all) is refused, not skipped, and the
// caller checks every path before anything is written (docs/decisions/0032).

const blockBytes = 512;
const zeroBlock = Buffer.alloc(blockBytes);

/** One entry of an archive. */
export type TarEntry = { type: 'directory'; path: string } | { type: 'file'; path: string; content: Buffer };

export interface TarGzWriterOptions {
  /** The file to create; it must not exist. */
  file: string;
  /** @default 0o600 */
  mode?: number;
}

/** Writes a gzip-compressed tar file, one entry at a time, with back-pressure. Call close() to finish it. */
export class TarGzWriter {
  readonly #gzip = createGzip();
  readonly #output;
  #closing: Promise<void> | undefined;

  constructor(options: TarGzWriterOptions) {
    this.#output = createWriteStream(options.file, { flags: 'wx', mode: options.mode ?? 0o600 });
    this.#gzip.pipe(this.#output);
    // Surfaced by close(): an unhandled 'error' would end the process.
    this.#output.on('error', () => {});
    this.#gzip.on('error', () => {});
  }

  async add(entry: TarEntry, options: { mtimeMs?: number } = {}): Promise<void> {
    const name = entry.type === 'directory' ? `${entry.path.replace(/\/$/, '')}/` : entry.path;
    const size = entry.type === 'file' ? entry.content.length : 0;
    const mtime = Math.floor((options.mtimeMs ?? Date.now()) / 1_000);
    if (Buffer.byteLength(name) > 100 || !/^[\x20-\x7e]*$/.test(name)) {
      // Longer than ustar's name field (task file names are up to 173 bytes), or not ASCII: a pax `path` record.
      const record = paxRecord('path', name);
      await this.#write(header({ name: 'PaxHeader', size: record.length, mtime, type: 'x' }));
      await this.#write(padded(record));
    }
    await this.#write(header({ name: asciiName(name), size, mtime, type: entry.type === 'directory' ? '5' : '0' }));
    if (entry.type === 'file') await this.#write(padded(entry.content));
  }

  /** Writes the end-of-archive blocks and waits for the file to be complete. */
  close(): Promise<void> {
    this.#closing ??= (async () => {
      this.#gzip.end(Buffer.concat([zeroBlock, zeroBlock]));
      await finished(this.#output);
    })();
    return this.#closing;
  }

  async #write(chunk: Buffer): Promise<void> {
    if (this.#output.errored) throw this.#output.errored;
    if (!this.#gzip.write(chunk)) await once(this.#gzip, 'drain');
  }
}

/** The archive is not one this reader accepts; the message says what was found. */
export class TarFormatError extends Error {
  override readonly name = 'TarFormatError';
}

export interface ReadTarGzOptions {
  file: string;
  /** Larger entries are refused (the reader holds one entry in memory). @default 1 GiB */
  maxEntryBytes?: number;
}

/**
 * Reads a gzip-compressed tar file entry by entry. Only regular files and directories (with pax or GNU long names)
 * are accepted: a link, a device, a FIFO or a sparse file is refused with a TarFormatError naming it and its type,
 * as are a bad checksum and a truncated archive. Paths are returned as written: checking them is the caller's job.
 */
export async function* readTarGz(options: ReadTarGzOptions): AsyncGenerator<TarEntry> {
  const maxEntryBytes = options.maxEntryBytes ?? 1_073_741_824;
  const input = createReadStream(options.file).pipe(createGunzip());
  let buffer = Buffer.alloc(0);
  let longName: string | undefined;
  let ended = false;
  const chunks = input[Symbol.asyncIterator]();
  /** Ensures `bytes` bytes are buffered; false at the end of the stream. */
  const fill = async (bytes: number): Promise<boolean> => {
    while (buffer.length < bytes) {
      const next = await chunks.next();
      if (next.done) return false;
      buffer = Buffer.concat([buffer, next.value as Buffer]);
    }
    return true;
  };
  const take = (bytes: number): Buffer => {
    const taken = buffer.subarray(0, bytes);
    buffer = buffer.subarray(bytes);
    return taken;
  };
  try {
    for (;;) {
      if (!(await fill(blockBytes))) throw new TarFormatError('the archive ends without its end-of-archive blocks');
      const block = take(blockBytes);
      if (block.equals(zeroBlock)) {
        ended = true;
        break;
      }
      const parsed = parseHeader(block);
      if (parsed.size > maxEntryBytes) {
        throw new TarFormatError(
          `entry \`${parsed.name}\` is ${parsed.size} bytes, more than ${maxEntryBytes} allowed`,
        );
      }
      const paddedSize = Math.ceil(parsed.size / blockBytes) * blockBytes;
      if (!(await fill(paddedSize))) throw new TarFormatError(`the archive is truncated inside \`${parsed.name}\``);
      const content = Buffer.from(take(paddedSize).subarray(0, parsed.size));
      const name = longName ?? parsed.name;
      switch (parsed.type) {
        case 'x':
          longName = paxPath(content) ?? longName;
          continue;
        case 'L':
          longName = content.toString('utf8').replace(/\0.*$/s, '');
          continue;
        case 'g':
          continue;
        case '0':
        case '\0':
        case '7':
          longName = undefined;
          if (name.endsWith('/')) throw new TarFormatError(`file entry \`${name}\` has a directory's name`);
          yield { type: 'file', path: name, content };
          continue;
        case '5':
          longName = undefined;
          yield { type: 'directory', path: name.replace(/\/+$/, '') };
          continue;
        default:
          throw new TarFormatError(
            `entry \`${name}\` is ${entryKinds[parsed.type] ?? `of type \`${parsed.type}\``}; a backup holds only files and directories`,
          );
      }
    }
  } finally {
    input.destroy();
  }
  if (ended && longName !== undefined) throw new TarFormatError('the archive ends with a long name and no entry');
}

const entryKinds: Record<string, string> = {
  '1': 'a hard link',
  '2': 'a symbolic link',
  '3': 'a character device',
  '4': 'a block device',
  '6': 'a FIFO',
  S: 'a sparse file',
  K: 'a long link name',
};

function parseHeader(block: Buffer): { name: string; size: number; type: string } {
  const stored = octal(block.subarray(148, 156), 'checksum');
  let sum = 0;
  for (let index = 0; index < blockBytes; index += 1) sum += index >= 148 && index < 156 ? 0x20 : (block[index] ?? 0);
  if (sum !== stored)
    throw new TarFormatError('a header block has a wrong checksum: this is not a tar archive, or it is damaged');
  const text = (start: number, end: number) => block.subarray(start, end).toString('utf8').replace(/\0.*$/s, '');
  const prefix = block.subarray(257, 262).toString('latin1') === 'ustar' ? text(345, 500) : '';
  const name = prefix === '' ? text(0, 100) : `${prefix}/${text(0, 100)}`;
  return {
    name,
    size: octal(block.subarray(124, 136), `size of \`${name}\``),
    type: String.fromCharCode(block[156] ?? 0),
  };
}

function octal(field: Buffer, what: string): number {
  if (((field[0] ?? 0) & 0x80) !== 0) throw new TarFormatError(`the ${what} is in base-256, which a backup never uses`);
  const digits = field
    .toString('latin1')
    .replace(/[\0 ]+$/g, '')
    .trim();
  if (!/^[0-7]*$/.test(digits)) throw new TarFormatError(`the ${what} is not an octal number: \`${digits}\``);
  return digits === '' ? 0 : Number.parseInt(digits, 8);
}

/** The `path` of a pax header's records (`LEN key=value\n` each). */
function paxPath(content: Buffer): string | undefined {
  let found: string | undefined;
  let offset = 0;
  while (offset < content.length) {
    const space = content.indexOf(0x20, offset);
    if (space === -1) throw new TarFormatError('a pax header record has no length');
    const length = Number(content.subarray(offset, space).toString('latin1'));
    if (!Number.isInteger(length) || length <= space - offset || offset + length > content.length) {
      throw new TarFormatError('a pax header record has a wrong length');
    }
    const record = content.subarray(space + 1, offset + length - 1).toString('utf8');
    const equals = record.indexOf('=');
    if (record.slice(0, equals) === 'path') found = record.slice(equals + 1);
    offset += length;
  }
  return found;
}

function paxRecord(key: string, value: string): Buffer {
  const body = ` ${key}=${value}\n`;
  const bodyBytes = Buffer.byteLength(body);
  // The length counts its own digits.
  let length = bodyBytes + 1;
  while (String(length).length + bodyBytes !== length) length = String(length).length + bodyBytes;
  return Buffer.from(`${length}${body}`);
}

/** What fits a ustar name field when a pax record carries the real name: printable ASCII, at most 100 bytes. */
function asciiName(name: string): string {
  return name.replace(/[^\x20-\x7e]/g, '_').slice(-100);
}

function header(options: { name: string; size: number; mtime: number; type: string }): Buffer {
  const block = Buffer.alloc(blockBytes);
  block.write(options.name, 0, 100, 'latin1');
  block.write(field(options.type === '5' ? 0o700 : 0o600, 8), 100, 'latin1');
  block.write(field(0, 8), 108, 'latin1');
  block.write(field(0, 8), 116, 'latin1');
  block.write(field(options.size, 12), 124, 'latin1');
  block.write(field(options.mtime, 12), 136, 'latin1');
  block.write(options.type, 156, 'latin1');
  block.write('ustar\0', 257, 'latin1');
  block.write('00', 263, 'latin1');
  block.fill(0x20, 148, 156);
  let sum = 0;
  for (const byte of block) sum += byte;
  block.write(`${sum.toString(8).padStart(6, '0')}\0 `, 148, 'latin1');
  return block;
}

/** An octal number that fills a field, NUL-terminated. */
function field(value: number, width: number): string {
  const digits = value.toString(8);
  if (digits.length > width - 1) throw new RangeError(`${value} does not fit a tar header field of ${width} bytes`);
  return `${digits.padStart(width - 1, '0')}\0`;
}

function padded(content: Buffer): Buffer {
  const rest = content.length % blockBytes;
  return rest === 0 ? content : Buffer.concat([content, Buffer.alloc(blockBytes - rest)]);
}
