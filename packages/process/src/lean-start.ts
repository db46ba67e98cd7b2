import module from 'node:module';
import { fileURLToPath } from 'node:url';

// How the processes that stay up (the worker and the server) start lean: issue 20 found it for the worker, and the
// server, which idled at 160 MB, takes the same (docs/performance.md, "The server's lean start").

/**
 * The V8 flags a long-lived process starts with, on the command line of the process leanStart replaces this one with.
 *
 * `--optimize-for-size` tells V8 to favour a small heap over GC time. A worker's live heap is small (about 60 MB
 * through a 1,000-message inbox) but its allocation rate is high (parsed mail, YAML, JSON bodies), and V8's default
 * heap growth let it hold 300–400 MB of garbage; with this flag it stays under 200 MB, and the model, not the GC,
 * stays the bottleneck (docs/performance.md, issue 20).
 *
 * `--semi-space-growth-factor=1` keeps the young generation at the size it starts with (1 MB a semi-space) instead
 * of letting it grow to 16 MB a semi-space, which an idle worker kept committed: 25 MB off an idle worker, at the
 * price of more scavenges, which the inbox bench's drain does not notice (docs/performance.md, "Issue 20: the
 * worker's resident memory").
 *
 * Both were once set at run time (`v8.setFlagsFromString`), which Node documents as undefined behaviour once the VM
 * runs; a worker that called `process.exit()` soon after loading was then seen to hang in its shutdown, never
 * exiting (decision 0016). On the command line they are in place before the heap exists.
 */
export const leanV8Flags: readonly string[] = ['--optimize-for-size', '--semi-space-growth-factor=1'];

/** What the replaced process is started with, when its environment does not say otherwise. */
const leanEnvironment = (): Record<string, string> => ({
  // glibc gives each thread that allocates its own arena of freed memory; two arenas for Node's dozen threads took
  // about 10 MB off the peaks of an inbox drain at no cost in throughput.
  MALLOC_ARENA_MAX: '2',
});

/**
 * `--import` of the hook that serves every TypeScript file the replaced process loads, its entry point included,
 * already stripped of its types from Assistant's cache beside the code (typescript-cache.js). Node's compile cache
 * did that before, but kept every module's cache entry in memory for the life of the process (9 MB of the server's
 * malloc heap), and stripping on a miss starts a WebAssembly stripper that never gives its 25 MB back: with this
 * cache filled (by `npm install`, else by the first start) neither happens (decision 0083).
 * NODE_DISABLE_COMPILE_CACHE leaves it out.
 */
const typescriptCacheImport = (): string[] =>
  process.env.NODE_DISABLE_COMPILE_CACHE === undefined
    ? ['--import', fileURLToPath(new URL('./typescript-cache-hook.js', import.meta.url))]
    : [];

/** Names the variables leanStart added, so the replaced process can take them out again. */
const addedVariable = 'ASSISTANT_LEAN_START';

/**
 * Replaces this process (same pid, same arguments, same open files) with one started the way a long-lived process
 * should be: with `leanV8Flags`, its TypeScript from Assistant's stripped cache (`typescriptCacheImport`) and with at
 * most two malloc arenas (`leanEnvironment`; docs/performance.md, "Issue 20: the worker's resident memory"). All must
 * be in place when the process starts: the heap is set up, the entry file loaded and glibc's arenas made before any
 * code of ours runs. The new process takes the variables it was given back out of its environment, so the scripts
 * and MCP servers it starts get the defaults; a variable the owner set is left as it is.
 *
 * Call it first in an entry point, before anything else is done or loaded. Where Node cannot replace a process
 * (before 23.11) the process runs with V8's default heap, and Node's compile cache is opened from here instead,
 * covering what loads next.
 */
export function leanStart(): void {
  const added = process.env[addedVariable];
  if (added !== undefined) {
    for (const name of [addedVariable, ...added.split(',').filter(Boolean)]) delete process.env[name];
    return;
  }
  const missing = Object.entries(leanEnvironment()).filter(([name]) => process.env[name] === undefined);
  const flags = leanV8Flags.filter((flag) => !process.execArgv.includes(flag));
  const hook = typescriptCacheImport();
  if (hook[1] !== undefined && !process.execArgv.includes(hook[1])) flags.push(...hook);
  if (missing.length === 0 && flags.length === 0) return;
  if (typeof process.execve === 'function' && process.argv[1] !== undefined) {
    process.execve(process.execPath, [process.execPath, ...process.execArgv, ...flags, ...process.argv.slice(1)], {
      ...process.env,
      ...Object.fromEntries(missing),
      [addedVariable]: missing.map(([name]) => name).join(','),
    });
  }
  openCompileCache();
}

/** Where the compile cache of Assistant's own code is kept: beside that code, in node_modules/.cache. */
const compileCacheDirectory = (): string =>
  fileURLToPath(new URL('../../../node_modules/.cache/assistant-compile-cache', import.meta.url));

/**
 * Opens Node's compile cache (stripped TypeScript and V8's compiled code) for the modules this process loads next,
 * unless NODE_DISABLE_COMPILE_CACHE is set or a cache is already open. A command that runs and exits (`assistant
 * queue stats`) calls it first: stripping the types of the ~400 files a command loads was a third of its start
 * (`assistant queue stats`: 0.57 → 0.37 s, docs/performance.md, "Issue 38: a quick suite"). Nothing is inherited by
 * the processes it starts.
 */
export function openCompileCache(): void {
  if (process.env.NODE_DISABLE_COMPILE_CACHE !== undefined || module.getCompileCacheDir?.() !== undefined) return;
  try {
    module.enableCompileCache?.(compileCacheDirectory());
  } catch {
    // A cache is an optimisation: a start without it is only slower.
  }
}
