import module from 'node:module';
import { fileURLToPath } from 'node:url';
import v8 from 'node:v8';

/**
 * Tells V8 to favour a small heap over GC time in the worker process. A worker's live heap is small (about 60 MB
 * through a 1,000-message inbox) but its allocation rate is high (parsed mail, YAML, JSON bodies), and V8's default
 * heap growth let it hold 300–400 MB of garbage; with `--optimize-for-size` it stays under 200 MB, and the model, not
 * the GC, stays the bottleneck (docs/performance.md, issue 20). Set at run time, before the work starts: the heap
 * growth it changes is decided at each collection, so it takes effect from the next one.
 *
 * `--semi-space-growth-factor=1` keeps the young generation at the size it starts with (1 MB a semi-space) instead
 * of letting it grow to 16 MB a semi-space, which an idle worker kept committed: 25 MB off an idle worker and off the
 * peaks of an inbox drain, at the price of more scavenges, which the bench shows the drain does not notice
 * (docs/performance.md, "Issue 20: the worker's resident memory"). The other young-generation flags
 * (`--max-semi-space-size`) are read only when the heap is set up, so this is the one that works from here; call
 * this before the worker's modules load, since loading them is what grew the young generation.
 */
export function favourSmallHeap(): void {
  v8.setFlagsFromString('--optimize-for-size');
  v8.setFlagsFromString('--semi-space-growth-factor=1');
}

/**
 * Runs this process from Node's compile cache, kept in `node_modules/.cache/assistant-compile-cache` of this
 * installation: what type stripping produced and V8's compiled code, so that a start reads them instead of stripping
 * every TypeScript file again. Stripping runs in a WebAssembly instance whose memory never shrinks, and keeps each
 * file's source twice: an idle worker started from the cache holds about 25 MB less (docs/performance.md).
 *
 * The entry file was stripped before any code of ours ran, so Node must open the cache itself, at start, from
 * NODE_COMPILE_CACHE: this replaces the process (same pid, same arguments, same open files) with one started with it
 * set, which then takes it out of its environment again, so that scripts and MCP servers it starts do not write
 * their caches into ours. Call it first in an entry point, before anything else is done or loaded. Where Node cannot
 * replace a process (before 23.11), the cache is opened from here and covers what loads next. The cache sits beside
 * the code it is made from, where only whoever can change that code can write. NODE_DISABLE_COMPILE_CACHE turns it
 * off; a folder that cannot be written leaves the process without it, only bigger.
 */
export function cacheCompiledModules(): void {
  const directory = fileURLToPath(new URL('../../../node_modules/.cache/assistant-compile-cache', import.meta.url));
  if (process.env.NODE_COMPILE_CACHE === directory) {
    delete process.env.NODE_COMPILE_CACHE;
    return;
  }
  if (process.env.NODE_DISABLE_COMPILE_CACHE !== undefined || module.getCompileCacheDir?.() !== undefined) return;
  if (typeof process.execve === 'function' && process.argv[1] !== undefined) {
    process.execve(process.execPath, [process.execPath, ...process.execArgv, ...process.argv.slice(1)], {
      ...process.env,
      NODE_COMPILE_CACHE: directory,
    });
  }
  try {
    module.enableCompileCache?.(directory);
  } catch {
    // A cache is an optimisation: a start without it is only bigger.
  }
}
