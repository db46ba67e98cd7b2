// bench:events — what the event ledger costs.
//
// 1. Append throughput with fsync: EventLedger.emit of task.done events (each fsynced, under the cross-process
//    append lock, with the dedup check), one after another, in a temp directory on this machine's disk: events/s and
//    p50/p99 per append.
// 2. Two processes appending at once (the server and the worker do): events/s in all.
// 3. The ledger's size per 10,000 events: the day files, and the index beside them.
//
// Usage: node bench/events.ts [--events 10000]
import { fork } from 'node:child_process';
import { mkdtemp, readdir, rm, stat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { EventLedger } from '@assistant/events';

const eventsArg = process.argv.indexOf('--events');
const count = eventsArg === -1 ? 10_000 : Number(process.argv[eventsArg + 1]);

async function appendAll(directory: string, prefix: string, total: number): Promise<number[]> {
  const ledger = new EventLedger({ directory });
  const times: number[] = [];
  for (let index = 0; index < total; index++) {
    const task = `${prefix}-${index}`;
    const started = performance.now();
    await ledger.emit({
      type: 'task.done',
      source: 'queue',
      nativeId: `${task}:1`,
      causedBy: [task],
      data: { task, task_type: 'email.inbox.classify', integration: 'personal', attempts: 1 },
    });
    times.push(performance.now() - started);
  }
  return times;
}

async function sizeOf(directory: string): Promise<{ days: number; index: number }> {
  let days = 0;
  let index = 0;
  for (const name of await readdir(directory)) {
    if (name.endsWith('.jsonl')) days += (await stat(path.join(directory, name))).size;
  }
  for (const name of await readdir(path.join(directory, 'index')).catch(() => [])) {
    index += (await stat(path.join(directory, 'index', name))).size;
  }
  return { days, index };
}

const percentile = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] ?? 0;

if (process.argv[2] === '--child') {
  const [, , , directory, prefix, total] = process.argv;
  await appendAll(directory as string, prefix as string, Number(total));
  process.exit(0);
}

const root = await mkdtemp(path.join(os.tmpdir(), 'bench-events-'));
try {
  const single = path.join(root, 'single');
  const started = performance.now();
  const times = await appendAll(single, 'a', count);
  const seconds = (performance.now() - started) / 1000;
  times.sort((a, b) => a - b);
  const size = await sizeOf(single);
  console.log(
    `machine: ${os.cpus()[0]?.model ?? 'unknown'} x${os.cpus().length}, ${Math.round(os.totalmem() / 2 ** 30)} GiB, Node ${process.version}`,
  );
  console.log(
    `one process, ${count} appends with fsync: ${Math.round(count / seconds)} events/s; p50 ${percentile(times, 0.5).toFixed(2)} ms, p99 ${percentile(times, 0.99).toFixed(2)} ms`,
  );
  console.log(
    `size per 10,000 events: ${(((size.days / count) * 10_000) / 1024).toFixed(0)} KiB of day files, ${(((size.index / count) * 10_000) / 1024).toFixed(0)} KiB of index`,
  );

  const shared = path.join(root, 'shared');
  const half = Math.floor(count / 4);
  const twoStarted = performance.now();
  await Promise.all(
    ['x', 'y'].map(
      (prefix) =>
        new Promise<void>((resolve, reject) => {
          const child = fork(new URL(import.meta.url).pathname, ['--child', shared, prefix, String(half)]);
          child.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`child exited ${code}`))));
        }),
    ),
  );
  const twoSeconds = (performance.now() - twoStarted) / 1000;
  console.log(
    `two processes, ${half} appends each: ${Math.round((2 * half) / twoSeconds)} events/s in all (process start included)`,
  );
} finally {
  await rm(root, { recursive: true, force: true });
}
