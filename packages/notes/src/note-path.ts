import { realpath } from 'node:fs/promises';
import path from 'node:path';

/** A path that would leave the notes root: `..`, an absolute path, or a symlink pointing outside. */
export class NotePathError extends Error {
  override name = 'NotePathError';
}

/**
 * Resolves a note path given relative to the notes root (`email/personal/123.md`), refusing anything that would
 * read or write outside it. Symlinks are followed for the part of the path that exists, so a link inside the root
 * that points elsewhere is refused too.
 */
export async function resolveNotePath(root: string, relative: string): Promise<string> {
  if (relative === '' || path.isAbsolute(relative) || relative.includes('\0')) {
    throw new NotePathError(`note path \`${relative}\` must be relative to the notes folder`);
  }
  const realRoot = await realpath(root);
  const joined = path.resolve(realRoot, relative);
  if (!isInside(realRoot, joined)) throw new NotePathError(`note path \`${relative}\` leaves the notes folder`);
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
