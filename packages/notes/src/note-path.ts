import { realpath } from 'node:fs/promises';
import path from 'node:path';

/** A path that would leave the notes root: `..`, an absolute path, or a symlink pointing outside. */
export class NotePathError extends Error {
  override name = 'NotePathError';
}

/** The most bytes (UTF-8) one name in a note path may have: what Linux, macOS and Windows file systems take. */
const maxNoteNameBytes = 255;
/** The most bytes a whole resolved path may have (Linux's PATH_MAX, with its NUL). */
const maxResolvedPathBytes = 4095;

/**
 * A folder or file name in a note path longer than the file system takes. A NotePathError (its `name` too, so every
 * caller that maps a bad path to a 400 or a usage error maps this one the same way), told apart for tests and
 * callers that care.
 */
export class NoteNameTooLongError extends NotePathError {
  readonly bytes: number;
  constructor(relative: string, name: string, bytes: number) {
    super(
      `note path \`${shortened(relative)}\` has a name of ${bytes} bytes (\`${shortened(name)}\`); a folder or file name may have at most ${maxNoteNameBytes} bytes (UTF-8)`,
    );
    this.bytes = bytes;
  }
}

function shortened(text: string): string {
  return text.length > 80 ? `${text.slice(0, 40)}…${text.slice(-20)}` : text;
}

/**
 * Resolves a note path given relative to the notes root (`email/personal/123.md`), refusing anything that would
 * read or write outside it. Symlinks are followed for the part of the path that exists, so a link inside the root
 * that points elsewhere is refused too.
 */
export async function resolveNotePath(
  root: string,
  relative: string,
  options: {
    /**
     * The root's real path, when the caller already resolved it (a store resolves it once): saves a `realpath` a
     * call. Where the root itself is then missing (removed while the store runs), the path inside it is returned:
     * there is nothing on it to check, and no link to follow out.
     */
    realRoot?: string;
  } = {},
): Promise<string> {
  if (relative === '' || path.isAbsolute(relative) || relative.includes('\0')) {
    throw new NotePathError(`note path \`${relative}\` must be relative to the notes folder`);
  }
  // Checked before any system call: a name over the file system's limit makes realpath and open fail with
  // ENAMETOOLONG, which callers would report as their own failure (a 500) instead of a bad path.
  for (const name of relative.split(/[\\/]/)) {
    const bytes = Buffer.byteLength(name, 'utf8');
    if (bytes > maxNoteNameBytes) throw new NoteNameTooLongError(relative, name, bytes);
  }
  const realRoot = options.realRoot ?? (await realpath(root));
  const joined = path.resolve(realRoot, relative);
  if (!isInside(realRoot, joined)) throw new NotePathError(`note path \`${relative}\` leaves the notes folder`);
  if (Buffer.byteLength(joined, 'utf8') > maxResolvedPathBytes) {
    throw new NotePathError(
      `note path \`${shortened(relative)}\` is too long: ${Buffer.byteLength(joined, 'utf8')} bytes with the notes folder, at most ${maxResolvedPathBytes}`,
    );
  }
  // Walk up to the deepest part that exists and check where it really is.
  let existing = joined;
  for (;;) {
    try {
      const real = await realpath(existing);
      if (!isInside(realRoot, real) && real !== realRoot) {
        throw new NotePathError(`note path \`${relative}\` goes through a link that leaves the notes folder`);
      }
      return path.join(real, path.relative(existing, joined));
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
      if (existing === realRoot) return joined;
      const parent = path.dirname(existing);
      if (parent === existing) throw error;
      existing = parent;
    }
  }
}

function isInside(root: string, candidate: string): boolean {
  const relative = path.relative(root, candidate);
  return relative !== '' && !relative.startsWith('..') && !path.isAbsolute(relative);
}
