import { type FSWatcher, lstatSync, watch } from 'node:fs';
import { lstat, readdir } from 'node:fs/promises';
import path from 'node:path';
import type { QueuePaths } from './file-layout.ts';
import { decodeStateName } from './file-layout.ts';
import type { TaskEvent, TaskEventKind, TaskEvents, TaskState } from './interfaces.ts';
import { taskStates } from './interfaces.ts';

/** How far before a watcher's failure the fallback listing looks for files that arrived (clocks can be coarse). */
const fallbackSlackMs = 2_000;

/** How long a task that left done/ or failed/ may take to show up elsewhere before it counts as removed. */
const removalSettleMs = 250;

const kindOf: Record<TaskState, TaskEventKind> = {
  pending: 'added',
  active: 'claimed',
  done: 'completed',
  failed: 'failed',
};

/**
 * The file backend's event stream: one directory watcher per state, shared by every process on the data directory,
 * so a server sees what a worker does. A rename fires an event for its name in the directory it left and in the one
 * it reached; the name says the task's id and type, and whether the file is there now says which of the two it was.
 * A state a task passed through faster than the file could be looked at is skipped; the state it stays in is always
 * reported. `added` and `requeued` are told apart by whether this stream has seen the task before.
 */
export interface FileTaskEventsOptions {
  /** How often a state whose watcher failed (or could not start) is listed instead. @default 1_000 */
  pollIntervalMs?: number;
  /** For tests: what watches a directory. @default fs.watch */
  watch?: (directory: string, listener: (event: string, fileName: string | null) => void) => FSWatcher;
}

export class FileTaskEvents implements TaskEvents {
  readonly #paths: QueuePaths;
  readonly #pollIntervalMs: number;
  readonly #watch: NonNullable<FileTaskEventsOptions['watch']>;
  readonly #listeners = new Set<(event: TaskEvent) => void>();
  readonly #watchers: FSWatcher[] = [];
  /** The last state reported per task id. */
  readonly #states = new Map<string, TaskState>();
  readonly #timers = new Set<NodeJS.Timeout>();
  #started = false;
  #closed = false;

  constructor(paths: QueuePaths, options: FileTaskEventsOptions = {}) {
    this.#paths = paths;
    this.#pollIntervalMs = options.pollIntervalMs ?? 1_000;
    this.#watch = options.watch ?? ((directory, listener) => watch(directory, listener));
  }

  subscribe(listener: (event: TaskEvent) => void): () => void {
    if (this.#closed) throw new Error('this event stream is closed');
    this.#listeners.add(listener);
    if (!this.#started) this.#start();
    return () => {
      this.#listeners.delete(listener);
    };
  }

  #start(): void {
    this.#started = true;
    for (const state of taskStates) {
      let watcher: FSWatcher;
      try {
        watcher = this.#watch(this.#paths[state], (_event, fileName) => {
          if (typeof fileName === 'string') this.#saw(state, fileName);
        });
      } catch {
        // No watcher (too many open, a filesystem without notifications): this state is listed instead.
        this.#poll(state);
        continue;
      }
      // A watcher that fails (a network filesystem, the inotify limit) stops telling: the state is listed instead,
      // so a subscriber still hears of every state a task stays in, a poll interval late.
      watcher.on('error', () => {
        watcher.close();
        if (!this.#closed) this.#poll(state);
      });
      watcher.unref();
      this.#watchers.push(watcher);
    }
  }

  /** Lists a state's directory every poll interval and reports the names that came or went since the last listing. */
  #poll(state: TaskState): void {
    // The first listing is the starting point, as a watcher starts from what is there (old done/ files are no news),
    // except for files that arrived since watching stopped, give or take a coarse filesystem clock.
    const sinceMs = Date.now() - fallbackSlackMs;
    let known: Set<string> | undefined;
    let running = true;
    const list = () => readdir(this.#paths[state]).then((names) => new Set(names));
    list()
      .then(async (names) => {
        known = names;
        for (const fileName of names) {
          const info = await lstat(path.join(this.#paths[state], fileName)).catch(() => undefined);
          if (info && info.ctimeMs >= sinceMs) this.#saw(state, fileName);
        }
      })
      .catch(() => {})
      .finally(() => {
        running = false;
      });
    const timer = setInterval(() => {
      if (running || this.#closed) return;
      running = true;
      list()
        .then((now) => {
          for (const fileName of now) if (!known?.has(fileName)) this.#saw(state, fileName);
          for (const fileName of known ?? []) if (!now.has(fileName)) this.#saw(state, fileName);
          known = now;
        })
        .catch(() => {
          // The directory is gone for now; the next tick lists it again.
        })
        .finally(() => {
          running = false;
        });
    }, this.#pollIntervalMs);
    timer.unref();
    this.#timers.add(timer);
  }

  #saw(state: TaskState, fileName: string): void {
    const name = decodeStateName(state, fileName);
    if (!name) return;
    let present: boolean;
    try {
      lstatSync(path.join(this.#paths[state], fileName));
      present = true;
    } catch {
      present = false;
    }
    const previous = this.#states.get(name.id);
    if (present) {
      if (previous === state) return;
      this.#states.set(name.id, state);
      const kind = state === 'pending' && previous !== undefined ? 'requeued' : kindOf[state];
      this.#emit({ kind, id: name.id, type: name.type, state });
      return;
    }
    // Gone from done/ or failed/: pruned or deleted, unless it turns up elsewhere (a retry) in a moment.
    if ((state === 'done' || state === 'failed') && previous === state) {
      const timer = setTimeout(() => {
        this.#timers.delete(timer);
        if (this.#states.get(name.id) !== state) return;
        this.#states.delete(name.id);
        this.#emit({ kind: 'removed', id: name.id, type: name.type, state: undefined });
      }, removalSettleMs);
      timer.unref();
      this.#timers.add(timer);
    }
  }

  #emit(event: TaskEvent): void {
    for (const listener of [...this.#listeners]) {
      try {
        listener(event);
      } catch {
        // A listener's failure is its own business: the others still hear about the change.
      }
    }
  }

  async close(): Promise<void> {
    this.#closed = true;
    for (const watcher of this.#watchers.splice(0)) watcher.close();
    for (const timer of this.#timers) clearTimeout(timer);
    this.#timers.clear();
    this.#listeners.clear();
  }
}
