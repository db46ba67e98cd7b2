import v8 from 'node:v8';

/**
 * Tells V8 to favour a small heap over GC time in the worker process. A worker's live heap is small (about 60 MB
 * through a 1,000-message inbox) but its allocation rate is high (parsed mail, YAML, JSON bodies), and V8's default
 * heap growth let it hold 300–400 MB of garbage; with `--optimize-for-size` it stays under 200 MB, and the model, not
 * the GC, stays the bottleneck (docs/performance.md, issue 20). Set at run time, before the work starts: the heap
 * growth it changes is decided at each collection, so it takes effect from the next one.
 */
export function favourSmallHeap(): void {
  v8.setFlagsFromString('--optimize-for-size');
}
