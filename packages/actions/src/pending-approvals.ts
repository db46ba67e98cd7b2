import { readdir, stat } from 'node:fs/promises';
import path from 'node:path';
import { BrokenNoteError, type NoteStore } from '@assistant/notes';
import { type ApprovalRequest, approvalOfNote, approvalsFolder, listApprovals, sortApprovals } from './approvals.ts';

/** What a pass knows of one file of the approvals folder. */
interface Known {
  /** The file's identity when it was read: a write (a rename over it, an edit in place) changes one of them. */
  mtimeNs: bigint;
  size: bigint;
  ino: bigint;
  /** Its request while pending; undefined for a decided, expired, withdrawn or broken note. */
  pending: ApprovalRequest | undefined;
}

export interface PendingApprovalsOptions {
  /** The store the notes are read through. */
  notes: NoteStore;
  /**
   * The notes' root on this machine (a FileNoteStore's `root`): with it a pass reads only what changed; without
   * it (a remote store) every pass reads the whole folder, as `listApprovals` does.
   */
  root?: string;
  /** A note of the folder that is not a request (reported once per change of the file). */
  onBroken?: (message: string) => void;
  /** Every this often a pass looks at every file again, whatever the folder says. @default 60 s */
  recheckMs?: number;
  /** @default Date.now */
  now?: () => number;
}

/**
 * The pending approval requests, for the passes that look for them every few seconds (the server's notifier, each
 * chat channel's pushes): a pass reads only what changed, not every request ever made (issue 38: 10,000 approval
 * notes, a pass within 20 ms).
 *
 * Every write of a note is a rename into the folder (FileNoteStore's atomic write), which changes the folder's mtime;
 * so does a file made or removed by hand. A pass therefore lists the folder only when its mtime moved (or moved too
 * recently to be trusted: the kernel's clock is coarse), reads the files it has not seen, and looks again (a `stat`)
 * at the pending ones only: a decided request stays decided. An edit in place by hand (an editor writing a note
 * where it is) does not move the folder's mtime: it is seen at once on a pending note, and within `recheckMs` on any
 * other, when a pass looks at every file again.
 */
export class PendingApprovals {
  readonly #options: PendingApprovalsOptions;
  readonly #known = new Map<string, Known>();
  /** The folder's mtime at the last listing, and whether it was old enough then to trust an equal one later. */
  #listed: { mtimeNs: bigint; trusted: boolean } | undefined;
  #lastFullMs = Number.NEGATIVE_INFINITY;
  #chain: Promise<unknown> = Promise.resolve();

  constructor(options: PendingApprovalsOptions) {
    this.#options = options;
  }

  /** The pending requests, newest first. Passes run one at a time. */
  list(): Promise<ApprovalRequest[]> {
    const next = this.#chain.then(() => this.#pass());
    this.#chain = next.catch(() => {});
    return next;
  }

  async #pass(): Promise<ApprovalRequest[]> {
    const root = this.#options.root;
    if (root === undefined) {
      return listApprovals(this.#options.notes, {
        status: 'pending',
        ...(this.#options.onBroken ? { onBroken: this.#options.onBroken } : {}),
      });
    }
    const folder = path.join(root, approvalsFolder);
    const now = (this.#options.now ?? Date.now)();
    let folderStat: Awaited<ReturnType<typeof statBig>>;
    try {
      folderStat = await statBig(folder);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
      this.#known.clear();
      this.#listed = undefined;
      return [];
    }
    const full = now - this.#lastFullMs >= (this.#options.recheckMs ?? 60_000);
    const unchanged = !full && this.#listed?.trusted === true && this.#listed.mtimeNs === folderStat.mtimeNs;
    // What to look at: every file on a full pass; the new ones and the pending ones when the folder changed; the
    // pending ones only when it did not.
    let look: string[];
    if (unchanged) {
      look = [...this.#known].filter(([, known]) => known.pending !== undefined).map(([name]) => name);
    } else {
      const names = await noteNames(folder);
      const present = new Set(names);
      for (const name of this.#known.keys()) if (!present.has(name)) this.#known.delete(name);
      look = full
        ? names
        : names.filter((name) => this.#known.get(name)?.pending !== undefined || !this.#known.has(name));
      // An mtime this close to now may be shared by a change made right after the listing: not trusted next time.
      this.#listed = { mtimeNs: folderStat.mtimeNs, trusted: now - Number(folderStat.mtimeNs / 1_000_000n) > 2_000 };
      if (full) this.#lastFullMs = now;
    }
    await Promise.all(look.map((name) => this.#look(folder, name)));
    // By name first, as listApprovals reads them, so requests made in the same millisecond keep its order.
    const byName = [...this.#known].sort(([left], [right]) => (left < right ? -1 : left > right ? 1 : 0));
    return sortApprovals(byName.flatMap(([, known]) => (known.pending === undefined ? [] : [known.pending])));
  }

  /** Reads a file again when it is new or changed since it was read. */
  async #look(folder: string, name: string): Promise<void> {
    let current: Awaited<ReturnType<typeof statBig>>;
    try {
      current = await statBig(path.join(folder, name));
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
      this.#known.delete(name);
      return;
    }
    const known = this.#known.get(name);
    if (known && known.mtimeNs === current.mtimeNs && known.size === current.size && known.ino === current.ino) return;
    const notePath = `${approvalsFolder}/${name}`;
    let pending: ApprovalRequest | undefined;
    try {
      const note = await this.#options.notes.read(notePath);
      if (note === undefined) {
        this.#known.delete(name);
        return;
      }
      const parsed = approvalOfNote(note);
      if (!parsed.ok) this.#options.onBroken?.(parsed.broken);
      else if (parsed.request.status === 'pending') pending = parsed.request;
    } catch (error) {
      if (!(error instanceof BrokenNoteError)) throw error;
      this.#options.onBroken?.(error.message);
    }
    this.#known.set(name, { mtimeNs: current.mtimeNs, size: current.size, ino: current.ino, pending });
  }
}

function statBig(file: string) {
  return stat(file, { bigint: true });
}

/** The notes (`*.md`, not hidden: a temporary file is) directly in the folder. Requests are never in subfolders. */
async function noteNames(folder: string): Promise<string[]> {
  try {
    return (await readdir(folder, { withFileTypes: true }))
      .filter((entry) => entry.isFile() && entry.name.endsWith('.md') && !entry.name.startsWith('.'))
      .map((entry) => entry.name);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw error;
  }
}
