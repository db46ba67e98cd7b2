import { decodeTaskName } from '../task-name.ts';
import { NameHeap } from './name-heap.ts';

/**
 * The worker's in-memory view of pending/: one heap per priority, so finding the next ready task costs
 * O(log n) instead of listing and sorting the directory for every claim. It may hold names that another worker
 * has since claimed (the claim's rename then fails with ENOENT and the name is dropped) and may miss names until
 * the watcher reports them or the next rescan; it never decides anything on its own.
 */
export class PendingIndex {
  readonly #heaps = Array.from({ length: 10 }, () => new NameHeap());
  readonly #known = new Set<string>();

  get size(): number {
    return this.#known.size;
  }

  /** Adds a name if it is a task name not already indexed. Returns whether it was added. */
  add(fileName: string): boolean {
    if (this.#known.has(fileName)) return false;
    const name = decodeTaskName(fileName);
    if (!name) return false;
    this.#known.add(fileName);
    this.#heaps[name.priority]?.push(fileName);
    return true;
  }

  /** Replaces the whole view with a fresh directory listing. */
  reset(fileNames: Iterable<string>): void {
    for (const heap of this.#heaps) heap.clear();
    this.#known.clear();
    for (const fileName of fileNames) this.add(fileName);
  }

  /**
   * Removes and returns the next name that is ready at `nowMs`: the lowest priority digit first, then the
   * earliest ready time. A priority whose earliest task is not ready yet is skipped, not waited on.
   */
  takeReady(nowMs: number): string | undefined {
    for (const heap of this.#heaps) {
      const next = heap.peek();
      if (next === undefined) continue;
      const name = decodeTaskName(next);
      if (name && name.readyAtMs > nowMs) continue;
      heap.pop();
      this.#known.delete(next);
      return next;
    }
    return undefined;
  }

  /** The earliest ready time among indexed names, to know how long to sleep. */
  nextReadyAtMs(): number | undefined {
    let earliest: number | undefined;
    for (const heap of this.#heaps) {
      const next = heap.peek();
      const name = next === undefined ? undefined : decodeTaskName(next);
      if (name && (earliest === undefined || name.readyAtMs < earliest)) earliest = name.readyAtMs;
    }
    return earliest;
  }
}
