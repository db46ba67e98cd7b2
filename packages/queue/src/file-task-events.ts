import { type FSWatcher, lstatSync, watch } from 'node:fs';
import path from 'node:path';
import type { QueuePaths } from './file-layout.ts';
import { decodeStateName } from './file-layout.ts';
import type { TaskEvent, TaskEventKind, TaskEvents, TaskState } from './interfaces.ts';
import { taskStates } from './interfaces.ts';

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
export class FileTaskEvents implements TaskEvents {
  readonly #paths: QueuePaths;
  readonly #listeners = new Set<(event: TaskEvent) => void>();
  readonly #watchers: FSWatcher[] = [];
  /** The last state reported per task id. */
  readonly #states = new Map<string, TaskState>();
  readonly #timers = new Set<NodeJS.Timeout>();
  #started = false;
  #closed = false;

  constructor(paths: QueuePaths) {
    this.#paths = paths;
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
      const watcher = watch(this.#paths[state], (_event, fileName) => {
        if (typeof fileName === 'string') this.#saw(state, fileName);
      });
      // A watcher that fails (the directory removed under us) stops telling; subscribers fall back on their polls.
      watcher.on('error', () => watcher.close());
      watcher.unref();
      this.#watchers.push(watcher);
    }
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
