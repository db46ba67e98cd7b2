import { statSync } from 'node:fs';
import { type NoteStore, type PauseState, PauseStore } from '@assistant/notes';

/** How long a read of the pause note is used at most, even when its file looks unchanged. */
const maxPauseAgeMs = 1_000;

export interface PauseReaderOptions {
  /** The store the note is read through (its checks: the notes root, broken frontmatter). */
  notes: NoteStore;
  /** The pause note's file on this machine (`{notes}/system/paused.md`). */
  file: string;
  /** @default Date.now */
  now?: () => number;
}

/**
 * What is paused, for every task the worker runs: the pause note read again only when its file changed (inode, size,
 * modification and change times, to the nanosecond), and at least once a second. Reading it through the note
 * store for every task (a directory made, a path resolved, the file read or found missing) cost more than the task
 * itself in `bench:queue --through-worker`; a `stat` sees a pause or resume from the CLI, the API, the dashboard or
 * a hand edit just as soon. The second bound covers a file system whose times are too coarse to tell two quick
 * edits of the same size apart.
 */
export function pauseReader(options: PauseReaderOptions): () => Promise<PauseState> {
  const store = new PauseStore({ notes: options.notes });
  const now = options.now ?? Date.now;
  let cached: { key: string; atMs: number; state: PauseState } | undefined;
  return async () => {
    // Taken before the read: a change during the read makes the next call read again.
    const key = fileKey(options.file);
    const nowMs = now();
    if (cached && cached.key === key && nowMs - cached.atMs < maxPauseAgeMs) return cached.state;
    const state = await store.read();
    cached = { key, atMs: nowMs, state };
    return state;
  };
}

/** What tells one version of a file from another; `none` when it is not there (or cannot be looked at). */
function fileKey(file: string): string {
  try {
    // Synchronous on purpose: one stat(2) on this thread costs microseconds, less than a trip through the pool.
    const info = statSync(file, { bigint: true, throwIfNoEntry: false });
    return info ? `${info.dev}:${info.ino}:${info.size}:${info.mtimeNs}:${info.ctimeNs}` : 'none';
  } catch (error) {
    return `error:${(error as NodeJS.ErrnoException).code ?? 'unknown'}`;
  }
}
