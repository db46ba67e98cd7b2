import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { type FSWatcher, watch } from 'chokidar';
import type { FrontmatterData } from './frontmatter.ts';
import { BrokenNoteError, type FileNoteStore } from './note-store.ts';

export interface NoteIndexOptions {
  store: FileNoteStore;
  /** Frontmatter keys to index: `message_id`, `number`, `id`. Values are compared as strings. */
  keys: readonly string[];
  /** Only notes under this folder. @default the whole store */
  folder?: string;
  /** Called for notes whose frontmatter cannot be read; they are left out of the index. */
  onBroken?: (error: BrokenNoteError) => void;
}

/**
 * Finds notes by frontmatter key without reading the tree per lookup: a full read at start, then a watch that
 * re-reads only the notes that change. Writes made through a typed store call `refresh` themselves, so a lookup
 * right after a write never misses it; edits by hand arrive through the watch.
 */
export class NoteIndex {
  readonly #options: NoteIndexOptions;
  /** `key\0value` → note paths. */
  readonly #entries = new Map<string, Set<string>>();
  /** note path → the `key\0value` entries it is in, to undo them on change. */
  readonly #byPath = new Map<string, string[]>();
  #watcher: FSWatcher | undefined;

  constructor(options: NoteIndexOptions) {
    this.#options = options;
  }

  get size(): number {
    return this.#byPath.size;
  }

  /** Reads every note once and starts watching for changes. */
  async start(): Promise<void> {
    const folder = this.#options.folder ?? '';
    const root = path.join(this.#options.store.root, folder);
    // A folder that does not exist yet cannot be watched; a store's folder is its own to create.
    await mkdir(root, { recursive: true, mode: 0o700 });
    this.#watcher = watch(root, {
      ignoreInitial: true,
      ignored: (file, stats) => stats?.isFile() === true && !file.endsWith('.md'),
    });
    const onChange = (file: string) => {
      const notePath = path.relative(this.#options.store.root, file).split(path.sep).join('/');
      void this.refresh(notePath);
    };
    this.#watcher.on('add', onChange).on('change', onChange).on('unlink', onChange);
    await new Promise<void>((resolve) => this.#watcher?.once('ready', () => resolve()));
    for (const notePath of await this.#options.store.list(folder)) await this.refresh(notePath);
  }

  /** Re-reads one note (or drops it when it is gone or broken). */
  async refresh(notePath: string): Promise<void> {
    this.#remove(notePath);
    try {
      const note = await this.#options.store.read(notePath);
      if (note) this.#add(notePath, note.data);
    } catch (error) {
      if (error instanceof BrokenNoteError) this.#options.onBroken?.(error);
      else throw error;
    }
  }

  /** Paths of the notes whose `key` is `value`, sorted. */
  find(key: string, value: unknown): string[] {
    return [...(this.#entries.get(entryKey(key, value)) ?? [])].sort();
  }

  #add(notePath: string, data: FrontmatterData): void {
    const keys: string[] = [];
    for (const key of this.#options.keys) {
      const value = data[key];
      if (value === undefined || value === null || typeof value === 'object') continue;
      const entry = entryKey(key, value);
      let paths = this.#entries.get(entry);
      if (!paths) {
        paths = new Set();
        this.#entries.set(entry, paths);
      }
      paths.add(notePath);
      keys.push(entry);
    }
    this.#byPath.set(notePath, keys);
  }

  #remove(notePath: string): void {
    for (const entry of this.#byPath.get(notePath) ?? []) {
      const paths = this.#entries.get(entry);
      paths?.delete(notePath);
      if (paths?.size === 0) this.#entries.delete(entry);
    }
    this.#byPath.delete(notePath);
  }

  async close(): Promise<void> {
    await this.#watcher?.close();
    this.#watcher = undefined;
  }
}

function entryKey(key: string, value: unknown): string {
  return `${key}\0${String(value)}`;
}
