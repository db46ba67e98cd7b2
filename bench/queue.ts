// Queue throughput and latency at several depths, for both durability modes, next to the raw fsync ceiling of the
// same disk. `npm run bench:queue [-- --depths 100,10000 --durability os --ops 2000 --dir /path --json]`.
// It prints figures; it never fails for being slow. Results and the machine they ran on go in docs/performance.md.
import { execFileSync } from 'node:child_process';
import { mkdtemp, open, rename, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { type Durability, QueueConsumer, TaskQueue } from '@assistant/queue';

const { values } = parseArgs({
  options: {
    depths: { type: 'string', default: '100,10000,100000' },
    durability: { type: 'string', default: 'os,strict' },
    ops: { type: 'string', default: '2000' },
    dir: { type: 'string', default: os.tmpdir() },
    json: { type: 'boolean', default: false },
  },
});
const depths = values.depths.split(',').map(Number);
const durabilities = values.durability.split(',').map((value): Durability => (value === 'strict' ? 'strict' : 'os'));
const operations = Number(values.ops);
const enqueueConcurrency = 16;

interface Summary {
  perSecond: number;
  p50Ms: number;
  p99Ms: number;
}

function summarise(latenciesMs: number[], totalMs: number): Summary {
  const sorted = [...latenciesMs].sort((left, right) => left - right);
  const at = (fraction: number) => sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * fraction))] ?? 0;
  return { perSecond: (latenciesMs.length / totalMs) * 1_000, p50Ms: at(0.5), p99Ms: at(0.99) };
}

async function timed<T>(latencies: number[], action: () => Promise<T>): Promise<T> {
  const started = performance.now();
  const result = await action();
  latencies.push(performance.now() - started);
  return result;
}

/** The physical ceiling: what one durable create costs on this disk, without any queue logic. */
async function rawCeiling(root: string, count: number): Promise<Summary> {
  const directory = await mkdtemp(path.join(root, 'assistant-bench-raw-'));
  const latencies: number[] = [];
  const started = performance.now();
  try {
    for (let index = 0; index < count; index++) {
      await timed(latencies, async () => {
        const tmp = path.join(directory, `${index}.tmp`);
        const handle = await open(tmp, 'wx');
        await handle.writeFile('id: x\ntype: bench.task\npayload: {i: 1}\n');
        await handle.sync();
        await handle.close();
        await rename(tmp, path.join(directory, `${index}.yaml`));
        const directoryHandle = await open(directory, 'r');
        await directoryHandle.sync();
        await directoryHandle.close();
      });
    }
    return summarise(latencies, performance.now() - started);
  } finally {
    await rm(directory, { recursive: true, force: true });
  }
}

interface DepthResult {
  durability: Durability;
  depth: number;
  enqueue: Summary;
  claim: Summary;
  complete: Summary;
  claimComplete: Summary;
}

async function measure(root: string, durability: Durability, depth: number): Promise<DepthResult> {
  const directory = await mkdtemp(path.join(root, 'assistant-bench-queue-'));
  try {
    const queue = await TaskQueue.open({ directory, settings: { durability } });
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
    const enqueue = summarise(enqueueLatencies, performance.now() - enqueueStarted);

    const consumer = new QueueConsumer(queue, { pollIntervalMs: 50 });
    await consumer.start();
    await consumer.rescan();
    const count = Math.min(operations, depth);
    const claimLatencies: number[] = [];
    const completeLatencies: number[] = [];
    const pairLatencies: number[] = [];
    const started = performance.now();
    for (let index = 0; index < count; index++) {
      const pairStarted = performance.now();
      const claimed = await timed(claimLatencies, () => consumer.claim());
      if (!claimed) throw new Error(`the queue ran dry after ${index} claims at depth ${depth}`);
      await timed(completeLatencies, () => consumer.complete(claimed, null));
      pairLatencies.push(performance.now() - pairStarted);
    }
    const totalMs = performance.now() - started;
    await consumer.close();
    return {
      durability,
      depth,
      enqueue,
      claim: summarise(claimLatencies, totalMs),
      complete: summarise(completeLatencies, totalMs),
      claimComplete: summarise(pairLatencies, totalMs),
    };
  } finally {
    await rm(directory, { recursive: true, force: true });
  }
}

function filesystemOf(directory: string): string {
  try {
    return execFileSync('stat', ['-f', '-c', '%T', directory], { encoding: 'utf8' }).trim();
  } catch {
    return 'unknown';
  }
}

const root = path.resolve(values.dir);
const log = (line: string) => {
  if (!values.json) process.stdout.write(`${line}\n`);
};
log(`queue bench in ${root} (${filesystemOf(root)}), node ${process.version}, ${os.cpus().length} cpus`);
log(
  `enqueues run ${enqueueConcurrency} at a time; claim+complete is sequential, ${operations} pairs per depth at most`,
);
// Warm-up on a throwaway queue, so the first depth measured does not pay for JIT compilation.
await measure(root, 'os', 300);
const ceiling = await rawCeiling(root, 2_000);
log(
  `raw write+fsync+rename+fsync-dir: ${ceiling.perSecond.toFixed(0)}/s, p50 ${ceiling.p50Ms.toFixed(2)} ms, p99 ${ceiling.p99Ms.toFixed(2)} ms`,
);
log('');
log(
  'durability   depth  enqueue/s  enq p50  enq p99  claim+complete/s  claim p50  claim p99  complete p50  complete p99',
);
const results: DepthResult[] = [];
for (const durability of durabilities) {
  for (const depth of depths) {
    const result = await measure(root, durability, depth);
    results.push(result);
    const ms = (value: number) => `${value.toFixed(2)}ms`.padStart(9);
    log(
      `${durability.padEnd(10)} ${String(depth).padStart(7)} ${result.enqueue.perSecond.toFixed(0).padStart(10)} ${ms(result.enqueue.p50Ms)}${ms(result.enqueue.p99Ms)} ${result.claimComplete.perSecond.toFixed(0).padStart(17)} ${ms(result.claim.p50Ms)}  ${ms(result.claim.p99Ms)}    ${ms(result.complete.p50Ms)}     ${ms(result.complete.p99Ms)}`,
    );
  }
}
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
if (values.json) {
  process.stdout.write(
    `${JSON.stringify({ directory: root, filesystem: filesystemOf(root), ceiling, results }, null, 2)}\n`,
  );
}
