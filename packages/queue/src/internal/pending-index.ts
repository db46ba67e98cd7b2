import { decodeTaskName, isLaterVersion } from '../task-name.ts';
import { NameHeap } from './name-heap.ts';

/**
 * The worker's in-memory view of pending/: for each priority, one heap per task type, so finding the next ready task
 * costs O(types at a priority + log n) instead of listing and sorting the directory for every claim, and a claim may
 * pass over types the worker is not taking now (a full lane, an open breaker) without popping their names. It may
 * hold names that another worker has since claimed (the claim's rename then fails with ENOENT and the name is
 * dropped) and may miss names until the watcher reports them or the next rescan; it never decides anything on its
 * own. It holds one name per task id: of two files of one task (a power cut's or a hand copy's leftover) it keeps the
 * later version and hands the other to the consumer to remove, so one task is never claimed twice.
 */
export class PendingIndex {
  /** By priority digit, then by task type. A type's heap is removed once it is empty, so scans stay short. */
  readonly #heaps = Array.from({ length: 10 }, () => new Map<string, NameHeap>());
  readonly #known = new Set<string>();
  readonly #counts = new Map<string, number>();
  /** The indexed name of each task id. */
  readonly #byId = new Map<string, string>();
  /** Names set aside for a later version of their task, until the consumer takes them to remove them. */
  #superseded: string[] = [];

  get size(): number {
    return this.#known.size;
  }

  /** Indexed names of a task type, ready or not. */
  count(type: string): number {
    return this.#counts.get(type) ?? 0;
  }

  /** Adds a name if it is a task name not already indexed. Returns whether it was added. */
  add(fileName: string): boolean {
    if (this.#known.has(fileName)) return false;
    const name = decodeTaskName(fileName);
    if (!name) return false;
    const byType = this.#heaps[name.priority];
    if (!byType) return false;
    const other = this.#byId.get(name.id);
    const otherName = other === undefined ? undefined : decodeTaskName(other);
    if (other !== undefined && otherName !== undefined) {
      if (!isLaterVersion(fileName, name, other, otherName)) {
        this.#superseded.push(fileName);
        return false;
      }
      this.#remove(other, otherName.priority, otherName.type);
      this.#superseded.push(other);
    }
    this.#known.add(fileName);
    this.#byId.set(name.id, fileName);
    let heap = byType.get(name.type);
    if (!heap) {
      heap = new NameHeap();
      byType.set(name.type, heap);
    }
    heap.push(fileName);
    this.#counts.set(name.type, (this.#counts.get(name.type) ?? 0) + 1);
    return true;
  }

  /** Names set aside since the last call because a later version of their task is indexed: stale copies. */
  takeSuperseded(): string[] {
    const taken = this.#superseded;
    this.#superseded = [];
    return taken;
  }

  #remove(fileName: string, priority: number, type: string): void {
    const byType = this.#heaps[priority];
    const heap = byType?.get(type);
    if (!byType || !heap?.delete(fileName)) return;
    if (heap.size === 0) byType.delete(type);
    this.#known.delete(fileName);
    this.#uncount(type);
  }

  #uncount(type: string): void {
    const left = (this.#counts.get(type) ?? 1) - 1;
    if (left > 0) this.#counts.set(type, left);
    else this.#counts.delete(type);
  }

  /** Replaces the whole view with a fresh directory listing. */
  reset(fileNames: Iterable<string>): void {
    for (const byType of this.#heaps) byType.clear();
    this.#known.clear();
    this.#counts.clear();
    this.#byId.clear();
    for (const fileName of fileNames) this.add(fileName);
  }

  /**
   * Removes and returns the next name that is ready at `nowMs` among the types `accept` allows (all when absent):
   * the lowest priority digit first, then the earliest ready time, then name order. Within one priority, names sort
   * by ready time and then id, so the smallest head across types is the earliest; when it is not ready, no other
   * name of that priority is, and the priority is skipped, not waited on.
   */
  takeReady(nowMs: number, accept?: (type: string) => boolean): string | undefined {
    for (const byType of this.#heaps) {
      if (byType.size === 0) continue;
      let best: string | undefined;
      let bestType = '';
      let bestHeap: NameHeap | undefined;
      for (const [type, heap] of byType) {
        const head = heap.peek();
        if (head === undefined || (best !== undefined && head >= best)) continue;
        if (accept && !accept(type)) continue;
        best = head;
        bestType = type;
        bestHeap = heap;
      }
      if (best === undefined || !bestHeap) continue;
      const name = decodeTaskName(best);
      if (name && name.readyAtMs > nowMs) continue;
      bestHeap.pop();
      if (bestHeap.size === 0) byType.delete(bestType);
      this.#known.delete(best);
      if (name && this.#byId.get(name.id) === best) this.#byId.delete(name.id);
      this.#uncount(bestType);
      return best;
    }
    return undefined;
  }

  /** The earliest ready time among indexed names of the types `accept` allows (all when absent), to know how long to sleep. */
  nextReadyAtMs(accept?: (type: string) => boolean): number | undefined {
    let earliest: number | undefined;
    for (const byType of this.#heaps) {
      // Within a priority the smallest name is the earliest; only that one is decoded.
      let head: string | undefined;
      for (const [type, heap] of byType) {
        const next = heap.peek();
        if (next === undefined || (head !== undefined && next >= head)) continue;
        if (accept && !accept(type)) continue;
        head = next;
      }
      const name = head === undefined ? undefined : decodeTaskName(head);
      if (name && (earliest === undefined || name.readyAtMs < earliest)) earliest = name.readyAtMs;
    }
    return earliest;
  }
}
