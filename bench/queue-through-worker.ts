// `npm run bench:queue -- --through-worker [--depths 500,10000] [--concurrency 1,8] [--dir /path] [--raw-ops 2000]
//   [--repeat N] [--node-options "--cpu-prof --cpu-prof-dir=/tmp/prof"]`
// The queue through the real worker: a temp data dir and config, `depth` system.echo tasks enqueued, then
// `assistant work --exit-when-idle --concurrency C` as a child process; claim+complete per second from the time
// between its "worker ready" line and its exit (and from spawn to exit, start-up included). Before each run, the
// same disk's raw write+fsync+rename+fsync-dir loop, so each rate has a ceiling measured minutes apart at most.
// CPU per task: the worker's user+system CPU (all its threads) from its "worker ready" line to its exit, divided by
// the tasks — read from /proc/<pid>/stat at ready (clock ticks) and from process.cpuUsage() printed by a one-line
// `--import` hook at exit. `--node-options` passes flags to the worker's node (e.g. `--cpu-prof` for a profile).
// It prints figures; it never fails for being slow, only for bad options or a run that did not finish its tasks.
import { readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
// The queue's smallest surface on purpose (open, enqueue, stats): its API is being rewritten.
import { openFileTaskQueue } from '@assistant/queue';
import { cliMain, machineLine, rawFsyncRate, runNode } from './bench-processes.ts';

function positiveIntegers(option: string, text: string): number[] {
  const numbers = text.split(',').map((part) => Number(part.replaceAll('_', '')));
  const bad = numbers.find((value) => !Number.isInteger(value) || value <= 0);
  if (bad !== undefined) throw new Error(`--${option} expects positive integers separated by commas, got \`${text}\``);
  return numbers;
}

interface Row {
  depth: number;
  concurrency: number;
  rawPerSecond: number;
  /** From the worker's "worker ready" line to its exit: claim+complete only. */
  perSecond: number;
  /** From spawning `assistant work` to its exit: Node start, config, recovery, the listing of pending/. */
  wallPerSecond: number;
  startMs: number;
  /** The worker's user+system CPU from "worker ready" to exit, per task, in microseconds. */
  cpuMicrosecondsPerTask: number;
}

// Printed by the worker as it exits (fs.writeSync: nothing is left in a buffer), read back from its output.
const cpuAtExitHook = `data:text/javascript,${encodeURIComponent(
  'import{writeSync}from"node:fs";process.on("exit",()=>{const u=process.cpuUsage();writeSync(2,"bench-cpu-at-exit "+(u.user+u.system)+"\\n")});',
)}`;

/** User+system CPU of a running process in microseconds, from /proc/<pid>/stat (clock ticks of 10 ms). */
function processCpuMicroseconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // Fields after the command name (which may hold spaces) in parentheses; utime and stime are fields 14 and 15.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const ticksPerSecond = 100;
  return ((Number(fields[11]) + Number(fields[12])) / ticksPerSecond) * 1_000_000;
}

async function runOnce(
  root: string,
  depth: number,
  concurrency: number,
  rawOps: number,
  nodeOptions: readonly string[],
): Promise<Row> {
  const directory = await mkdtemp(path.join(root, 'assistant-bench-worker-'));
  try {
    const rawPerSecond = await rawFsyncRate(root, rawOps);
    const configFile = path.join(directory, 'config.yaml');
    await writeFile(configFile, 'data_dir: ./data\nworker:\n  concurrency: 1\n  poll_interval: 1s\n');
    const queue = await openFileTaskQueue({ directory: path.join(directory, 'data', 'queue') });
    const inFlight = 16;
    for (let index = 0; index < depth; index += inFlight) {
      const batch = Math.min(inFlight, depth - index);
      await Promise.all(
        Array.from({ length: batch }, (_, offset) =>
          queue.enqueue({ type: 'system.echo', payload: { i: index + offset }, source: 'cli' }),
        ),
      );
    }
    const filled = await queue.stats();
    if (filled.pending !== depth) throw new Error(`enqueued ${depth} tasks but the queue holds ${filled.pending}`);

    const spawnedAt = performance.now();
    const worker = runNode(
      [
        ...nodeOptions,
        '--import',
        cpuAtExitHook,
        cliMain,
        'work',
        '--exit-when-idle',
        '--concurrency',
        String(concurrency),
        '--config',
        configFile,
      ],
      { env: { ASSISTANT_LOG_FORMAT: 'json' } },
    );
    // Generous: at 10,000 deep on a slow shared disk the run itself takes a minute or two.
    await worker.waitForOutput(/worker ready/, 120_000);
    const readyAt = performance.now();
    const pid = worker.child.pid;
    if (pid === undefined) throw new Error('assistant work has no pid');
    const cpuAtReady = processCpuMicroseconds(pid);
    const exit = await worker.exited;
    if (exit.code !== 0) {
      throw new Error(
        `assistant work exited with ${exit.code ?? exit.signal}; its output:\n${worker.output().slice(-4000)}`,
      );
    }
    const cpuAtExit = worker.output().match(/bench-cpu-at-exit (\d+)/);
    if (!cpuAtExit)
      throw new Error(`the worker did not print its CPU at exit; its output:\n${worker.output().slice(-4000)}`);
    const after = await queue.stats();
    if (after.done !== depth || after.pending + after.active + after.failed !== 0) {
      throw new Error(`after the run: ${JSON.stringify({ ...after, byType: undefined })}, expected ${depth} done`);
    }
    return {
      depth,
      concurrency,
      rawPerSecond,
      perSecond: (depth / (exit.atMs - readyAt)) * 1_000,
      wallPerSecond: (depth / (exit.atMs - spawnedAt)) * 1_000,
      startMs: readyAt - spawnedAt,
      cpuMicrosecondsPerTask: (Number(cpuAtExit[1]) - cpuAtReady) / depth,
    };
  } finally {
    await rm(directory, { recursive: true, force: true });
  }
}

export async function runThroughWorker(argv: readonly string[]): Promise<void> {
  const { values } = parseArgs({
    args: [...argv],
    options: {
      'through-worker': { type: 'boolean' },
      depths: { type: 'string', default: '500,10000' },
      concurrency: { type: 'string', default: '1,8' },
      dir: { type: 'string', default: os.tmpdir() },
      'raw-ops': { type: 'string', default: '2000' },
      repeat: { type: 'string', default: '1' },
      'node-options': { type: 'string', default: '' },
      json: { type: 'boolean', default: false },
    },
  });
  const depths = positiveIntegers('depths', values.depths);
  const concurrencies = positiveIntegers('concurrency', values.concurrency);
  const [rawOps = 2_000] = positiveIntegers('raw-ops', values['raw-ops']);
  const [repeat = 1] = positiveIntegers('repeat', values.repeat);
  const nodeOptions = values['node-options'].split(' ').filter((part) => part !== '');
  const root = path.resolve(values.dir);
  const log = (line: string) => {
    if (!values.json) process.stdout.write(`${line}\n`);
  };
  log(`queue through the worker: ${machineLine(root)}`);
  log(
    `system.echo tasks, \`assistant work --exit-when-idle --concurrency C\`; raw = ${rawOps} write+fsync+rename+fsync-dir in a row just before each run`,
  );
  log('');
  log('   depth  conc  raw/s  claim+complete/s  ratio to raw  CPU µs/task  wall/s (start incl.)  worker start ms');
  const rows: Row[] = [];
  for (let round = 0; round < repeat; round += 1) {
    for (const depth of depths) {
      for (const concurrency of concurrencies) {
        const row = await runOnce(root, depth, concurrency, rawOps, nodeOptions);
        rows.push(row);
        log(
          `${String(depth).padStart(8)} ${String(concurrency).padStart(5)} ${row.rawPerSecond.toFixed(0).padStart(6)} ${row.perSecond.toFixed(0).padStart(17)} ${`${((row.perSecond / row.rawPerSecond) * 100).toFixed(0)} %`.padStart(13)} ${row.cpuMicrosecondsPerTask.toFixed(0).padStart(12)} ${row.wallPerSecond.toFixed(0).padStart(20)} ${row.startMs.toFixed(0).padStart(16)}`,
        );
      }
    }
  }
  log('');
  log('goal (issue 38): at concurrency 1 and 500 deep ≥ 90 % of raw; at concurrency 8 ≥ 300 % of raw');
  if (values.json)
    process.stdout.write(`${JSON.stringify({ directory: root, machine: machineLine(root), rows }, null, 2)}\n`);
}
