// Queue throughput and latency at several depths, for both durability modes, next to the raw fsync ceiling of the
// same disk. `npm run bench:queue [-- --depths 100,10000 --durability os --ops 2000 --dir /path --json]`.
// It prints figures; it never fails for being slow, only for bad options or a queue that misbehaves.
// Results and the machine they ran on go in docs/performance.md. `-- --through-worker`: see queue-through-worker.ts;
// `-- --backend file,redis`: see queue-backends.ts.
import { execFileSync } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { openFileTaskQueue, type QueueConfig, type TaskConsumer } from '@assistant/queue';
import { rawFsyncRate } from './bench-processes.ts';

type Durability = QueueConfig['durability'];

// `--through-worker`: the same queue driven by the real `assistant work` process (bench/queue-through-worker.ts).
if (process.argv.includes('--through-worker')) {
  const { runThroughWorker } = await import('./queue-through-worker.ts');
  await runThroughWorker(process.argv.slice(2));
  // Stdout to a pipe or file is synchronous on Linux: nothing printed is lost.
  process.exit(0);
}

// `--backend file,redis`: the two backends side by side (bench/queue-backends.ts).
if (process.argv.some((arg) => arg === '--backend' || arg.startsWith('--backend='))) {
  const { runBackendComparison } = await import('./queue-backends.ts');
  await runBackendComparison(process.argv.slice(2));
  process.exit(0);
}

const { values } = parseArgs({
  options: {
    depths: { type: 'string', default: '100,10000,100000' },
    durability: { type: 'string', default: 'os,strict' },
    ops: { type: 'string', default: '2000' },
    dir: { type: 'string', default: os.tmpdir() },
    json: { type: 'boolean', default: false },
  },
});

function positiveIntegers(option: string, text: string): number[] {
  const numbers = text.split(',').map((part) => Number(part.replaceAll('_', '')));
  const bad = numbers.find((value) => !Number.isInteger(value) || value <= 0);
  if (bad !== undefined) throw new Error(`--${option} expects positive integers separated by commas, got \`${text}\``);
  return numbers;
}

function durabilitiesOf(text: string): Durability[] {
  return text.split(',').map((value) => {
    if (value === 'os' || value === 'strict') return value;
    throw new Error(`--durability expects os, strict or os,strict, got \`${text}\``);
  });
}

const depths = positiveIntegers('depths', values.depths);
const durabilities = durabilitiesOf(values.durability);
const [operations = 2_000] = positiveIntegers('ops', values.ops);
// Enqueues run this many at a time, as several producers would; claims are sequential, as one worker is.
const enqueueConcurrency = 16;
const ceilingIterations = 2_000;

interface Latency {
  p50Ms: number;
  p99Ms: number;
}

interface Rate extends Latency {
  count: number;
  perSecond: number;
}

function latencyOf(latenciesMs: number[]): Latency {
  const sorted = [...latenciesMs].sort((left, right) => left - right);
  const at = (fraction: number) => sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * fraction))] ?? 0;
  return { p50Ms: at(0.5), p99Ms: at(0.99) };
}

function rateOf(latenciesMs: number[], totalMs: number): Rate {
  return { count: latenciesMs.length, perSecond: (latenciesMs.length / totalMs) * 1_000, ...latencyOf(latenciesMs) };
}

async function timed<T>(latencies: number[], action: () => Promise<T>): Promise<T> {
  const started = performance.now();
  const result = await action();
  latencies.push(performance.now() - started);
  return result;
}

/**
 * The physical ceiling: what one durable create costs on this disk without any queue logic, the same steps a
 * `strict` enqueue takes (write, fsync the file, rename into place, fsync the directory), one at a time.
 */
async function rawCeiling(root: string, count: number): Promise<Rate> {
  const latencies: number[] = [];
  const started = performance.now();
  await rawFsyncRate(root, count, latencies);
  return rateOf(latencies, performance.now() - started);
}

interface DepthResult {
  durability: Durability;
  depth: number;
  enqueue: Rate;
  /** Sequential claim+complete pairs at a constant depth: pairs per second of time spent in them, pair latency. */
  claimComplete: Rate;
  claim: Latency;
  complete: Latency;
  /** CPU time of the whole process (main thread and libuv's file system threads) per pair, in ms. */
  userMsPerPair: number;
  systemMsPerPair: number;
  /** How long the consumer took to start: recovery, and the one full listing of pending/ into its index. */
  consumerStartMs: number;
}

async function measure(root: string, durability: Durability, depth: number): Promise<DepthResult> {
  const directory = await mkdtemp(path.join(root, 'assistant-bench-queue-'));
  let consumer: TaskConsumer | undefined;
  try {
    const queue = await openFileTaskQueue({ directory, settings: { durability } });
    const enqueueLatencies: number[] = [];
    const enqueueStarted = performance.now();
    for (let index = 0; index < depth; index += enqueueConcurrency) {
      const batch = Math.min(enqueueConcurrency, depth - index);
      await Promise.all(
        Array.from({ length: batch }, (_, offset) =>
          timed(enqueueLatencies, () => queue.enqueue({ type: 'bench.task', payload: { i: index + offset } })),
        ),
      );
    }
    const enqueue = rateOf(enqueueLatencies, performance.now() - enqueueStarted);

    // Started after the fill, so the index comes from start()'s listing and the timed claims pay for no watch
    // events of the fill: what is measured is claiming at a given depth, not catching up with a burst.
    const consumerStarted = performance.now();
    const worker = queue.consumer();
    consumer = worker;
    await worker.start();
    const consumerStartMs = performance.now() - consumerStarted;
    const { pending } = await queue.stats();
    if (pending < depth) throw new Error(`the queue holds ${pending} of ${depth} pending tasks`);
    // Each pair is followed by one untimed enqueue, so the depth stays where it was set and every depth times the
    // same number of pairs; the rate counts only time spent in pairs.
    const claimLatencies: number[] = [];
    const completeLatencies: number[] = [];
    const pairLatencies: number[] = [];
    // Kernel time is where a disk's quirks show (ext4 without a journal scans for a free inode on every create).
    const cpu = { user: 0, system: 0 };
    for (let index = 0; index < operations; index++) {
      const cpuStarted = process.cpuUsage();
      const pairStarted = performance.now();
      const claimed = await timed(claimLatencies, () => worker.claim());
      if (!claimed) throw new Error(`the queue ran dry after ${index} claims at depth ${depth}`);
      const completed = await timed(completeLatencies, () => worker.complete(claimed, null));
      if (completed.state !== 'done' || !completed.recorded)
        throw new Error(`the consumer lost its lease on ${claimed.id}`);
      pairLatencies.push(performance.now() - pairStarted);
      const used = process.cpuUsage(cpuStarted);
      cpu.user += used.user;
      cpu.system += used.system;
      await queue.enqueue({ type: 'bench.task', payload: { i: depth + index } });
    }
    const pairsMs = pairLatencies.reduce((sum, value) => sum + value, 0);
    const claimComplete = rateOf(pairLatencies, pairsMs);
    return {
      durability,
      depth,
      enqueue,
      claimComplete,
      claim: latencyOf(claimLatencies),
      complete: latencyOf(completeLatencies),
      userMsPerPair: cpu.user / 1_000 / operations,
      systemMsPerPair: cpu.system / 1_000 / operations,
      consumerStartMs,
    };
  } finally {
    await consumer?.close();
    await rm(directory, { recursive: true, force: true });
  }
}

/** The device and filesystem type under `directory` (`stat -f` says ext2/ext3 for ext4, so df first). */
function filesystemOf(directory: string): string {
  try {
    const [, line = ''] = execFileSync('df', ['-T', directory], { encoding: 'utf8' }).trim().split('\n');
    const [device, type] = line.split(/\s+/);
    if (device && type) return `${type} on ${device}`;
  } catch {
    // Not every system has GNU df; the filesystem magic name is the next best thing.
  }
  try {
    return execFileSync('stat', ['-f', '-c', '%T', directory], { encoding: 'utf8' }).trim();
  } catch {
    return 'unknown filesystem';
  }
}

const root = path.resolve(values.dir);
const filesystem = filesystemOf(root);
const log = (line: string) => {
  if (!values.json) process.stdout.write(`${line}\n`);
};
const runStarted = performance.now();
const cpuModel = os.cpus()[0]?.model ?? 'unknown cpu';
log(`queue bench in ${root} (${filesystem}); node ${process.version}; ${os.cpus().length} × ${cpuModel}`);
log(`every depth is filled in full and every enqueue timed (no sampling), ${enqueueConcurrency} in flight at a time;`);
log(`claim+complete: one consumer, ${operations} sequential pairs per depth, each followed by an untimed enqueue`);
// Warm-up on a throwaway queue, so the first depth measured does not pay for JIT compilation.
await measure(root, 'os', 300);
const ceiling = await rawCeiling(root, ceilingIterations);
log(
  `raw write+fsync+rename+fsync-dir (${ceilingIterations} in a row): ${ceiling.perSecond.toFixed(0)}/s, p50 ${ceiling.p50Ms.toFixed(2)} ms, p99 ${ceiling.p99Ms.toFixed(2)} ms`,
);
log('');
const ms = (value: number) => value.toFixed(2).padStart(7);
log(
  'durability    depth  enqueue/s  p50 ms  p99 ms  start ms  claim+complete/s  claim p50  p99 ms  complete p50  p99 ms  cpu ms/pair user+sys',
);
const results: DepthResult[] = [];
for (const durability of durabilities) {
  for (const depth of depths) {
    const result = await measure(root, durability, depth);
    results.push(result);
    const { enqueue, claimComplete, claim, complete } = result;
    log(
      `${durability.padEnd(10)} ${String(depth).padStart(8)} ${enqueue.perSecond.toFixed(0).padStart(10)} ${ms(enqueue.p50Ms)} ${ms(enqueue.p99Ms)} ${result.consumerStartMs.toFixed(0).padStart(9)} ${claimComplete.perSecond.toFixed(0).padStart(17)}    ${ms(claim.p50Ms)} ${ms(claim.p99Ms)}       ${ms(complete.p50Ms)} ${ms(complete.p99Ms)}  ${result.userMsPerPair.toFixed(2).padStart(9)}+${result.systemMsPerPair.toFixed(2)}`,
    );
  }
}
log("start ms: the consumer's start (recovery, then one listing of pending/ into its index)");
log('cpu ms/pair: process CPU (all threads) per claim+complete, user + kernel');
log('');
for (const durability of durabilities) {
  const rows = results.filter((result) => result.durability === durability);
  const first = rows[0];
  const last = rows[rows.length - 1];
  if (first && last && first !== last) {
    const ratio = last.claimComplete.perSecond / first.claimComplete.perSecond;
    log(
      `${durability}: claim+complete/s at depth ${last.depth} is ${ratio.toFixed(2)}× its rate at depth ${first.depth} (goal: at least 0.5×)`,
    );
  }
}
const totalSeconds = (performance.now() - runStarted) / 1_000;
log(`whole run: ${totalSeconds.toFixed(0)} s`);
if (values.json) {
  const machine = { cpu: cpuModel, cores: os.cpus().length, memoryBytes: os.totalmem(), node: process.version };
  process.stdout.write(
    `${JSON.stringify({ directory: root, filesystem, machine, totalSeconds, ceiling, results }, null, 2)}\n`,
  );
}
