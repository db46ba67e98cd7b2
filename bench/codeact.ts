// The code-as-action sandbox (packages/codeact, docs/codeact.md): what a cell costs and how fast a runaway cell is
// stopped. Prints:
// - the two QuickJS builds compared (module load, a fresh runtime + context + a small eval, and the same with three
//   host calls bridged as promises), which decision 0064 chose between;
// - cell overhead through the executor: a fresh context and three bridged calls, p50/p95 (goal: p50 ≤ 5 ms);
// - stop latency after the deadline for CPU-heavy and memory-heavy cells, and whether the engine's interrupt or
//   the worker's termination stopped each (goal: ≤ 100 ms after the deadline);
// - the process's RSS (main thread and workers) while 100 cells run.
// `npm run bench:codeact [-- --cells 500 --json]`. It prints figures; it never fails for being slow.
import { parseArgs } from 'node:util';
import { createExecutor } from '@assistant/codeact';
import {
  newQuickJSAsyncWASMModule,
  newQuickJSWASMModule,
  type QuickJSAsyncWASMModule,
  type QuickJSWASMModule,
  RELEASE_ASYNC,
  RELEASE_SYNC,
} from 'quickjs-emscripten';

const { values } = parseArgs({
  options: { cells: { type: 'string', default: '500' }, json: { type: 'boolean', default: false } },
});
const cellCount = Number(values.cells);

function percentile(samples: number[], fraction: number): number {
  const sorted = [...samples].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * fraction))] ?? Number.NaN;
}
const round = (value: number) => Math.round(value * 100) / 100;
const summary = (samples: number[]) => ({
  p50: round(percentile(samples, 0.5)),
  p95: round(percentile(samples, 0.95)),
  max: round(Math.max(...samples)),
});

const threeCalls = 'const a = await tools.a(1);\nconst b = await tools.b(a);\nreturn await tools.c(b);';

// 1. The two builds, on the main thread, without the executor.
async function measureSync(module: QuickJSWASMModule): Promise<{ evalMs: number[]; callsMs: number[] }> {
  const evalMs: number[] = [];
  const callsMs: number[] = [];
  for (let index = 0; index < 300; index += 1) {
    let started = performance.now();
    {
      const runtime = module.newRuntime();
      const context = runtime.newContext();
      context.unwrapResult(context.evalCode('1 + 1')).dispose();
      context.dispose();
      runtime.dispose();
    }
    evalMs.push(performance.now() - started);
    started = performance.now();
    {
      const runtime = module.newRuntime();
      const context = runtime.newContext();
      const pending: Promise<void>[] = [];
      const host = context.newFunction('host', (argument) => {
        const value = context.getNumber(argument);
        const deferred = context.newPromise();
        pending.push(
          Promise.resolve(value + 1).then((next) => {
            context.newNumber(next).consume((handle) => deferred.resolve(handle));
            deferred.dispose();
          }),
        );
        return deferred.handle;
      });
      context.setProp(context.global, 'host', host);
      host.dispose();
      const promise = context.unwrapResult(
        context.evalCode('(async () => { const a = await host(1); const b = await host(a); return await host(b); })()'),
      );
      for (;;) {
        runtime.executePendingJobs();
        if (context.getPromiseState(promise).type !== 'pending') break;
        await Promise.all(pending.splice(0));
      }
      promise.dispose();
      context.dispose();
      runtime.dispose();
    }
    callsMs.push(performance.now() - started);
  }
  return { evalMs, callsMs };
}

async function measureAsync(module: QuickJSAsyncWASMModule): Promise<{ evalMs: number[]; callsMs: number[] }> {
  const evalMs: number[] = [];
  const callsMs: number[] = [];
  for (let index = 0; index < 300; index += 1) {
    let started = performance.now();
    {
      const runtime = module.newRuntime();
      const context = runtime.newContext();
      context.unwrapResult(context.evalCode('1 + 1')).dispose();
      context.dispose();
      runtime.dispose();
    }
    evalMs.push(performance.now() - started);
    started = performance.now();
    {
      // A context that owns its runtime: disposing a separate runtime after an asyncified function fails in 0.32.
      const context = module.newContext();
      const host = context.newAsyncifiedFunction('host', async (argument) =>
        context.newNumber(context.getNumber(argument) + 1),
      );
      context.setProp(context.global, 'host', host);
      host.dispose();
      // Asyncify suspends the whole engine at a host call: code reads synchronously, one call at a time.
      const result = await context.evalCodeAsync('const a = host(1); const b = host(a); host(b);');
      context.unwrapResult(result).dispose();
      context.dispose();
    }
    callsMs.push(performance.now() - started);
  }
  return { evalMs, callsMs };
}

let started = performance.now();
const syncModule = await newQuickJSWASMModule(RELEASE_SYNC);
const syncLoadMs = performance.now() - started;
started = performance.now();
const asyncModule = await newQuickJSAsyncWASMModule(RELEASE_ASYNC);
const asyncLoadMs = performance.now() - started;
const syncFigures = await measureSync(syncModule);
const asyncFigures = await measureAsync(asyncModule);
const variants = {
  'release-sync': {
    loadMs: round(syncLoadMs),
    freshContextEvalMs: summary(syncFigures.evalMs),
    threeCallsMs: summary(syncFigures.callsMs),
  },
  'release-asyncify': {
    loadMs: round(asyncLoadMs),
    freshContextEvalMs: summary(asyncFigures.evalMs),
    threeCallsMs: summary(asyncFigures.callsMs),
  },
};

// 2. Cell overhead through the executor: a warm worker, a fresh context per cell, three bridged calls.
const executor = createExecutor({ maxWorkers: 1 });
started = performance.now();
await executor.warm();
const warmMs = performance.now() - started;
const increment = async ({ args }: { args: unknown[] }) => (args[0] as number) + 1;
const primitives = { a: increment, b: increment, c: increment };
for (let index = 0; index < 50; index += 1) await executor.run({ code: threeCalls, primitives });
const overheadMs: number[] = [];
for (let index = 0; index < cellCount; index += 1) {
  const cellStarted = performance.now();
  const result = await executor.run({ code: threeCalls, primitives });
  overheadMs.push(performance.now() - cellStarted);
  if (!result.ok || result.value !== 4) throw new Error(`unexpected cell result ${JSON.stringify(result)}`);
}

// 3. Stop latency after the deadline. The executor's clock starts when the cell is handed to an idle worker, a
// few microseconds after `run` is called, so (return - call - timeout) slightly overstates the latency.
async function stopLatency(code: string, timeoutMs: number, trials: number, memoryLimitBytes?: number) {
  const heavy = createExecutor({
    maxWorkers: 1,
    ...(memoryLimitBytes === undefined ? {} : { memoryLimitBytes, workerHeapMb: 256 }),
  });
  await heavy.warm();
  const latencies: number[] = [];
  const endings: Record<string, number> = {};
  for (let trial = 0; trial < trials; trial += 1) {
    // The previous trial's worker may have been terminated: wait for its replacement, as a later cell would.
    await heavy.warm();
    const called = performance.now();
    const result = await heavy.run({ code, timeoutMs });
    latencies.push(performance.now() - called - timeoutMs);
    const ending = result.ok
      ? 'finished'
      : result.error.message.includes('ran past')
        ? 'worker terminated'
        : result.error.kind === 'timeout'
          ? 'engine interrupt'
          : result.error.kind;
    endings[ending] = (endings[ending] ?? 0) + 1;
  }
  await heavy.close();
  return { afterDeadlineMs: summary(latencies), endings };
}
const stops = {
  'CPU, a JavaScript loop': await stopLatency('let n = 0;\nfor (;;) n += 1;', 300, 10),
  // Sorting a million strings in native code: the interrupt is polled only between sorts.
  'CPU, native sort': await stopLatency(
    'const items = Array.from({ length: 300000 }, (_, i) => "k" + ((i * 7919) % 300000));\nfor (;;) items.sort().reverse();',
    300,
    10,
  ),
  'memory, growing strings (1 GiB limit)': await stopLatency(
    'const chunks = [];\nfor (let i = 0; ; i++) chunks.push("x".repeat(100000) + i);',
    300,
    10,
    1024 * 1024 * 1024,
  ),
};

// 4. RSS while 100 cells run (main thread and worker threads are one process).
const rssBeforeMb = process.memoryUsage().rss / 2 ** 20;
let rssMaxMb = rssBeforeMb;
for (let index = 0; index < 100; index += 1) {
  await executor.run({
    code: 'const items = [];\nfor (let i = 0; i < 10000; i++) items.push({ i, text: "item " + i });\nreturn await tools.a(items.length);',
    primitives,
  });
  rssMaxMb = Math.max(rssMaxMb, process.memoryUsage().rss / 2 ** 20);
}
const rssAfterMb = process.memoryUsage().rss / 2 ** 20;
await executor.close();

const figures = {
  node: process.version,
  cells: cellCount,
  variants,
  executor: { warmMs: round(warmMs), cellOverheadMs: summary(overheadMs) },
  stops,
  rss100CellsMb: { before: round(rssBeforeMb), max: round(rssMaxMb), after: round(rssAfterMb) },
};
if (values.json) {
  console.log(JSON.stringify(figures, null, 2));
} else {
  console.log(`node ${figures.node}`);
  for (const [name, variant] of Object.entries(variants)) {
    console.log(
      `${name}: load ${variant.loadMs} ms; fresh context + eval p50 ${variant.freshContextEvalMs.p50} ms p95 ${variant.freshContextEvalMs.p95} ms; + three host calls p50 ${variant.threeCallsMs.p50} ms p95 ${variant.threeCallsMs.p95} ms`,
    );
  }
  console.log(
    `executor: first worker ready in ${figures.executor.warmMs} ms; cell overhead (fresh context, three bridged calls, ${cellCount} cells) p50 ${figures.executor.cellOverheadMs.p50} ms p95 ${figures.executor.cellOverheadMs.p95} ms max ${figures.executor.cellOverheadMs.max} ms`,
  );
  for (const [name, stop] of Object.entries(stops)) {
    console.log(
      `stop after deadline, ${name}: p50 ${stop.afterDeadlineMs.p50} ms p95 ${stop.afterDeadlineMs.p95} ms max ${stop.afterDeadlineMs.max} ms (${Object.entries(
        stop.endings,
      )
        .map(([ending, count]) => `${count}× ${ending}`)
        .join(', ')})`,
    );
  }
  console.log(
    `RSS over 100 cells: ${figures.rss100CellsMb.before} MiB before, ${figures.rss100CellsMb.max} MiB max, ${figures.rss100CellsMb.after} MiB after`,
  );
}
