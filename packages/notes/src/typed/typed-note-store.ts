import type * as z from 'zod';
import type { FrontmatterData } from '../frontmatter.ts';
import { NoteIndex } from '../note-index.ts';
import type { FileNoteStore, Note } from '../note-store.ts';

/** A note whose frontmatter passed its store's schema. */
export interface TypedNote<T> extends Omit<Note, 'data'> {
  data: T;
}

/** The frontmatter every typed note has: what was already done to the item, so it is never done twice. */
export interface ActionsTaken {
  actions_taken?: { action: string; at: string; task?: string | undefined }[] | undefined;
}

/** A note that exists but does not match its store's schema: which file, which field, why. */
export class InvalidNoteError extends Error {
  override name = 'InvalidNoteError';
  readonly path: string;

  constructor(notePath: string, issue: z.core.$ZodIssue | undefined) {
    const where = issue && issue.path.length > 0 ? `${issue.path.map(String).join('.')}: ` : '';
    super(`${notePath}: ${where}${issue?.message ?? 'does not match its schema'}`);
    this.path = notePath;
  }
}

export interface TypedNoteStoreOptions<T> {
  /** A file store: its index watches the folder on disk. */
  store: FileNoteStore;
  /** The folder this store owns: `email/personal`. */
  folder: string;
  schema: z.ZodType<T>;
  /** Keys indexed for lookups. */
  indexKeys: readonly string[];
}

/**
 * A folder of notes of one kind, validated by a zod schema on every read and write, with an index for lookups
 * by id and a record of the actions taken on each item.
 */
export class TypedNoteStore<T extends FrontmatterData & ActionsTaken> {
  readonly store: FileNoteStore;
  readonly folder: string;
  readonly schema: z.ZodType<T>;
  readonly index: NoteIndex;

  constructor(options: TypedNoteStoreOptions<T>) {
    this.store = options.store;
    this.folder = options.folder;
    this.schema = options.schema;
    this.index = new NoteIndex({ store: options.store, keys: options.indexKeys, folder: options.folder });
  }

  /** Reads the folder once and starts watching it, so `findBy` never scans. */
  async open(): Promise<void> {
    await this.index.start();
  }

  async close(): Promise<void> {
    await this.index.close();
  }

  #check(notePath: string, data: unknown): T {
    const parsed = this.schema.safeParse(data);
    if (!parsed.success) throw new InvalidNoteError(notePath, parsed.error.issues[0]);
    return parsed.data;
  }

  async read(notePath: string): Promise<TypedNote<T> | undefined> {
    const note = await this.store.read(notePath);
    return note ? { ...note, data: this.#check(notePath, note.data) } : undefined;
  }

  /** The notes whose `key` is `value`, from the index. */
  async findBy(key: string, value: unknown): Promise<TypedNote<T>[]> {
    const found: TypedNote<T>[] = [];
    for (const notePath of this.index.find(key, value)) {
      const note = await this.read(notePath);
      if (note) found.push(note);
    }
    return found;
  }

  /** Creates the note, or updates only the given keys of an existing one (keeping a person's edits). */
  async save(notePath: string, data: T, body?: string): Promise<TypedNote<T>> {
    const checked = this.#check(notePath, data);
    const existing = await this.store.read(notePath);
    const note = existing
      ? await this.store.update(notePath, {
          set: checked,
          basedOn: existing,
          ...(body === undefined ? {} : { body }),
        })
      : await this.store.create(notePath, { data: checked, ...(body === undefined ? {} : { body }) });
    await this.index.refresh(notePath);
    return { ...note, data: this.#check(notePath, note.data) };
  }

  /** Whether `action` was already taken on this item. */
  async hasTaken(notePath: string, action: string): Promise<boolean> {
    const note = await this.read(notePath);
    return note?.data.actions_taken?.some((entry) => entry.action === action) ?? false;
  }

  /** Records that `action` was taken; a second record of the same action is not added. */
  async recordAction(notePath: string, action: string, task?: string): Promise<void> {
    const note = await this.store.read(notePath);
    if (!note) throw new Error(`${notePath}: no such note to record \`${action}\` on`);
    const data = this.#check(notePath, note.data);
    const taken = data.actions_taken ?? [];
    if (taken.some((entry) => entry.action === action)) return;
    const entry = { action, at: new Date().toISOString(), ...(task === undefined ? {} : { task }) };
    await this.store.update(notePath, { set: { actions_taken: [...taken, entry] }, basedOn: note });
    await this.index.refresh(notePath);
  }
}
