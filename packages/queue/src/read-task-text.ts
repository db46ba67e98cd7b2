import { closeSync, constants, fstatSync, openSync, readSync, type Stats } from 'node:fs';
import { TaskFileError } from './task-file.ts';

/**
 * O_NOFOLLOW: a symbolic link is refused (ELOOP) rather than followed to /dev/zero or another user's file.
 * O_NONBLOCK: opening a FIFO returns at once instead of waiting for a writer that never comes; it is then refused
 * by the fstat below. Neither changes how a regular file reads.
 */
const openFlags = constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK;

/**
 * Reads a task file as UTF-8 without ever blocking or following anything: the file is opened without following a
 * symbolic link and without waiting on a FIFO, must be a regular file once open, and is read at most `maxBytes + 1`
 * bytes far. A file that grows while it is read, or a device that never ends, costs `maxBytes` of memory, not all
 * of it. Whatever is not a small regular file is refused with a TaskFileError that says what it is.
 */
export async function readTaskText(file: string, maxBytes: number): Promise<string> {
  // Synchronous system calls on purpose: the worker reads every task it claims with this, and four small calls on
  // this thread (a page-cache read of a file just written, a fstat, a close) cost a fraction of four trips through
  // the thread pool. Nothing here can wait: the FIFO is opened non-blocking and refused before any read, a device
  // or a /proc file is refused by the fstat.
  let descriptor: number;
  try {
    descriptor = openSync(file, openFlags);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    // ELOOP is what O_NOFOLLOW answers for a symbolic link (dangling or not); ENXIO is a socket.
    if (code === 'ELOOP') throw new TaskFileError('a symbolic link, not a regular file; links are never followed');
    if (code === 'ENXIO') throw new TaskFileError('a socket, not a regular file');
    throw error;
  }
  try {
    const info = fstatSync(descriptor);
    if (!info.isFile()) throw new TaskFileError(`${describeFileKind(info)}, not a regular file`);
    if (info.size > maxBytes) {
      throw new TaskFileError(`file is ${info.size} bytes; the limit is ${maxBytes} (queue.max_task_bytes)`);
    }
    // One read of exactly the size the fstat gave, plus one byte to notice growth; never more than one byte past
    // the limit whatever the size said (a file can grow after the fstat, a /proc file says 0 and holds more).
    const first = Buffer.allocUnsafe(Math.min(info.size + 1, maxBytes + 1));
    const bytesRead = readSync(descriptor, first, 0, first.length, null);
    // A short read is the end of a regular file: no second read to find it.
    if (bytesRead < first.length) return first.toString('utf8', 0, bytesRead);
    // Full: the file holds more than its size said (a /proc file says 0; or it grew). Read on, to the end or to one
    // byte past the limit; short reads are not trusted as the end here, only a read of nothing.
    const chunks: Buffer[] = [first];
    let length = bytesRead;
    while (length <= maxBytes) {
      const chunk = Buffer.allocUnsafe(Math.min(65_536, maxBytes + 1 - length));
      const more = readSync(descriptor, chunk, 0, chunk.length, null);
      if (more === 0) return Buffer.concat(chunks, length).toString('utf8');
      chunks.push(chunk.subarray(0, more));
      length += more;
    }
    throw new TaskFileError(
      `file grew past ${maxBytes} bytes while it was read; the limit is ${maxBytes} (queue.max_task_bytes)`,
    );
  } finally {
    closeSync(descriptor);
  }
}

/** `a directory`, `a FIFO`: what a file that is not a regular file is, for the reason beside it in failed/. */
export function describeFileKind(info: Stats): string {
  if (info.isFile()) return 'a regular file';
  if (info.isDirectory()) return 'a directory';
  if (info.isSymbolicLink()) return 'a symbolic link';
  if (info.isFIFO()) return 'a FIFO (named pipe)';
  if (info.isSocket()) return 'a socket';
  if (info.isCharacterDevice()) return 'a character device';
  if (info.isBlockDevice()) return 'a block device';
  return 'not a regular file';
}
