import path from 'node:path';
import { type FSWatcher, watch } from 'chokidar';
import { matchesWhere } from './note-query.ts';
import { noteContainsText, type SearchNotesOptions, type SearchNotesResult } from './note-search.ts';
import { BrokenNoteError, type Note, type RootedNoteStore } from './note-store.ts';

export interface NoteSearchIndexOptions {
  store: RootedNoteStore;
  /** Notes read at once while the index fills. @default 16 */
  concurrency?: number;
}

/**
 * Every note of a store held in memory for searches by text and field that answer without reading the tree: a full
 * read once, then a watch that re-reads only the notes that change (as NoteIndex does for a few keys). The price is
 * the notes' data and bodies in memory (about the size of the notes folder). A writer that must see its own write in
 * the next search calls `refresh`; edits by hand arrive through the watch, a moment after they are saved.
 */
export class NoteSearchIndex {
  readonly #options: NoteSearchIndexOptions;
  readonly #notes = new Map<string, Note>();
  readonly #broken = new Map<string, BrokenNoteError>();
  /** Per path, the latest refresh started: an older read finishing later does not overwrite a newer one. */
  readonly #generation = new Map<string, number>();
  /** Per path, the read in progress of the latest refresh. */
  readonly #pending = new Map<string, Promise<void>>();
  #sorted: string[] | undefined;
  #watcher: FSWatcher | undefined;
  #started: Promise<void> | undefined;
  #ready = false;
  #closed = false;

  constructor(options: NoteSearchIndexOptions) {
    this.#options = options;
  }

  /** True once the first full read is done: until then `search` would miss notes, so callers scan instead. */
  get ready(): boolean {
    return this.#ready;
  }

  /** Starts watching and reads every note once; idempotent (the second call returns the first's promise). */
  start(): Promise<void> {
    this.#started ??= this.#start();
    return this.#started;
  }

  async #start(): Promise<void> {
    const { store } = this.#options;
    // The store creates its root on first use; list() does too through its path checks.
    await store.listFolder('');
    // Closed while the folder was being made: no watch is started that nobody would close.
    if (this.#closed) return;
    this.#watcher = watch(store.root, {
      ignoreInitial: true,
      // Temp files of atomic writes and lock files start with a dot; only notes matter.
      ignored: (file, stats) =>
        path.basename(file).startsWith('.') ? file !== store.root : stats?.isFile() === true && !file.endsWith('.md'),
    });
    const onChange = (file: string) => {
      void this.refresh(path.relative(store.root, file).split(path.sep).join('/')).catch(() => {});
    };
    this.#watcher.on('add', onChange).on('change', onChange).on('unlink', onChange);
    await new Promise<void>((resolve) => this.#watcher?.once('ready', () => resolve()));
    const paths = await store.list('');
    let next = 0;
    const readSome = async () => {
      while (next < paths.length && !this.#closed) await this.refresh(paths[next++] as string);
    };
    await Promise.all(Array.from({ length: Math.max(1, this.#options.concurrency ?? 16) }, readSome));
    this.#ready = !this.#closed;
  }

  /**
   * Re-reads one note: kept when it parses, counted as broken when it does not, dropped when it is gone. Resolves
   * once the index holds the note as it was read at or after the call, even when a refresh from the watch started
   * meanwhile and won.
   */
  async refresh(notePath: string): Promise<void> {
    const generation = (this.#generation.get(notePath) ?? 0) + 1;
    this.#generation.set(notePath, generation);
    let current = this.#load(notePath, generation);
    this.#pending.set(notePath, current);
    for (;;) {
      await current;
      const latest = this.#pending.get(notePath);
      if (latest === undefined || latest === current) break;
      current = latest;
    }
    if (this.#pending.get(notePath) === current) this.#pending.delete(notePath);
  }

  async #load(notePath: string, generation: number): Promise<void> {
    let note: Note | undefined;
    let broken: BrokenNoteError | undefined;
    try {
      note = await this.#options.store.read(notePath);
    } catch (error) {
      if (error instanceof BrokenNoteError) broken = error;
      else if ((error as NodeJS.ErrnoException).code !== 'EISDIR') throw error;
    }
    if (this.#generation.get(notePath) !== generation) return;
    const had = this.#notes.has(notePath);
    if (note) this.#notes.set(notePath, note);
    else this.#notes.delete(notePath);
    if (broken) this.#broken.set(notePath, broken);
    else this.#broken.delete(notePath);
    if (had !== (note !== undefined)) this.#sorted = undefined;
  }

  /** As `searchNotes`, from memory; `broken` counts the unreadable notes under the folder (they are left out). */
  search(options: Omit<SearchNotesOptions, 'concurrency' | 'signal' | 'onBroken'>): SearchNotesResult & {
    broken: number;
  } {
    const offset = options.offset ?? 0;
    const limit = options.limit ?? 50;
    const folder = (options.folder ?? '').replace(/\/+$/, '');
    const prefix = folder === '' ? '' : `${folder}/`;
    this.#sorted ??= [...this.#notes.keys()].sort();
    const found: Note[] = [];
    for (const notePath of this.#sorted) {
      if (!notePath.startsWith(prefix)) continue;
      const note = this.#notes.get(notePath);
      if (!note) continue;
      if (options.where && !matchesWhere(note.data, options.where)) continue;
      if (options.text !== undefined && options.text !== '' && !noteContainsText(note, options.text)) continue;
      found.push(note);
    }
    const broken = [...this.#broken.keys()].filter((notePath) => notePath.startsWith(prefix)).length;
    return { total: found.length, notes: found.slice(offset, offset + limit), broken };
  }

  async close(): Promise<void> {
    this.#closed = true;
    await this.#watcher?.close();
    this.#watcher = undefined;
  }
}
