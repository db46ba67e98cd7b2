import type {
  FolderListing,
  FrontmatterData,
  Note,
  NoteQueryOptions,
  NoteStore,
  NoteText,
  UpdateNoteOptions,
} from '@assistant/notes';
import type { EventSink } from './event-types.ts';

/** The folder approval requests are notes in (packages/actions `approvalsFolder`). */
const approvalsFolder = 'approvals';

/**
 * A note store that reports what Assistant writes to the ledger: `note.created` and `note.changed` for every note
 * (the native id is the note's path and the hash of what was written, so a repeated write is the same event), and,
 * for approval requests (`approvals/*.md`), `approval.requested` when one is made and `approval.decided` when its
 * status leaves `pending`. Each event is written after the note and before the call returns: a caller acknowledges
 * nothing before its event is durable. Notes people edit by hand are not seen *(planned)*.
 */
export class EventingNoteStore implements NoteStore {
  readonly #inner: NoteStore;
  readonly #events: EventSink;
  readonly #source: string;
  /** The notes root, as the file store it wraps has it. */
  readonly root: string;

  constructor(options: { notes: NoteStore & { readonly root: string }; events: EventSink; source: string }) {
    this.#inner = options.notes;
    this.root = options.notes.root;
    this.#events = options.events;
    this.#source = options.source;
  }

  read(notePath: string): Promise<Note | undefined> {
    return this.#inner.read(notePath);
  }

  readText(notePath: string): Promise<NoteText | undefined> {
    return this.#inner.readText(notePath);
  }

  listFolder(folder?: string): Promise<FolderListing | undefined> {
    return this.#inner.listFolder(folder);
  }

  delete(notePath: string): Promise<boolean> {
    return this.#inner.delete(notePath);
  }

  move(from: string, to: string): Promise<void> {
    return this.#inner.move(from, to);
  }

  list(folder?: string): Promise<string[]> {
    return this.#inner.list(folder);
  }

  query(options: NoteQueryOptions): Promise<Note[]> {
    return this.#inner.query(options);
  }

  async create(notePath: string, note: { data: FrontmatterData; body?: string }): Promise<Note> {
    const created = await this.#inner.create(notePath, note);
    await this.#report('note.created', created, Object.keys(created.data));
    if (folderOf(created.path) === approvalsFolder) await this.#approval(created, undefined);
    return created;
  }

  async update(notePath: string, options: UpdateNoteOptions): Promise<Note> {
    const before =
      folderOf(notePath) === approvalsFolder ? await this.#inner.read(notePath).catch(() => undefined) : undefined;
    const updated = await this.#inner.update(notePath, options);
    await this.#report('note.changed', updated, Object.keys(options.set ?? {}));
    if (folderOf(updated.path) === approvalsFolder) await this.#approval(updated, before);
    return updated;
  }

  async replaceText(notePath: string, options: { text: string; basedOnHash: string }): Promise<Note> {
    const replaced = await this.#inner.replaceText(notePath, options);
    await this.#report('note.changed', replaced, []);
    return replaced;
  }

  async #report(type: 'note.created' | 'note.changed', note: Note, keys: string[]): Promise<void> {
    await this.#events.emit({
      type,
      source: this.#source,
      nativeId: `${note.path}@${note.hash}`,
      data: {
        path: note.path,
        folder: folderOf(note.path),
        ...(type === 'note.changed' ? { keys: keys.slice(0, 50) } : {}),
      },
    });
  }

  async #approval(note: Note, before: Note | undefined): Promise<void> {
    const id = typeof note.data.id === 'string' ? note.data.id : note.path.replace(/^approvals\/|\.md$/g, '');
    const kind = typeof note.data.kind === 'string' ? note.data.kind : undefined;
    const status = typeof note.data.status === 'string' ? note.data.status : 'pending';
    if (!before) {
      await this.#events.emit({
        type: 'approval.requested',
        source: 'approvals',
        nativeId: id,
        data: { approval: id, ...(kind ? { kind } : {}) },
      });
    }
    if (status !== 'pending' && before?.data.status !== status) {
      await this.#events.emit({
        type: 'approval.decided',
        source: 'approvals',
        nativeId: `${id}:${status}`,
        data: { approval: id, decision: status, ...(kind ? { kind } : {}) },
      });
    }
  }
}

function folderOf(notePath: string): string {
  const at = notePath.lastIndexOf('/');
  return at < 0 ? '' : notePath.slice(0, at);
}
