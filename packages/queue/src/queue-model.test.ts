// The queue against an in-memory model: fast-check runs random interleavings of enqueue (with and without
// policies), hand-dropped tasks and corrupt files, claims by two workers, complete, fail (retryable,
// unrecoverable, delayed), manual retry, worker crashes that leave files in active/, recovery, restarts, prune
// and the passing of time. After every step the directories must hold exactly what the model says: every task
// in exactly one state, none lost, none duplicated, names and contents in agreement.
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { backoffDelayMs } from './backoff.ts';
import { decodeStateName, reasonSuffix, type TaskState, taskStates } from './file-layout.ts';
import { FileTaskConsumer } from './file-task-consumer.ts';
import { FileTaskQueue } from './file-task-queue.ts';
import { taskFingerprint } from './fingerprint.ts';
import type { ClaimedTask } from './interfaces.ts';
import { poisonWorkerDeaths } from './poison.ts';
import type { QueueConfig } from './queue-config.ts';
import { DelayedError, RetryableError, UnrecoverableError } from './task-errors.ts';
import { newTaskId, taskIdTimeMs } from './task-id.ts';
import { decodeTaskName, encodeTaskName } from './task-name.ts';

const policies: QueueConfig['policies'] = {
  defaults: {
    dedup: true,
    rateLimit: null,
    maxAttempts: 2,
    backoff: { type: 'fixed', delayMs: 1_000, maxMs: 1_000 },
    timeoutMs: 60_000,
  },
  overrides: { 'model.limited': { rateLimit: { max: 2, perMs: 10_000 } } },
};
const types = ['model.a', 'model.b', 'model.limited'] as const;
const delayMs = 5_000;

interface ModelTask {
  id: string;
  type: string;
  priority: number;
  readyAtMs: number;
  fingerprint: string;
  attempts: number;
  maxAttempts: number;
  state: TaskState;
  /** Which worker slot holds it, while active; 'orphan' once its worker crashed. */
  holder?: number | 'orphan';
  /** Times its worker died while running it; a retry by hand keeps them (poison.ts: the next death may poison it). */
  deaths?: number;
}

interface Model {
  nowMs: number;
  tasks: Map<string, ModelTask>;
  /** Hand-dropped files that are not tasks: name → where the model expects them (pending until quarantined). */
  corrupt: Map<string, { state: 'pending' | 'failed'; decodable: boolean; readyAtMs: number }>;
  corruptCount: number;
}

interface Real {
  queue: FileTaskQueue;
  clock: { nowMs: number };
  workers: (FileTaskConsumer | undefined)[];
  held: Map<string, ClaimedTask>;
}

function fileKey(task: { priority: number; readyAtMs: number; id: string }): string {
  return `${task.priority}_${String(task.readyAtMs).padStart(15, '0')}_${task.id}`;
}

/** What the next claim must return: the first ready task in name order, and the corrupt files it passes on the way. */
function expectedClaim(model: Model): { task: ModelTask | undefined; skipped: string[] } {
  const candidates: { key: string; task?: ModelTask; corrupt?: string }[] = [];
  for (const task of model.tasks.values()) {
    if (task.state === 'pending' && task.readyAtMs <= model.nowMs) candidates.push({ key: fileKey(task), task });
  }
  for (const [name, file] of model.corrupt) {
    const decoded = decodeTaskName(name);
    if (file.state === 'pending' && decoded && decoded.readyAtMs <= model.nowMs) {
      candidates.push({ key: fileKey(decoded), corrupt: name });
    }
  }
  candidates.sort((left, right) => (left.key < right.key ? -1 : left.key > right.key ? 1 : 0));
  const skipped: string[] = [];
  for (const candidate of candidates) {
    if (candidate.corrupt) skipped.push(candidate.corrupt);
    else return { task: candidate.task, skipped };
  }
  return { task: undefined, skipped };
}

async function checkAgreement(model: Model, real: Real): Promise<void> {
  const seen = new Map<string, TaskState>();
  for (const state of taskStates) {
    const names = await readdir(real.queue.paths[state]);
    const expectedCorrupt = [...model.corrupt]
      .filter(([, file]) => file.state === state)
      .map(([name]) => name)
      .sort();
    const expectedReasons = state === 'failed' ? expectedCorrupt.map((name) => name + reasonSuffix) : [];
    const expectedTasks = [...model.tasks.values()].filter((task) => task.state === state);
    const actualTaskNames = names.filter((name) => !model.corrupt.has(name) && !name.endsWith(reasonSuffix));
    expect(names.filter((name) => model.corrupt.has(name)).sort(), `corrupt files in ${state}/`).toEqual(
      expectedCorrupt,
    );
    expect(names.filter((name) => name.endsWith(reasonSuffix)).sort(), `reasons in ${state}/`).toEqual(
      expectedReasons.sort(),
    );
    expect(actualTaskNames.length, `number of tasks in ${state}/`).toBe(expectedTasks.length);
    for (const fileName of actualTaskNames) {
      const name = decodeStateName(state, fileName);
      expect(name, fileName).toBeDefined();
      if (!name) continue;
      expect(seen.get(name.id), `task ${name.id} in two states`).toBeUndefined();
      seen.set(name.id, state);
      const expected = model.tasks.get(name.id);
      expect(expected?.state, `state of ${name.id}`).toBe(state);
      if (!expected) continue;
      expect(name).toEqual({
        priority: expected.priority,
        readyAtMs: expected.readyAtMs,
        id: expected.id,
        fingerprint: expected.fingerprint,
        type: expected.type,
      });
      const task = real.queue.parseTask(await readFile(path.join(real.queue.paths[state], fileName), 'utf8'), name);
      // A claim is a rename only: the attempt it started is written when the task leaves active/.
      expect(task.attempts, `attempts of ${name.id}`).toBe(expected.attempts - (state === 'active' ? 1 : 0));
      expect(task.maxAttempts).toBe(expected.maxAttempts);
    }
  }
  expect(seen.size, 'tasks on disk').toBe(model.tasks.size);
}

type Command = fc.AsyncCommand<Model, Real>;

const step = (
  label: string,
  run: (model: Model, real: Real) => Promise<void>,
  check: (model: Model) => boolean = () => true,
): Command => ({
  check,
  async run(model, real) {
    await run(model, real);
    await checkAgreement(model, real);
  },
  toString: () => label,
});

const enqueueCommand = fc
  .record({
    type: fc.constantFrom(...types),
    payload: fc.integer({ min: 0, max: 3 }),
    priority: fc.integer({ min: 0, max: 9 }),
    withPolicies: fc.boolean(),
    delayed: fc.boolean(),
  })
  .map(({ type, payload, priority, withPolicies, delayed }) =>
    step(
      `enqueue(${type}, ${payload}, p${priority}${withPolicies ? ', policies' : ''}${delayed ? ', later' : ''})`,
      async (model, real) => {
        const readyAtMs = model.nowMs + (delayed ? delayMs : 0);
        const outcome = await real.queue.enqueue({
          type,
          payload: { n: payload },
          priority,
          readyAtMs,
          source: withPolicies ? 'scheduler' : 'api',
        });
        const fingerprint = taskFingerprint(type, { n: payload });
        const tasks = [...model.tasks.values()];
        const duplicate = tasks.some(
          (task) => task.fingerprint === fingerprint && (task.state === 'pending' || task.state === 'active'),
        );
        const recent = tasks.filter(
          (task) => task.type === type && taskIdTimeMs(task.id) > model.nowMs - 10_000 && type === 'model.limited',
        );
        if (withPolicies && duplicate) {
          expect(outcome.status).toBe('duplicate');
        } else if (withPolicies && type === 'model.limited' && recent.length >= 2) {
          expect(outcome.status).toBe('rate_limited');
        } else {
          expect(outcome.status).toBe('enqueued');
          if (outcome.status !== 'enqueued') return;
          model.tasks.set(outcome.task.id, {
            id: outcome.task.id,
            type,
            priority,
            readyAtMs,
            fingerprint,
            attempts: 0,
            maxAttempts: 2,
            state: 'pending',
          });
        }
      },
    ),
  );

const handDropCommand = fc.integer({ min: 0, max: 9 }).map((priority) =>
  step(`handDrop(p${priority})`, async (model, real) => {
    const id = newTaskId(model.nowMs);
    const fingerprint = '00000000000000ff';
    const fileName = encodeTaskName({ priority, readyAtMs: model.nowMs, id, fingerprint, type: 'model.a' });
    await writeFile(path.join(real.queue.paths.pending, fileName), 'payload: {by: hand}\n');
    model.tasks.set(id, {
      id,
      type: 'model.a',
      priority,
      readyAtMs: model.nowMs,
      fingerprint,
      attempts: 0,
      maxAttempts: 2,
      state: 'pending',
    });
  }),
);

const dropCorruptCommand = fc.boolean().map((decodable) =>
  step(`dropCorrupt(${decodable ? 'good name, bad YAML' : 'bad name'})`, async (model, real) => {
    model.corruptCount += 1;
    const fileName = decodable
      ? encodeTaskName({
          priority: 5,
          readyAtMs: model.nowMs,
          id: newTaskId(model.nowMs),
          fingerprint: '0000000000000000',
          type: 'model.a',
        })
      : `junk-${model.corruptCount}.yaml`;
    await writeFile(path.join(real.queue.paths.pending, fileName), 'payload: [unclosed\n');
    model.corrupt.set(fileName, { state: 'pending', decodable, readyAtMs: model.nowMs });
  }),
);

const claimCommand = fc.integer({ min: 0, max: 1 }).map((slot) =>
  step(
    `claim(worker ${slot})`,
    async (model, real) => {
      const worker = real.workers[slot];
      if (!worker) return;
      // A full listing first: the watcher's timing is not part of this model (the race tests cover it).
      await worker.rescan();
      for (const file of model.corrupt.values()) if (file.state === 'pending' && !file.decodable) file.state = 'failed';
      const expected = expectedClaim(model);
      const claimed = await worker.claim();
      for (const name of expected.skipped) {
        const file = model.corrupt.get(name);
        if (file) file.state = 'failed';
      }
      expect(claimed?.task.id).toBe(expected.task?.id);
      if (!claimed || !expected.task) return;
      expected.task.state = 'active';
      expected.task.attempts += 1;
      expected.task.holder = slot;
      real.held.set(claimed.task.id, claimed);
    },
    () => true,
  ),
);

function heldBy(model: Model, pick: number): ModelTask | undefined {
  const held = [...model.tasks.values()]
    .filter((task) => typeof task.holder === 'number')
    .sort((a, b) => (a.id < b.id ? -1 : 1));
  return held.length === 0 ? undefined : held[pick % held.length];
}

const completeCommand = fc.nat().map((pick) =>
  step(`complete(#${pick})`, async (model, real) => {
    const task = heldBy(model, pick);
    if (!task || typeof task.holder !== 'number') return;
    const claimed = real.held.get(task.id);
    const worker = real.workers[task.holder];
    if (!claimed || !worker) throw new Error('model and test disagree about held tasks');
    expect(await worker.complete(claimed, { ok: task.id })).toMatchObject({ state: 'done', recorded: true });
    real.held.delete(task.id);
    task.state = 'done';
    delete task.holder;
  }),
);

const failCommand = fc
  .record({ pick: fc.nat(), kind: fc.constantFrom('retryable', 'unrecoverable', 'delayed') })
  .map(({ pick, kind }) =>
    step(`fail(#${pick}, ${kind})`, async (model, real) => {
      const task = heldBy(model, pick);
      if (!task || typeof task.holder !== 'number') return;
      const claimed = real.held.get(task.id);
      const worker = real.workers[task.holder];
      if (!claimed || !worker) throw new Error('model and test disagree about held tasks');
      const error =
        kind === 'retryable'
          ? new RetryableError('try again')
          : kind === 'unrecoverable'
            ? new UnrecoverableError('no')
            : new DelayedError(model.nowMs + delayMs);
      const outcome = await worker.fail(claimed, error);
      real.held.delete(task.id);
      delete task.holder;
      if (kind === 'delayed') {
        expect(outcome).toBe('delayed');
        task.state = 'pending';
        task.attempts -= 1;
        task.readyAtMs = later(task, model.nowMs + delayMs);
      } else if (kind === 'unrecoverable' || task.attempts >= task.maxAttempts) {
        expect(outcome).toBe('failed');
        task.state = 'failed';
      } else {
        expect(outcome).toBe('retrying');
        task.state = 'pending';
        task.readyAtMs = later(task, model.nowMs + backoffDelayMs(policies.defaults.backoff, task.attempts));
      }
    }),
  );

const retryCommand = fc.nat().map((pick) =>
  step(`retry(#${pick})`, async (model, real) => {
    const failed = [...model.tasks.values()]
      .filter((task) => task.state === 'failed')
      .sort((a, b) => (a.id < b.id ? -1 : 1));
    const task = failed[pick % Math.max(1, failed.length)];
    if (!task) return;
    await real.queue.retry(task.id);
    task.state = 'pending';
    task.attempts = 0;
    task.readyAtMs = later(task, model.nowMs);
  }),
);

const crashCommand = fc.integer({ min: 0, max: 1 }).map((slot) =>
  step(`crash(worker ${slot})`, async (model, real) => {
    const worker = real.workers[slot];
    if (!worker) return;
    // A crash: the worker vanishes with its tasks still in active/ and its heartbeat file gone stale (here: gone).
    await worker.close();
    real.workers[slot] = undefined;
    for (const task of model.tasks.values()) {
      if (task.holder === slot) {
        task.holder = 'orphan';
        real.held.delete(task.id);
      }
    }
  }),
);

/** A task going back to pending/ gets a name strictly later than its current one (requeuedTaskName). */
function later(task: ModelTask, readyAtMs: number): number {
  return Math.max(readyAtMs, task.readyAtMs + 1);
}

function applyRecovery(model: Model): void {
  for (const task of model.tasks.values()) {
    if (task.holder !== 'orphan') continue;
    delete task.holder;
    task.deaths = (task.deaths ?? 0) + 1;
    if (task.attempts >= task.maxAttempts || task.deaths >= poisonWorkerDeaths) {
      task.state = 'failed';
    } else {
      task.state = 'pending';
      // The next name after the claimed one: its place in line, and the same name for every recoverer.
      task.readyAtMs = task.readyAtMs + 1;
    }
  }
}

const recoverCommand = fc.constant(
  step('recover()', async (model, real) => {
    const report = await real.queue.recover();
    const orphans = [...model.tasks.values()].filter((task) => task.holder === 'orphan').length;
    expect(report.requeued.length + report.failed.length).toBe(orphans);
    applyRecovery(model);
  }),
);

const restartCommand = fc.integer({ min: 0, max: 1 }).map((slot) =>
  step(`restart(worker ${slot})`, async (model, real) => {
    if (real.workers[slot]) return;
    const worker = new FileTaskConsumer(real.queue, { sweepIntervalMs: 3_600_000, rescanIntervalMs: 3_600_000 });
    await worker.start();
    real.workers[slot] = worker;
    applyRecovery(model);
    // start() also prunes (done/ is kept for 0 ms here) and lists pending/, which quarantines stray names.
    for (const task of [...model.tasks.values()]) if (task.state === 'done') model.tasks.delete(task.id);
    for (const file of model.corrupt.values()) if (file.state === 'pending' && !file.decodable) file.state = 'failed';
  }),
);

const pruneCommand = fc.constant(
  step('prune()', async (model, real) => {
    const report = await real.queue.prune();
    const done = [...model.tasks.values()].filter((task) => task.state === 'done');
    expect(report.done).toBe(done.length);
    for (const task of done) model.tasks.delete(task.id);
  }),
);

const advanceCommand = fc.constantFrom(500, 1_000, 5_000, 20_000).map((ms) =>
  step(`advance(${ms}ms)`, async (model, real) => {
    model.nowMs += ms;
    real.clock.nowMs = model.nowMs;
  }),
);

describe('queue against its model', () => {
  it('keeps every task in exactly one state through random operations, crashes and recoveries', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.commands(
          [
            enqueueCommand,
            enqueueCommand,
            handDropCommand,
            dropCorruptCommand,
            claimCommand,
            claimCommand,
            completeCommand,
            failCommand,
            retryCommand,
            crashCommand,
            recoverCommand,
            restartCommand,
            pruneCommand,
            advanceCommand,
          ],
          { maxCommands: 60, size: 'max' },
        ),
        async (commands) => {
          const directory = await mkdtemp(path.join(os.tmpdir(), 'assistant-queue-model-'));
          // Time starts a minute ahead of the files' real timestamps, so grace periods (which compare real file
          // times with the queue's clock) have passed; it only moves forward.
          const clock = { nowMs: Date.now() + 60_000 };
          const queue = await FileTaskQueue.open({
            directory,
            settings: { policies, retention: { doneMs: 0, failedMs: 10 * 365 * 86_400_000 } },
            // Crashed workers are detected by their missing heartbeat file; live ones must never look stale.
            leaseMs: 10 * 365 * 86_400_000,
            claimGraceMs: 0,
            now: () => clock.nowMs,
          });
          const slow = { sweepIntervalMs: 3_600_000, rescanIntervalMs: 3_600_000, heartbeatMs: 3_600_000 };
          const workers = [new FileTaskConsumer(queue, slow), new FileTaskConsumer(queue, slow)];
          for (const worker of workers) await worker.start();
          const model: Model = { nowMs: clock.nowMs, tasks: new Map(), corrupt: new Map(), corruptCount: 0 };
          const real: Real = { queue, clock, workers, held: new Map() };
          try {
            await fc.asyncModelRun(() => ({ model, real }), commands);
          } finally {
            for (const worker of real.workers) await worker?.close();
            await rm(directory, { recursive: true, force: true });
          }
        },
      ),
      { numRuns: 60 },
    );
  }, 120_000);
});
