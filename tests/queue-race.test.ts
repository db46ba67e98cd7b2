// The queue's central promise, checked with real processes: claim is a rename, so of several workers racing for
// one file exactly one wins, and a worker killed mid-task loses nothing: recovery hands back exactly the tasks it
// held. In-process tests cannot show this, because one event loop never really races itself.
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { openFileTaskQueue, type TaskEntry, type TaskQueue, type TaskRecord, taskStates } from '@assistant/queue';
import { describe, expect, it } from 'vitest';
import * as z from 'zod';
import { type NodeProcess, type NodeRun, repoRoot, startNode } from './helpers/node-process.ts';
import { type TempDir, tempDir } from './helpers/temp-dir.ts';

const workerScript = path.join(repoRoot, 'tests/fixtures/queue-drain-worker.ts');
const testTimeoutMs = 120_000;
const taskType = 'race.drain.run';

const readyLine = z.object({ pid: z.int(), owner: z.string() });
const exitLine = z.object({ started: z.int(), completed: z.int(), lostLeases: z.int() });
const logLine = z.object({ workerPid: z.int(), taskId: z.string(), event: z.literal('start') });
const drainResult = z.object({ workerPid: z.int(), index: z.int() });

interface DrainWorker {
  process: NodeProcess;
  pid: number;
  owner: string;
  logFile: string;
}

/** Every worker a test started; disposing SIGKILLs those still running, so a failed test leaves none behind. */
class WorkerPool implements AsyncDisposable {
  readonly workers: DrainWorker[] = [];
  readonly #dir: TempDir;

  constructor(dir: TempDir) {
    this.#dir = dir;
  }

  /** Starts a worker on the queue and resolves once it says it is ready. */
  async start(args: readonly string[] = []): Promise<DrainWorker> {
    const logFile = path.join(this.#dir.path, `worker-${this.workers.length}.log`);
    const child = startNode({
      args: [workerScript, '--dir', path.join(this.#dir.path, 'queue'), '--log', logFile, ...args],
    });
    const placeholder: DrainWorker = { process: child, pid: 0, owner: '', logFile };
    this.workers.push(placeholder);
    const match = await child.waitForOutput(/^ready (\{.*\})$/m, { timeoutMs: 30_000 });
    const ready = readyLine.parse(JSON.parse(match[1] ?? ''));
    placeholder.pid = ready.pid;
    placeholder.owner = ready.owner;
    return placeholder;
  }

  async [Symbol.asyncDispose](): Promise<void> {
    for (const { process: child } of this.workers) {
      if (child.child.exitCode === null && child.child.signalCode === null) child.child.kill('SIGKILL');
    }
    await Promise.allSettled(this.workers.map(({ process: child }) => child.exited));
  }
}

/** Enqueues `count` tasks in parallel batches (one fsync each, so batching is what makes 5,000 quick). */
async function enqueueTasks(queue: TaskQueue, count: number): Promise<string[]> {
  const ids: string[] = [];
  const batchSize = 100;
  for (let start = 0; start < count; start += batchSize) {
    const batch = Array.from({ length: Math.min(batchSize, count - start) }, (_, offset) =>
      queue.enqueue({ type: taskType, payload: { index: start + offset } }),
    );
    for (const outcome of await Promise.all(batch)) {
      if (outcome.status !== 'enqueued') throw new Error(`enqueue was refused: ${outcome.reason}`);
      ids.push(outcome.task.id);
    }
  }
  return ids;
}

/** The ids of the tasks a worker's log says it started, in order. A SIGKILL may cut the last line short. */
async function readStarts(worker: DrainWorker, options: { killed: boolean }): Promise<string[]> {
  const text = await readFile(worker.logFile, 'utf8').catch(() => '');
  const lines = text.split('\n');
  const unterminated = lines.pop() ?? '';
  if (unterminated !== '' && !options.killed) throw new Error(`unterminated log line: ${unterminated}`);
  return lines.map((line) => {
    const parsed = logLine.parse(JSON.parse(line));
    expect(parsed.workerPid).toBe(worker.pid);
    return parsed.taskId;
  });
}

function countBy(values: Iterable<string>): Map<string, number> {
  const counts = new Map<string, number>();
  for (const value of values) counts.set(value, (counts.get(value) ?? 0) + 1);
  return counts;
}

type DoneRecord = TaskRecord & { result: z.infer<typeof drainResult> };

/** Reads every done/ task, checking each is a finished task of ours with a result naming its worker. */
async function readDone(queue: TaskQueue): Promise<Map<string, DoneRecord>> {
  const entries = await queue.list({ state: 'done' });
  const done = new Map<string, DoneRecord>();
  const records = await Promise.all(
    entries.map(async (entry) => (await queue.get(entry.name?.id ?? '')) ?? { ...entry, problem: 'gone' }),
  );
  for (const record of records) {
    const id = record.name?.id;
    if (id === undefined || record.task === undefined) throw new Error(`${record.location}: ${record.problem}`);
    expect(done.has(id)).toBe(false);
    done.set(id, { ...record, result: drainResult.parse(record.task.result) });
  }
  return done;
}

/** Asserts that the queue ended drained: all ids in done/ exactly once, nothing anywhere else. */
async function expectDrained(queue: TaskQueue, ids: readonly string[]): Promise<void> {
  const entries: TaskEntry[] = [];
  for (const state of taskStates) entries.push(...(await queue.list({ state })));
  const byState = Object.fromEntries(
    taskStates.map((state) => [state, entries.filter((entry) => entry.state === state).length]),
  );
  expect(byState).toEqual({ pending: 0, active: 0, done: ids.length, failed: 0 });
  // Every id once across all four directories: no task in two places, none lost, none invented.
  const seen = countBy(entries.map((entry) => entry.name?.id ?? entry.location));
  expect([...seen.values()].filter((count) => count !== 1)).toEqual([]);
  expect(new Set(seen.keys())).toEqual(new Set(ids));
}

function exitReport(run: NodeRun): z.infer<typeof exitLine> {
  const match = run.stdout.match(/^exit (\{.*\})$/m);
  if (!match) throw new Error(`no exit line\nstdout:\n${run.stdout}\nstderr:\n${run.stderr}`);
  return exitLine.parse(JSON.parse(match[1] ?? ''));
}

describe('queue race between worker processes', () => {
  it(
    'completes every one of 5,000 tasks exactly once when 4 worker processes drain one directory',
    async () => {
      await using dir = await tempDir();
      await using pool = new WorkerPool(dir);
      const queue = await openFileTaskQueue({ directory: path.join(dir.path, 'queue') });
      const ids = await enqueueTasks(queue, 5_000);

      const workers = await Promise.all(Array.from({ length: 4 }, () => pool.start(['--work-ms', '1'])));
      const runs = await Promise.all(workers.map((worker) => worker.process.exited));
      for (const run of runs) {
        expect(run.code, run.stderr).toBe(0);
        // No warnings: nobody lost a lease and recovery never had to step in between live workers. Soft, so that
        // a failure here still lets the exactly-once checks below say whether a task really ran twice.
        expect.soft(run.stderr).toBe('');
        expect.soft(exitReport(run).lostLeases).toBe(0);
      }
      expect(runs.reduce((sum, run) => sum + exitReport(run).started, 0)).toBe(ids.length);

      await expectDrained(queue, ids);
      const done = await readDone(queue);
      const pids = new Set(workers.map((worker) => worker.pid));
      const indexOf = new Map(ids.map((id, index) => [id, index]));
      for (const [id, record] of done) {
        expect(pids.has(record.result.workerPid)).toBe(true);
        expect(record.result.index).toBe(indexOf.get(id));
        expect(record.task?.attempts).toBe(1);
        expect(record.task?.history).toEqual([]);
      }

      const starts: string[] = [];
      for (const worker of workers) starts.push(...(await readStarts(worker, { killed: false })));
      const startCounts = countBy(starts);
      expect([...startCounts].filter(([, count]) => count !== 1)).toEqual([]);
      expect(new Set(startCounts.keys())).toEqual(new Set(ids));
    },
    testTimeoutMs,
  );

  it(
    'loses nothing and re-runs only the tasks a SIGKILLed worker held',
    async () => {
      await using dir = await tempDir();
      await using pool = new WorkerPool(dir);
      const queue = await openFileTaskQueue({ directory: path.join(dir.path, 'queue') });
      const ids = await enqueueTasks(queue, 3_000);

      // Several tasks in flight per worker, each ten milliseconds long, so the kill lands while it holds some.
      const args = ['--work-ms', '10', '--concurrency', '4'];
      // The victim's tasks take a minute, so when it has started four it holds four, whatever the machine's speed:
      // the kill lands while it holds tasks by construction, not by luck about timing.
      const victimArgs = ['--work-ms', '60000', '--concurrency', '4', '--progress-every', '4'];
      const workers = await Promise.all([pool.start(victimArgs), ...Array.from({ length: 3 }, () => pool.start(args))]);
      const [victim, ...survivors] = workers;
      if (victim === undefined) throw new Error('no workers started');
      await victim.process.waitForOutput(/^started 4$/m, { timeoutMs: 60_000 });
      victim.process.child.kill('SIGKILL');
      const killed = await victim.process.exited;
      expect(killed.signal).toBe('SIGKILL');
      const replacement = await pool.start(args);

      const runs = await Promise.all([...survivors, replacement].map((worker) => worker.process.exited));
      for (const run of runs) {
        expect(run.code, run.stderr).toBe(0);
        // Recovery warnings about the victim's tasks are expected; a lost lease is not (soft, as in the test above).
        expect.soft(exitReport(run).lostLeases, run.stderr).toBe(0);
        expect.soft(run.stderr).not.toMatch(/lost its lease/);
      }

      await expectDrained(queue, ids);
      const done = await readDone(queue);
      const starts = new Map<string, string[]>();
      for (const worker of [...workers, replacement]) {
        for (const id of await readStarts(worker, { killed: worker === victim })) {
          starts.set(id, [...(starts.get(id) ?? []), worker.owner]);
        }
      }
      expect(new Set(starts.keys())).toEqual(new Set(ids));

      // Held at the kill: started by the victim (its log) and not finished by it (no done result with its pid).
      const victimStarts = await readStarts(victim, { killed: true });
      const held = new Set(victimStarts.filter((id) => done.get(id)?.result.workerPid !== victim.pid));
      expect(held.size).toBeGreaterThan(0);
      const rerun = new Set([...starts].filter(([, owners]) => owners.length > 1).map(([id]) => id));
      expect(rerun).toEqual(held);
      // Each held task ran exactly twice: once in the victim, once more anywhere else (listed whole when not).
      const notTwice = [...held]
        .map((id) => ({ id, owners: starts.get(id) ?? [] }))
        .filter(({ owners }) => owners.length !== 2 || owners[0] !== victim.owner || owners[1] === victim.owner);
      expect(notTwice).toEqual([]);

      // A second attempt happens only after the victim died holding the task; the YAML history says so. This
      // also covers tasks the victim claimed but was killed before logging, which ran once yet count 2 attempts.
      for (const [id, record] of done) {
        const task = record.task;
        if (task === undefined) throw new Error(`${record.location} has no task`);
        if (held.has(id)) expect(task.attempts).toBe(2);
        if (task.attempts === 1) {
          expect(task.history).toEqual([]);
          continue;
        }
        expect(task.attempts).toBe(2);
        expect(task.history).toHaveLength(1);
        expect(task.history[0]).toMatchObject({ attempt: 1, worker: victim.owner, error: { type: 'WorkerDied' } });
        expect(task.worker?.id).not.toBe(victim.owner);
      }
    },
    testTimeoutMs,
  );
});
