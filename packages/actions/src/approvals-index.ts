import { readdir, stat } from 'node:fs/promises';
import path from 'node:path';
import { BrokenNoteError, type NoteStore } from '@assistant/notes';
import { type ApprovalRequest, approvalOfNote, approvalsFolder, listApprovals, sortApprovals } from './approvals.ts';

/** What the index knows of one file of the approvals folder. */
interface Known {
  /** The file's identity when it was read: a write (a rename over it, an edit in place) changes one of them. */
  mtimeNs: bigint;
  size: bigint;
  ino: bigint;
  /** Its request, whatever its status; undefined for a broken note (or one that is not a request). */
  request: ApprovalRequest | undefined;
  /** Why it is not a request, for a broken note. */
  broken: string | undefined;
}

export interface ApprovalsIndexOptions {
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

/** The two kinds of pass: the pending requests only, or every request (the Approvals page, an item's timeline). */
type PassKind = 'pending' | 'all';

/**
 * The approval requests, read once and then only where they changed: the passes that look for pending ones every few
 * seconds (the server's notifier, each chat channel's pushes, the dashboard's count) and the Approvals page's full
 * list share it (issue 38: 10,000 approval notes, a pass within 20 ms).
 *
 * Every write of a note is a rename into the folder (FileNoteStore's atomic write), which changes the folder's mtime;
 * so does a file made or removed by hand. A pass therefore lists the folder only when its mtime moved since that kind
 * of pass last listed it (or moved too recently to be trusted: the kernel's clock is coarse). Then a pending pass
 * reads the files it has not seen and looks again (a `stat`) at the pending ones only, a decided request staying
 * decided; a full pass looks at every file (a decided request still changes: its outcome is written to it). While the
 * folder did not move, either pass looks at the pending ones only. An edit in place by hand (an editor writing a note
 * where it is) does not move the folder's mtime: it is seen at once on a pending note, and within `recheckMs` on any
 * other, when a pass looks at every file again.
 */
export class ApprovalsIndex {
  readonly #options: ApprovalsIndexOptions;
  readonly #known = new Map<string, Known>();
  /** Per kind of pass, the folder's mtime at its last listing, and whether it was old enough to trust an equal one. */
  readonly #listed = new Map<PassKind, { mtimeNs: bigint; trusted: boolean }>();
  #lastFullMs = Number.NEGATIVE_INFINITY;
  #chain: Promise<unknown> = Promise.resolve();

  constructor(options: ApprovalsIndexOptions) {
    this.#options = options;
  }

  /** The pending requests, newest first. Passes run one at a time. */
  pending(): Promise<ApprovalRequest[]> {
    return this.#queue(async () => {
      if (this.#options.root === undefined) return listApprovals(this.#options.notes, this.#listOptions('pending'));
      await this.#pass('pending', this.#options.root);
      return this.#requests('pending');
    });
  }

  /**
   * Every request (or those of one status), newest first, as `listApprovals` lists them, and the notes of the folder
   * that are not requests.
   */
  list(status?: ApprovalRequest['status']): Promise<{ requests: ApprovalRequest[]; broken: string[] }> {
    return this.#queue(async () => {
      const root = this.#options.root;
      if (root === undefined) {
        const broken: string[] = [];
        const requests = await listApprovals(this.#options.notes, {
          ...(status === undefined ? {} : { status }),
          onBroken: (message) => {
            broken.push(message);
            this.#options.onBroken?.(message);
          },
        });
        return { requests, broken };
      }
      await this.#pass('all', root);
      const broken = this.#byName().flatMap(([, known]) => (known.broken === undefined ? [] : [known.broken]));
      return { requests: this.#requests(status), broken };
    });
  }

  #queue<T>(pass: () => Promise<T>): Promise<T> {
    const next = this.#chain.then(pass);
    this.#chain = next.catch(() => {});
    return next;
  }

  #listOptions(status: ApprovalRequest['status']) {
    return { status, ...(this.#options.onBroken ? { onBroken: this.#options.onBroken } : {}) };
  }

  /** By name first, as listApprovals reads them, so requests made in the same millisecond keep its order. */
  #byName(): [string, Known][] {
    return [...this.#known].sort(([left], [right]) => (left < right ? -1 : left > right ? 1 : 0));
  }

  #requests(status: ApprovalRequest['status'] | undefined): ApprovalRequest[] {
    return sortApprovals(
      this.#byName().flatMap(([, { request }]) =>
        request !== undefined && (status === undefined || request.status === status) ? [request] : [],
      ),
    );
  }

  async #pass(kind: PassKind, root: string): Promise<void> {
    const folder = path.join(root, approvalsFolder);
    const now = (this.#options.now ?? Date.now)();
    let folderStat: Awaited<ReturnType<typeof statBig>>;
    try {
      folderStat = await statBig(folder);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
      this.#known.clear();
      this.#listed.clear();
      return;
    }
    const recheck = now - this.#lastFullMs >= (this.#options.recheckMs ?? 60_000);
    const listed = this.#listed.get(kind);
    const unchanged = !recheck && listed?.trusted === true && listed.mtimeNs === folderStat.mtimeNs;
    const isPending = (name: string) => this.#known.get(name)?.request?.status === 'pending';
    // What to look at: every file on a recheck or a full pass over a changed folder; the new ones and the pending ones
    // on a pending pass over a changed folder; the pending ones only when it did not change.
    let look: string[];
    if (unchanged) {
      look = [...this.#known.keys()].filter(isPending);
    } else {
      const names = await noteNames(folder);
      const present = new Set(names);
      for (const name of this.#known.keys()) if (!present.has(name)) this.#known.delete(name);
      look = recheck || kind === 'all' ? names : names.filter((name) => isPending(name) || !this.#known.has(name));
      // An mtime this close to now may be shared by a change made right after the listing: not trusted next time.
      const mark = { mtimeNs: folderStat.mtimeNs, trusted: now - Number(folderStat.mtimeNs / 1_000_000n) > 2_000 };
      this.#listed.set(kind, mark);
      // A full look serves both kinds; a pending pass's listing leaves decided requests unread, so not the full one.
      if (recheck || kind === 'all') this.#listed.set('pending', mark);
      if (recheck) this.#lastFullMs = now;
    }
    await eachLimited(look, (name) => this.#look(folder, name));
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
    let request: ApprovalRequest | undefined;
    let broken: string | undefined;
    try {
      const note = await this.#options.notes.read(notePath);
      if (note === undefined) {
        this.#known.delete(name);
        return;
      }
      const parsed = approvalOfNote(note);
      if (parsed.ok) request = parsed.request;
      else broken = parsed.broken;
    } catch (error) {
      if (!(error instanceof BrokenNoteError)) throw error;
      broken = error.message;
    }
    if (broken !== undefined) this.#options.onBroken?.(broken);
    this.#known.set(name, { mtimeNs: current.mtimeNs, size: current.size, ino: current.ino, request, broken });
  }
}

/** How many files a pass stats or reads at once. */
const concurrency = 16;

async function eachLimited<T>(items: readonly T[], work: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const item = items[next] as T;
      next += 1;
      await work(item);
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, items.length) }, worker));
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
