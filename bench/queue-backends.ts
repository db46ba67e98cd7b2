// The file backend beside the Redis (BullMQ) backend, in one run, on this machine: enqueue rate, and claim+complete
// rate with 1 and 16 tasks in flight, at a given depth. `npm run bench:queue -- --backend file,redis [--depth 10000]
// [--ops 2000] [--concurrency 1,16] [--redis-url redis://…] [--json]`. Without --redis-url it starts a private
// redis-server on a free loopback port (Debian's redis-server must be installed). Prints figures; never fails for
// being slow. Results go in docs/performance.md and docs/scale-out.md.
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { openFileTaskQueue, type TaskQueue } from '@assistant/queue';
import { openRedisTaskQueue } from '@assistant/queue-redis';
import { startRedis } from '../tests/helpers/redis.ts';

type Backend = 'file' | 'redis';

interface Options {
  backends: Backend[];
  depth: number;
  operations: number;
  concurrencies: number[];
  redisUrl: string | undefined;
  json: boolean;
}

function parse(argv: string[]): Options {
  const { values } = parseArgs({
    args: argv,
    options: {
      backend: { type: 'string', default: 'file,redis' },
      depth: { type: 'string', default: '10000' },
      ops: { type: 'string', default: '2000' },
      concurrency: { type: 'string', default: '1,16' },
      'redis-url': { type: 'string' },
      json: { type: 'boolean', default: false },
    },
  });
  const backends = values.backend.split(',').map((name) => {
    if (name === 'file' || name === 'redis') return name;
    throw new Error(`--backend takes file, redis or file,redis; got \`${values.backend}\``);
  });
  const integers = (option: string, text: string) =>
    text.split(',').map((part) => {
      const value = Number(part.replaceAll('_', ''));
      if (!Number.isInteger(value) || value <= 0)
        throw new Error(`--${option} takes positive integers, got \`${text}\``);
      return value;
    });
  return {
    backends,
    depth: integers('depth', values.depth)[0] ?? 10_000,
    operations: integers('ops', values.ops)[0] ?? 2_000,
    concurrencies: integers('concurrency', values.concurrency),
    redisUrl: values['redis-url'],
    json: values.json,
  };
}

interface Figures {
  backend: Backend;
  depth: number;
  /** Enqueues per second, 16 in flight, filling the queue to `depth`. */
  enqueuePerSecond: number;
  /** Claim+complete pairs per second with `concurrency` loops sharing one consumer, the queue kept at `depth`. */
  claimComplete: { concurrency: number; perSecond: number; p50Ms: number; p99Ms: number }[];
}

const enqueueConcurrency = 16;

function percentile(sorted: number[], fraction: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * fraction))] ?? 0;
}

async function measure(backend: Backend, queue: TaskQueue, options: Options): Promise<Figures> {
  const { depth, operations } = options;
  let sequence = 0;
  const enqueueOne = async () => {
    const outcome = await queue.enqueue({ type: 'bench.task', payload: { i: sequence++ } });
    if (outcome.status !== 'enqueued') throw new Error(`enqueue refused: ${outcome.status}`);
  };
  const fillStarted = performance.now();
  for (let index = 0; index < depth; index += enqueueConcurrency) {
    await Promise.all(Array.from({ length: Math.min(enqueueConcurrency, depth - index) }, enqueueOne));
  }
  const enqueuePerSecond = (depth / (performance.now() - fillStarted)) * 1_000;
  const consumer = queue.consumer();
  await consumer.start();
  const claimComplete: Figures['claimComplete'] = [];
  try {
    for (const concurrency of options.concurrencies) {
      const latencies: number[] = [];
      let left = operations;
      const loop = async () => {
        while (left > 0) {
          left -= 1;
          const started = performance.now();
          const claimed = await consumer.claim();
          if (!claimed) throw new Error(`the queue ran dry at depth ${depth}`);
          const outcome = await consumer.complete(claimed, null);
          if (outcome.state !== 'done' || !outcome.recorded) throw new Error(`lost the lease on ${claimed.id}`);
          latencies.push(performance.now() - started);
          // One enqueue per pair keeps the depth where it was set.
          await enqueueOne();
        }
      };
      const started = performance.now();
      await Promise.all(Array.from({ length: concurrency }, loop));
      const elapsedMs = performance.now() - started;
      const sorted = latencies.sort((left, right) => left - right);
      claimComplete.push({
        concurrency,
        perSecond: (operations / elapsedMs) * 1_000,
        p50Ms: percentile(sorted, 0.5),
        p99Ms: percentile(sorted, 0.99),
      });
    }
  } finally {
    await consumer.close();
  }
  return { backend, depth, enqueuePerSecond, claimComplete };
}

export async function runBackendComparison(argv: string[]): Promise<void> {
  const options = parse(argv);
  const log = (line: string) => {
    if (!options.json) process.stdout.write(`${line}\n`);
  };
  const cpuModel = os.cpus()[0]?.model ?? 'unknown cpu';
  log(`queue backends: node ${process.version}; ${os.cpus().length} × ${cpuModel}`);
  log(
    `depth ${options.depth}, filled ${enqueueConcurrency} enqueues in flight; then ${options.operations} claim+complete pairs per concurrency, each followed by an enqueue`,
  );
  const results: Figures[] = [];
  const root = await mkdtemp(path.join(os.tmpdir(), 'assistant-bench-backends-'));
  const redis = options.backends.includes('redis') && !options.redisUrl ? await startRedis() : undefined;
  try {
    for (const backend of options.backends) {
      const queue =
        backend === 'file'
          ? await openFileTaskQueue({ directory: path.join(root, 'queue'), dataDirectory: root })
          : await openRedisTaskQueue({
              url: options.redisUrl ?? redis?.url ?? '',
              prefix: `bench-${process.pid}-${Date.now()}`,
            });
      try {
        // A throwaway round first, so neither backend's figures pay for JIT compilation or connections.
        await measure(backend, queue, { ...options, depth: 200, operations: 200 });
        const figures = await measure(backend, queue, options);
        results.push(figures);
        const pairs = figures.claimComplete
          .map(
            (pair) =>
              `C=${pair.concurrency}: ${pair.perSecond.toFixed(0)}/s (p50 ${pair.p50Ms.toFixed(2)} ms, p99 ${pair.p99Ms.toFixed(2)} ms)`,
          )
          .join('; ');
        log(`${backend.padEnd(6)} enqueue ${figures.enqueuePerSecond.toFixed(0)}/s; claim+complete ${pairs}`);
      } finally {
        await queue.close();
      }
    }
  } finally {
    await redis?.[Symbol.asyncDispose]();
    await rm(root, { recursive: true, force: true });
  }
  if (options.json)
    process.stdout.write(`${JSON.stringify({ cpu: cpuModel, cores: os.cpus().length, results }, null, 2)}\n`);
}
