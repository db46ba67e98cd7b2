import { createHash, randomBytes } from 'node:crypto';
import { link, mkdir, open, readdir, readFile, realpath, rename, unlink } from 'node:fs/promises';
import path from 'node:path';
import { scrubSecrets, scrubSecretsDeep } from '@assistant/errors';
import { withFileLock } from './file-lock.ts';
import {
  type FrontmatterChanges,
  type FrontmatterData,
  FrontmatterError,
  joinNote,
  parseFrontmatter,
  rememberFrontmatter,
  splitNote,
  updateFrontmatterText,
} from './frontmatter.ts';
import { resolveNotePath } from './note-path.ts';
import { matchesWhere, type NoteWhere } from './note-query.ts';

/** A note as read: its data, its body, and the hash of the exact bytes it was read from. */
export interface Note {
  /** Relative to the notes root, with `/` separators. */
  path: string;
  data: FrontmatterData;
  body: string;
  /** SHA-256 of the file's bytes when read: the version a later update is based on. */
  hash: string;
}

/** A note whose frontmatter cannot be read. It is reported and skipped, never overwritten by the system. */
export class BrokenNoteError extends Error {
  override name = 'BrokenNoteError';
  readonly path: string;
  readonly line: number;

  constructor(notePath: string, cause: FrontmatterError) {
    super(`${notePath}:${cause.line}:${cause.column}: ${cause.message.replace(/^line \d+, column \d+: /, '')}`, {
      cause,
    });
    this.path = notePath;
    this.line = cause.line;
  }
}

/** Someone changed the same keys on disk since the note was read: the update is refused, nothing is written. */
export class NoteConflictError extends Error {
  override name = 'NoteConflictError';
  readonly path: string;
  readonly keys: string[];

  constructor(notePath: string, keys: string[]) {
    super(
      `${notePath} was changed on disk since it was read, and the change touches ${keys.map((key) => `\`${key}\``).join(', ')}`,
    );
    this.path = notePath;
    this.keys = keys;
  }
}

export interface UpdateNoteOptions {
  /** Top-level frontmatter keys to set; `undefined` removes a key. */
  set?: FrontmatterChanges;
  /** Replaces the body. */
  body?: string;
  /** The note as the caller read it; without it, the update applies to whatever is on disk now. */
  basedOn?: Note | undefined;
  /**
   * Decides the change from the note as it is on disk, under the note's lock: an atomic read-check-modify between
   * Assistant's own writers. Return the keys to set (merged over `set`) and/or a new body, or throw to write
   * nothing (the error reaches the caller). Keep it quick and free of slow I/O: it runs while the lock is held.
   */
  change?: ((current: Note) => { set?: FrontmatterChanges; body?: string }) | undefined;
}

/** A note's exact text and the hash of it: what a person edits, and the version their save is based on. */
export interface NoteText {
  path: string;
  text: string;
  /** SHA-256 of the text, as `Note.hash`. */
  hash: string;
}

/** One folder's direct contents: its subfolders and its notes, each sorted. */
export interface FolderListing {
  folders: string[];
  /** Paths relative to the root, like `list` returns. */
  notes: string[];
}

/** What `query` takes: a folder and the conditions its notes must meet. */
export interface NoteQueryOptions {
  folder?: string;
  /** Field conditions (equality, ranges, exists), or any predicate over the data. */
  where?: NoteWhere | ((data: FrontmatterData) => boolean);
  onBroken?: (error: BrokenNoteError) => void;
}

/**
 * Markdown notes with YAML frontmatter, as handlers, actions and chat use them: FileNoteStore keeps them on this
 * machine's disk, HttpNoteStore reaches the server's through its API (a remote worker). Both raise the same errors:
 * BrokenNoteError, NoteConflictError, NotePathError, and Node's `EEXIST`/`ENOENT`/`ENOTDIR` codes where the file
 * store would.
 */
export interface NoteStore {
  /** Reads a note; undefined when there is none. Throws BrokenNoteError for unreadable frontmatter. */
  read(notePath: string): Promise<Note | undefined>;
  /** A note's exact text and its hash, whether or not its frontmatter parses; undefined when there is none. */
  readText(notePath: string): Promise<NoteText | undefined>;
  /** Replaces a note's whole text, provided it is still the version `basedOnHash` names (NoteConflictError if not). */
  replaceText(notePath: string, options: { text: string; basedOnHash: string }): Promise<Note>;
  /** One folder's subfolders and notes, not recursive; undefined when the folder does not exist. */
  listFolder(folder?: string): Promise<FolderListing | undefined>;
  /** Creates a note; fails with `EEXIST` when one exists at that path already. */
  create(notePath: string, note: { data: FrontmatterData; body?: string }): Promise<Note>;
  /** Changes some frontmatter keys and/or the body, keeping a person's edits made since `basedOn` was read. */
  update(notePath: string, options: UpdateNoteOptions): Promise<Note>;
  /** Removes a note; false when there was none. */
  delete(notePath: string): Promise<boolean>;
  move(from: string, to: string): Promise<void>;
  /** Notes under a folder, recursively, as sorted paths relative to the root. */
  list(folder?: string): Promise<string[]>;
  /** The notes under a folder whose data matches `where`; broken ones go to `onBroken`, never thrown. */
  query(options: NoteQueryOptions): Promise<Note[]>;
}

/** A note store over files under `root` (the dashboard reads files' times and paths beside the notes). */
export type RootedNoteStore = NoteStore & { readonly root: string };

export interface FileNoteStoreOptions {
  /** The notes root: `data/notes`. */
  root: string;
}

/**
 * Markdown notes with YAML frontmatter under one root. Writes are atomic (temp file in the same folder, then
 * rename); updates edit only the keys they change, byte for byte; an update based on an older read is re-applied
 * to the newer file when it touches other keys, and refused with NoteConflictError when it touches the same ones.
 */
export class FileNoteStore implements NoteStore {
  readonly root: string;
  /**
   * The root made (on first use) and its real path, once per store: every note call used to make the root and
   * resolve its real path again, two file-system calls of the four or five a read takes. A failure is not kept.
   */
  #realRoot: Promise<string> | undefined;

  constructor(options: FileNoteStoreOptions) {
    this.root = path.resolve(options.root);
  }

  #rootReady(): Promise<string> {
    if (this.#realRoot === undefined) {
      const ready = mkdir(this.root, { recursive: true, mode: 0o700 }).then(() => realpath(this.root));
      this.#realRoot = ready;
      ready.catch(() => {
        if (this.#realRoot === ready) this.#realRoot = undefined;
      });
    }
    return this.#realRoot;
  }

  async #file(notePath: string): Promise<string> {
    return resolveNotePath(this.root, notePath, { realRoot: await this.#rootReady() });
  }

  /** Reads a note; undefined when there is none. Throws BrokenNoteError for unreadable frontmatter. */
  async read(notePath: string): Promise<Note | undefined> {
    const file = await this.#file(notePath);
    let text: string;
    try {
      text = await readFile(file, 'utf8');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw error;
    }
    return parseNote(notePath, text);
  }

  /**
   * Reads a note's exact text, whether or not its frontmatter parses (a broken note is shown and fixed as text);
   * undefined when there is none.
   */
  async readText(notePath: string): Promise<NoteText | undefined> {
    const file = await this.#file(notePath);
    try {
      const text = await readFile(file, 'utf8');
      return { path: notePath, text, hash: hashOf(text) };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw error;
    }
  }

  /**
   * Replaces a note's whole text with what a person wrote (frontmatter comments, key order and all), provided the
   * file is still the version they read: `basedOnHash` is the `hash` of that read. When the file changed since,
   * NoteConflictError (its keys are `['(file)']`: the whole text was to be replaced) and nothing is written. The new frontmatter must parse: FrontmatterError (with its line in the file) otherwise. Atomic, under
   * the note's lock, like `update`.
   */
  async replaceText(notePath: string, options: { text: string; basedOnHash: string }): Promise<Note> {
    const file = await this.#file(notePath);
    const wanted = scrubSecrets(options.text);
    // Parse first: a save that would leave a broken note is refused before the lock is taken.
    const next = parseNote(notePath, wanted);
    return withFileLock(file, async () => {
      const text = await readFile(file, 'utf8');
      const currentHash = hashOf(text);
      if (currentHash !== options.basedOnHash) throw new NoteConflictError(notePath, ['(file)']);
      if (text === wanted) return next;
      await writeAtomically(file, wanted, { exclusive: false });
      return next;
    });
  }

  /**
   * One folder's subfolders and notes (`*.md`), not recursive: what a folder view shows without walking the tree.
   * Hidden entries and symlinks are left out, as `list` leaves them out. Undefined when the folder does not exist.
   */
  async listFolder(folder = ''): Promise<FolderListing | undefined> {
    // The root is made at every look here (note calls make it once, #rootReady), so a fresh install, or a root removed
    // while the store runs, lists as an empty root, not a missing one.
    let base = this.root;
    if (folder === '') await mkdir(this.root, { recursive: true, mode: 0o700 });
    else base = await this.#file(folder);
    let entries: { name: string; isFile(): boolean; isDirectory(): boolean }[];
    try {
      entries = await readdir(base, { withFileTypes: true });
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code === 'ENOENT' || code === 'ENOTDIR') return undefined;
      throw error;
    }
    const prefix = folder === '' ? '' : `${folder.replace(/\/+$/, '')}/`;
    const visible = entries.filter((entry) => !entry.name.startsWith('.'));
    return {
      folders: visible
        .filter((entry) => entry.isDirectory())
        .map((entry) => `${prefix}${entry.name}`)
        .sort(),
      notes: visible
        .filter((entry) => entry.isFile() && entry.name.endsWith('.md'))
        .map((entry) => `${prefix}${entry.name}`)
        .sort(),
    };
  }

  /** Creates a note; fails when one exists at that path already. */
  async create(notePath: string, note: { data: FrontmatterData; body?: string }): Promise<Note> {
    const file = await this.#file(notePath);
    // What we write is scrubbed of every loaded secret (a transcript can hold an error that echoes a token).
    const data = scrubSecretsDeep(note.data);
    const frontmatter = Object.keys(data).length === 0 ? '' : updateFrontmatterText('', data);
    const text = joinNote(frontmatter, scrubSecrets(note.body ?? ''));
    // What the text parses to is known: the note handed back, and the next read of it, need not parse it again.
    if (splitNote(text).frontmatter === frontmatter) rememberFrontmatter(frontmatter, data);
    await mkdir(path.dirname(file), { recursive: true, mode: 0o700 });
    await writeAtomically(file, text, { exclusive: true });
    return parseNote(notePath, text);
  }

  /**
   * Changes some frontmatter keys and/or the body. Returns the note as written. A note someone edited since
   * `basedOn` was read gets the changes applied on top of their edit, unless their edit touched the same keys
   * (or the body, when the body is being replaced): then NoteConflictError, and nothing is written.
   */
  async update(notePath: string, options: UpdateNoteOptions): Promise<Note> {
    const file = await this.#file(notePath);
    // Read, check and write under the lock: two of our processes never interleave, and none starves retrying.
    // A person's editor does not take the lock; the hash check against `basedOn` catches its saves.
    return withFileLock(file, async () => {
      const text = await readFile(file, 'utf8');
      const current = parseNote(notePath, text);
      const decided = options.change?.(current);
      const set = decided?.set ? { ...options.set, ...decided.set } : options.set;
      const newBody = decided?.body ?? options.body;
      if (options.basedOn && options.basedOn.hash !== current.hash) {
        const touched = changedKeys(options.basedOn, current);
        const wanted = [...Object.keys(set ?? {}), ...(newBody === undefined ? [] : ['(body)'])];
        const overlap = wanted.filter((key) => touched.includes(key));
        if (overlap.length > 0) throw new NoteConflictError(notePath, overlap);
      }
      const parts = splitNote(text);
      // Only what we add is scrubbed of loaded secrets; the rest of the note stays as its author wrote it.
      const scrubbedSet = set ? scrubSecretsDeep(set) : undefined;
      const frontmatter = scrubbedSet ? updateFrontmatterText(parts.frontmatter, scrubbedSet) : parts.frontmatter;
      const body = newBody === undefined ? parts.body : scrubSecrets(newBody);
      let next: string;
      if (parts.hasFrontmatter) {
        // The opening and closing `---` lines stay exactly as the person wrote them.
        const closingLine = text.slice(
          parts.frontmatterStart + parts.frontmatter.length,
          text.length - parts.body.length,
        );
        next = `${text.slice(0, parts.frontmatterStart)}${frontmatter}${closingLine}${body}`;
      } else {
        next = frontmatter === '' ? body : joinNote(frontmatter, body);
      }
      // Nothing changed (a `change` that found nothing to do): the file, and its mtime, stay as they are.
      if (next === text) return current;
      if (set && splitNote(next).frontmatter === frontmatter) {
        // The old data with the changes: what the new text parses to (see rememberFrontmatter for when it is sure).
        // Parsed again (a copy from the cache), since `change` may have changed the note it was handed.
        const data = parts.hasFrontmatter ? parseFrontmatter(parts.frontmatter, 1) : {};
        for (const [key, value] of Object.entries(scrubbedSet ?? {})) {
          if (value === undefined) delete data[key];
          else data[key] = value;
        }
        rememberFrontmatter(frontmatter, data);
      }
      await writeAtomically(file, next, { exclusive: false });
      return parseNote(notePath, next);
    });
  }

  async delete(notePath: string): Promise<boolean> {
    try {
      await unlink(await this.#file(notePath));
      return true;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return false;
      throw error;
    }
  }

  async move(from: string, to: string): Promise<void> {
    const source = await this.#file(from);
    const target = await this.#file(to);
    await mkdir(path.dirname(target), { recursive: true, mode: 0o700 });
    await rename(source, target);
  }

  /** Lists notes (`*.md`) under a folder, recursively, as paths relative to the root, sorted. */
  async list(folder = ''): Promise<string[]> {
    const base = folder === '' ? this.root : await this.#file(folder);
    let entries: { name: string; parentPath: string; isFile(): boolean }[];
    try {
      entries = await readdir(base, { recursive: true, withFileTypes: true });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
      throw error;
    }
    return entries
      .filter((entry) => entry.isFile() && entry.name.endsWith('.md') && !entry.name.startsWith('.'))
      .map((entry) => path.relative(this.root, path.join(entry.parentPath, entry.name)).split(path.sep).join('/'))
      .sort();
  }

  /**
   * Reads every note under a folder and returns those whose data matches `where`. Broken notes are skipped and
   * reported through `onBroken` (default: ignored), never thrown: one bad file must not hide the others.
   */
  async query(options: NoteQueryOptions): Promise<Note[]> {
    const where = options.where;
    const matches =
      where === undefined
        ? () => true
        : typeof where === 'function'
          ? where
          : (data: FrontmatterData) => matchesWhere(data, where);
    const found: Note[] = [];
    for (const notePath of await this.list(options.folder ?? '')) {
      try {
        const note = await this.read(notePath);
        if (note && matches(note.data)) found.push(note);
      } catch (error) {
        if (!(error instanceof BrokenNoteError)) throw error;
        options.onBroken?.(error);
      }
    }
    return found;
  }
}

function parseNote(notePath: string, text: string): Note {
  const parts = splitNote(text);
  let data: FrontmatterData;
  try {
    // +1: the opening `---` is line 1 of the file, so frontmatter line 1 is file line 2.
    data = parts.hasFrontmatter ? parseFrontmatter(parts.frontmatter, 1) : {};
  } catch (error) {
    if (error instanceof FrontmatterError) throw new BrokenNoteError(notePath, error);
    throw error;
  }
  return { path: notePath, data, body: parts.body, hash: hashOf(text) };
}

function hashOf(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

/** Top-level keys whose values differ between two reads, plus `(body)` when the body changed. */
function changedKeys(before: Note, after: Note): string[] {
  const keys = new Set([...Object.keys(before.data), ...Object.keys(after.data)]);
  const changed = [...keys].filter((key) => JSON.stringify(before.data[key]) !== JSON.stringify(after.data[key]));
  if (before.body !== after.body) changed.push('(body)');
  return changed;
}

/**
 * The note's name as its temporary file carries it: whole when the result fits the file system's 255 bytes, else cut
 * to 200 bytes (on a character boundary), so a note of any name the file system takes can be written.
 */
function temporaryNameOf(name: string): string {
  if (Buffer.byteLength(name, 'utf8') <= 200) return name;
  let cut = '';
  for (const character of name) {
    if (Buffer.byteLength(cut + character, 'utf8') > 200) break;
    cut += character;
  }
  return cut;
}

async function writeAtomically(file: string, text: string, options: { exclusive: boolean }): Promise<void> {
  const tmp = path.join(
    path.dirname(file),
    `.${temporaryNameOf(path.basename(file))}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`,
  );
  const handle = await open(tmp, 'wx', 0o600);
  try {
    await handle.writeFile(text);
    await handle.sync();
  } finally {
    await handle.close();
  }
  try {
    if (options.exclusive) {
      // link() fails with EEXIST instead of replacing: a create never clobbers a note someone just made.
      await link(tmp, file);
      await unlink(tmp);
    } else {
      await rename(tmp, file);
    }
  } catch (error) {
    await unlink(tmp).catch(() => {});
    throw error;
  }
}
