import { scrubSecrets, scrubSecretsDeep } from '@assistant/errors';
import { type FrontmatterChanges, type FrontmatterData, FrontmatterError } from '../frontmatter.ts';
import {
  BrokenNoteError,
  type FolderListing,
  type Note,
  NoteConflictError,
  type NoteQueryOptions,
  type NoteStore,
  type NoteText,
  type UpdateNoteOptions,
} from '../note-store.ts';
import {
  deleteAnswerWire,
  emptyAnswerWire,
  errorFromNoteFailure,
  listAnswerWire,
  listFolderAnswerWire,
  noteAnswerWire,
  queryAnswerWire,
  readAnswerWire,
  readTextAnswerWire,
  remoteStoreRoutes,
  StaleNoteError,
} from './note-wire.ts';
import { RemoteStoreClient, type RemoteStoreOptions } from './store-client.ts';

export interface HttpNoteStoreOptions extends RemoteStoreOptions {
  /**
   * How many times an update with a `change` callback is decided again when the note changed between the read and
   * the write; then NoteConflictError. Each retry means another writer's update landed in between, so this many
   * writers updating one note at once all get through.
   * @default 10
   */
  maxChangeAttempts?: number;
}

/**
 * The server's notes, through its API: what a worker on another machine uses instead of FileNoteStore. The server
 * applies each write to its own files with FileNoteStore, so the conflict check against a person's edits is the same
 * one (the server compares the based-on hash with the file on its disk), and errors arrive as the file store's.
 */
export class HttpNoteStore implements NoteStore {
  readonly #client: RemoteStoreClient;
  readonly #maxChangeAttempts: number;

  constructor(options: HttpNoteStoreOptions) {
    this.#client = new RemoteStoreClient(options);
    this.#maxChangeAttempts = Math.max(1, options.maxChangeAttempts ?? 10);
  }

  async read(notePath: string): Promise<Note | undefined> {
    const answer = await this.#client.send({
      method: 'GET',
      route: remoteStoreRoutes.read,
      query: { path: notePath },
      answer: readAnswerWire,
    });
    return answer.note ?? undefined;
  }

  async readText(notePath: string): Promise<NoteText | undefined> {
    const answer = await this.#client.send({
      method: 'GET',
      route: remoteStoreRoutes.readText,
      query: { path: notePath },
      answer: readTextAnswerWire,
    });
    return answer.note ?? undefined;
  }

  async replaceText(notePath: string, options: { text: string; basedOnHash: string }): Promise<Note> {
    const answer = await this.#client.send({
      method: 'POST',
      route: remoteStoreRoutes.replaceText,
      // Scrubbed here too: the server knows its own secrets, not the ones this worker loaded.
      body: { path: notePath, text: scrubSecrets(options.text), basedOnHash: options.basedOnHash },
      answer: noteAnswerWire,
    });
    return answer.note;
  }

  async listFolder(folder = ''): Promise<FolderListing | undefined> {
    const answer = await this.#client.send({
      method: 'GET',
      route: remoteStoreRoutes.listFolder,
      query: { folder: folder === '' ? undefined : folder },
      answer: listFolderAnswerWire,
    });
    return answer.listing ?? undefined;
  }

  async create(notePath: string, note: { data: FrontmatterData; body?: string }): Promise<Note> {
    const answer = await this.#client.send({
      method: 'POST',
      route: remoteStoreRoutes.create,
      body: {
        path: notePath,
        data: scrubSecretsDeep(note.data),
        ...(note.body === undefined ? {} : { body: scrubSecrets(note.body) }),
      },
      answer: noteAnswerWire,
    });
    return answer.note;
  }

  /**
   * As FileNoteStore's. `basedOn` travels (hash, data and body), and the server runs the key-overlap check under the
   * note's lock. A `change` callback cannot travel: it is run here on the note as read, and the write is sent with
   * "only if the file is still that version"; when another write landed in between, it is read and decided again.
   */
  async update(notePath: string, options: UpdateNoteOptions): Promise<Note> {
    const { change } = options;
    if (!change) return this.#sendUpdate(notePath, options.set, options.body, options.basedOn, undefined);
    let wanted: string[] = [];
    for (let attempt = 1; attempt <= this.#maxChangeAttempts; attempt++) {
      const current = await this.read(notePath);
      if (!current) {
        throw errorFromNoteFailure({ kind: 'errno', errno: 'ENOENT' }, `ENOENT: there is no note ${notePath}`);
      }
      const decided = change(current);
      const set = decided.set ? { ...options.set, ...decided.set } : options.set;
      const body = decided.body ?? options.body;
      wanted = [...Object.keys(set ?? {}), ...(body === undefined ? [] : ['(body)'])];
      try {
        return await this.#sendUpdate(notePath, set, body, options.basedOn, current.hash);
      } catch (error) {
        if (!(error instanceof StaleNoteError)) throw error;
      }
    }
    throw new NoteConflictError(notePath, wanted.length > 0 ? wanted : ['(file)']);
  }

  async #sendUpdate(
    notePath: string,
    set: FrontmatterChanges | undefined,
    body: string | undefined,
    basedOn: Note | undefined,
    ifHash: string | undefined,
  ): Promise<Note> {
    // JSON has no `undefined`: a key to remove is named in `unset`.
    const entries = Object.entries(set ?? {});
    const kept = Object.fromEntries(entries.filter(([, value]) => value !== undefined));
    const unset = entries.filter(([, value]) => value === undefined).map(([key]) => key);
    const answer = await this.#client.send({
      method: 'POST',
      route: remoteStoreRoutes.update,
      body: {
        path: notePath,
        ...(set === undefined ? {} : { set: scrubSecretsDeep(kept) }),
        ...(unset.length === 0 ? {} : { unset }),
        ...(body === undefined ? {} : { body: scrubSecrets(body) }),
        // As read, not scrubbed: the server compares it with the file to find what changed since.
        ...(basedOn === undefined ? {} : { basedOn: { hash: basedOn.hash, data: basedOn.data, body: basedOn.body } }),
        ...(ifHash === undefined ? {} : { ifHash }),
      },
      answer: noteAnswerWire,
    });
    return answer.note;
  }

  async delete(notePath: string): Promise<boolean> {
    const answer = await this.#client.send({
      method: 'POST',
      route: remoteStoreRoutes.delete,
      body: { path: notePath },
      answer: deleteAnswerWire,
    });
    return answer.deleted;
  }

  async move(from: string, to: string): Promise<void> {
    await this.#client.send({
      method: 'POST',
      route: remoteStoreRoutes.move,
      body: { from, to },
      answer: emptyAnswerWire,
    });
  }

  async list(folder = ''): Promise<string[]> {
    const answer = await this.#client.send({
      method: 'GET',
      route: remoteStoreRoutes.list,
      query: { folder: folder === '' ? undefined : folder },
      answer: listAnswerWire,
    });
    return answer.paths;
  }

  /**
   * One request: the server reads the folder and applies field conditions itself. A predicate function cannot travel,
   * so with one every note of the folder comes back and the predicate runs here.
   */
  async query(options: NoteQueryOptions): Promise<Note[]> {
    const where = options.where;
    const answer = await this.#client.send({
      method: 'POST',
      route: remoteStoreRoutes.query,
      body: {
        ...(options.folder ? { folder: options.folder } : {}),
        ...(where === undefined || typeof where === 'function' ? {} : { where }),
      },
      answer: queryAnswerWire,
    });
    for (const broken of answer.broken) {
      options.onBroken?.(
        new BrokenNoteError(broken.path, new FrontmatterError(broken.reason, broken.line, broken.column)),
      );
    }
    return typeof where === 'function' ? answer.notes.filter((note) => where(note.data)) : answer.notes;
  }
}
