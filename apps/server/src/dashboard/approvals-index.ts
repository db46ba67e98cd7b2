import { stat } from 'node:fs/promises';
import path from 'node:path';
import { type ApprovalRequest, approvalOfNote, approvalsFolder, sortApprovals } from '@assistant/actions';
import { BrokenNoteError, type RootedNoteStore } from '@assistant/notes';

interface Entry {
  /** Size and modification time when it was read: a change to either reads it again. */
  version: string;
  request?: ApprovalRequest;
  broken?: string;
}

/** How many notes are stat'ed or read at once. */
const concurrency = 16;

/**
 * The approval requests as the Approvals page lists them, read once and then again only when a note changes (its size
 * or modification time): `listApprovals` reads every note of the folder, which with a few thousand requests (they
 * stay after they are decided) takes a second per page view. The parsing is `listApprovals`' own (`approvalOfNote`),
 * and so is the order (`sortApprovals`).
 */
export class ApprovalsIndex {
  readonly #notes: RootedNoteStore;
  readonly #entries = new Map<string, Entry>();

  constructor(notes: RootedNoteStore) {
    this.#notes = notes;
  }

  async list(
    status: ApprovalRequest['status'] | undefined,
  ): Promise<{ requests: ApprovalRequest[]; broken: string[] }> {
    const paths = await this.#notes.list(approvalsFolder);
    const present = new Set(paths);
    for (const known of this.#entries.keys()) if (!present.has(known)) this.#entries.delete(known);
    await eachLimited(paths, async (notePath) => {
      const file = path.join(this.#notes.root, ...notePath.split('/'));
      const info = await stat(file).catch(() => undefined);
      if (!info) {
        this.#entries.delete(notePath);
        return;
      }
      const version = `${info.size}:${info.mtimeMs}`;
      if (this.#entries.get(notePath)?.version === version) return;
      this.#entries.set(notePath, { version, ...(await this.#read(notePath)) });
    });
    const requests: ApprovalRequest[] = [];
    const broken: string[] = [];
    for (const notePath of paths) {
      const entry = this.#entries.get(notePath);
      if (entry?.broken) broken.push(entry.broken);
      if (entry?.request && (status === undefined || entry.request.status === status)) requests.push(entry.request);
    }
    return { requests: sortApprovals(requests), broken };
  }

  async #read(notePath: string): Promise<Omit<Entry, 'version'>> {
    try {
      const note = await this.#notes.read(notePath);
      if (!note) return {};
      const parsed = approvalOfNote(note);
      return parsed.ok ? { request: parsed.request } : { broken: parsed.broken };
    } catch (error) {
      if (error instanceof BrokenNoteError) return { broken: error.message };
      throw error;
    }
  }
}

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

const indexes = new WeakMap<object, ApprovalsIndex>();

/**
 * The server's one approvals index (the Approvals page, the Overview's pending approvals and the nav's count, an
 * item's timeline), made the first time a page needs it. Keyed by the dashboard's context.
 */
export function approvalsIndexFor(context: { notes: RootedNoteStore }): ApprovalsIndex {
  let index = indexes.get(context);
  if (!index) {
    index = new ApprovalsIndex(context.notes);
    indexes.set(context, index);
  }
  return index;
}
