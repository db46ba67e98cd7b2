import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createToolCallGate, listApprovals } from '@assistant/actions';
import { type LoadedConfig, loadConfig } from '@assistant/config';
import type { TaskHandler } from '@assistant/integration-host';
import { parseSnapshots, parseWorkerProcesses } from '@assistant/metrics';
import { FileNoteStore } from '@assistant/notes';
import {
  type ClaimedTask,
  type JsonValue,
  openFileTaskQueue,
  type Task,
  type TaskConsumer,
  type TaskQueue,
} from '@assistant/queue';
import { CircuitBreakers } from '@assistant/scheduler';
import { pino } from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import * as z from 'zod';
import { runWorker } from './run-worker.ts';
import { loadTestRuntime } from './testing/load-test-runtime.ts';

const greeterFolder = fileURLToPath(new URL('../../../tests/fixtures/integrations/custom/greeter', import.meta.url));

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'assistant-worker-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function setup(extra = ''): Promise<{ config: LoadedConfig; queue: TaskQueue }> {
  const configPath = path.join(dir, 'config.yaml');
  await writeFile(
    configPath,
    `data_dir: ./data\nworker:\n  concurrency: 2\n  poll_interval: 50ms\n  shutdown_grace: 200ms\n${extra}`,
  );
  const { config } = await loadConfig({ configPath });
  return {
    config,
    queue: await openFileTaskQueue({
      directory: config.paths.queue,
      dataDirectory: config.paths.dataDir,
      settings: config.queue,
    }),
  };
}

const logRecord = z.looseObject({ msg: z.string(), outcome: z.string().optional(), durationMs: z.number().optional() });

/** A real pino logger whose lines are kept, so tests can read what the worker said (at debug: every task's lines). */
function capturingLogger() {
  const records: z.infer<typeof logRecord>[] = [];
  const logger = pino({ level: 'debug' }, { write: (line: string) => records.push(logRecord.parse(JSON.parse(line))) });
  return { logger, records };
}

/** Resolves once `count` calls were made. */
function countdown(count: number) {
  const reached = Promise.withResolvers<void>();
  let left = count;
  return {
    reached: reached.promise,
    tick() {
      left -= 1;
      if (left === 0) reached.resolve();
    },
  };
}

async function enqueued(queue: TaskQueue, type: string, payload: JsonValue = null): Promise<string> {
  const outcome = await queue.enqueue({ type, payload, source: 'cli' });
  if (outcome.status !== 'enqueued') throw new Error(`expected ${type} to be enqueued, got ${outcome.status}`);
  return outcome.task.id;
}

describe('runWorker', () => {
  it('runs at most `concurrency` tasks at once and returns once the queue is idle', async () => {
    const { config, queue } = await setup();
    const ids = [];
    for (let index = 0; index < 6; index += 1) ids.push(await enqueued(queue, 'test.hold', index));
    let runningNow = 0;
    let most = 0;
    const twoRunning = countdown(2);
    const release = Promise.withResolvers<void>();
    const handlers = new Map<string, TaskHandler>([
      [
        'test.hold',
        async ({ payload }) => {
          runningNow += 1;
          most = Math.max(most, runningNow);
          twoRunning.tick();
          await release.promise;
          runningNow -= 1;
          return payload;
        },
      ],
    ]);
    const { logger, records } = capturingLogger();
    const worker = runWorker({ config, logger, signal: new AbortController().signal, exitWhenIdle: true, handlers });
    await twoRunning.reached;
    // Both slots are taken: the worker has to leave the other four where they are.
    expect(await queue.stats()).toMatchObject({ active: 2, pending: 4 });
    release.resolve();
    await worker;
    expect(most).toBe(2);
    expect(await queue.stats()).toMatchObject({ pending: 0, active: 0, done: 6, failed: 0 });
    for (const [index, id] of ids.entries()) expect((await queue.get(id))?.task?.result).toBe(index);
    const finished = records.filter((record) => record.outcome === 'done');
    expect(finished).toHaveLength(6);
    expect(finished.every((record) => typeof record.durationMs === 'number')).toBe(true);
    expect(records.at(-2)?.msg).toBe('queue idle; exiting (--exit-when-idle)');
  });

  it('takes only the types `types` names, exact or by pattern, and leaves the others pending', async () => {
    const { config, queue } = await setup();
    const taken = [await enqueued(queue, 'test.gpu.classify'), await enqueued(queue, 'test.exact')];
    const left = [await enqueued(queue, 'test.gpu.collect', null), await enqueued(queue, 'other.classify')];
    const ran: string[] = [];
    const handler: TaskHandler = async ({ task }) => {
      ran.push(task.type);
      return null;
    };
    const handlers = new Map<string, TaskHandler>(
      ['test.gpu.classify', 'test.exact', 'test.gpu.collect', 'other.classify'].map((type) => [type, handler]),
    );
    const stop = new AbortController();
    const { logger } = capturingLogger();
    const worker = runWorker({
      config,
      logger,
      signal: stop.signal,
      handlers,
      types: ['test.*.classify', 'test.exact'],
    });
    await expect.poll(async () => (await queue.stats()).done, { timeout: 10_000 }).toBe(2);
    stop.abort();
    await worker;
    expect(ran.sort()).toEqual(['test.exact', 'test.gpu.classify']);
    for (const id of taken) expect((await queue.get(id))?.state).toBe('done');
    for (const id of left) expect((await queue.get(id))?.state).toBe('pending');
  });

  it('publishes its metrics snapshot with its id and memory as soon as it is ready', async () => {
    const { config, queue } = await setup();
    await enqueued(queue, 'test.hold');
    const started = Promise.withResolvers<void>();
    const release = Promise.withResolvers<void>();
    const handlers = new Map<string, TaskHandler>([
      [
        'test.hold',
        async () => {
          started.resolve();
          await release.promise;
          return null;
        },
      ],
    ]);
    const { logger } = capturingLogger();
    const worker = runWorker({ config, logger, signal: new AbortController().signal, exitWhenIdle: true, handlers });
    await started.promise;
    const [holder] = await queue.list({ state: 'active' });
    await expect
      .poll(async () => [...parseWorkerProcesses(await queue.workers.readMetrics()).keys()])
      .toEqual([holder?.worker]);
    const published = await queue.workers.readMetrics();
    const figures = parseWorkerProcesses(published).get(holder?.worker ?? '');
    expect(figures?.memory.rss_bytes).toBeGreaterThan(1_000_000);
    expect(figures?.memory.heap_used_bytes).toBeGreaterThan(0);
    // The same file is still a metrics snapshot for /metrics.
    expect(parseSnapshots(published)).toHaveLength(1);
    release.resolve();
    await worker;
  });

  it('frees a slot when its handler returns: the next handler runs while the outcome is written', async () => {
    const { config, queue } = await setup();
    for (let index = 0; index < 3; index += 1) await enqueued(queue, 'test.quick', index);
    const started: number[] = [];
    let runningNow = 0;
    let most = 0;
    const secondStarted = countdown(1);
    const handlers = new Map<string, TaskHandler>([
      [
        'test.quick',
        async ({ payload }) => {
          runningNow += 1;
          most = Math.max(most, runningNow);
          started.push(Number(payload));
          if (started.length === 2) secondStarted.tick();
          // A turn of the event loop, so that a handler started beside this one would be counted.
          await new Promise((resolve) => setImmediate(resolve));
          runningNow -= 1;
          return payload;
        },
      ],
    ]);
    // The first outcome's write is held open until the second handler has started; were the slot kept through
    // the write, it never would, and the bounded wait below fails with what it waited for.
    const firstWrite = Promise.withResolvers<void>();
    let completes = 0;
    let startedWhileFirstWriteHeld: number | undefined;
    const wrapConsumer = (consumer: TaskConsumer): TaskConsumer =>
      new Proxy(consumer, {
        get(target, property) {
          if (property === 'complete') {
            return async (claimed: ClaimedTask, result: unknown) => {
              completes += 1;
              if (completes === 1) {
                await Promise.race([
                  secondStarted.reached,
                  new Promise((_resolve, reject) =>
                    setTimeout(
                      () => reject(new Error('the second handler did not start while the first outcome was written')),
                      5_000,
                    ),
                  ),
                ]);
                startedWhileFirstWriteHeld = started.length;
                firstWrite.resolve();
              }
              return target.complete(claimed, result);
            };
          }
          const value = Reflect.get(target, property, target);
          return typeof value === 'function' ? value.bind(target) : value;
        },
      });
    const { logger } = capturingLogger();
    await runWorker({
      config,
      logger,
      signal: new AbortController().signal,
      exitWhenIdle: true,
      handlers,
      concurrency: 1,
      wrapConsumer,
    });
    await firstWrite.promise;
    expect(most).toBe(1);
    // The second handler ran while the first write was held.
    expect(startedWhileFirstWriteHeld).toBe(2);
    expect(await queue.stats()).toMatchObject({ pending: 0, active: 0, done: 3, failed: 0 });
  });

  it("recovers for queue housekeeping through its own consumer, which leaves the worker's running tasks alone", async () => {
    await writeFile(path.join(dir, 'config.yaml'), 'data_dir: ./data\nworker: {poll_interval: 50ms}\n');
    const { config, registry, queue } = await loadTestRuntime(dir);
    const housekeeping = await enqueued(queue, 'system.housekeeping.run');
    // The queue's own recovery counts a task as a dead worker's once its worker's heartbeat is late (on Redis, after
    // every outage), the housekeeping task itself among them; the consumer's leaves alone the tasks it holds.
    let recoveries = 0;
    const wrapConsumer = (consumer: TaskConsumer): TaskConsumer =>
      new Proxy(consumer, {
        get(target, property) {
          if (property === 'recover') {
            return () => {
              recoveries += 1;
              return target.recover();
            };
          }
          const value = Reflect.get(target, property, target);
          return typeof value === 'function' ? value.bind(target) : value;
        },
      });
    await runWorker({
      config,
      registry,
      logger: pino({ level: 'silent' }),
      signal: new AbortController().signal,
      exitWhenIdle: true,
      wrapConsumer,
    });
    expect((await queue.get(housekeeping))?.state).toBe('done');
    // Once, by the housekeeping handler: the consumer's own timers sweep through it directly, not through the wrapper.
    expect(recoveries).toBe(1);
  });

  it('withdraws the tool-call requests of a task whose worker died, before the task runs again', async () => {
    const { config, queue } = await setup();
    // The task as recovery leaves it when its worker died: back in pending, the lost attempt in its history.
    const scratch = await openFileTaskQueue({ directory: path.join(dir, 'scratch-queue') });
    const original = (await scratch.get(await enqueued(scratch, 'test.quick', 'again')))?.task;
    if (!original) throw new Error('no task');
    const startedAt = new Date(Date.now() - 60_000).toISOString();
    const diedIn: Task = {
      ...original,
      attempts: 1,
      history: [
        {
          attempt: 1,
          startedAt,
          finishedAt: new Date().toISOString(),
          error: { type: 'WorkerDied', message: 'worker died' },
        },
      ],
    };
    expect(await queue.importTask(diedIn, 'pending')).toBe('imported');
    // Its loop's call waited for the owner, and another task's call waits too.
    const notes = new FileNoteStore({ root: config.paths.notes });
    const gateOf = (taskId: string) =>
      createToolCallGate({
        notes,
        policy: { allow: [], deny: [], approve: [] },
        approvalTimeoutMs: 3_600_000,
        task: { id: taskId },
        instance: { name: 'system', domain: 'system' },
        item: `transcripts/${taskId}.md`,
        pollIntervalMs: 20,
      });
    const stopOther = new AbortController();
    const call = (signal: AbortSignal) => ({
      tool: { name: 'fs__write', tier: 'irreversible' as const },
      input: { path: '/x' },
      call: { id: 'call_1' },
      signal,
      handle: { lineage: ['system.agent'] },
      waiting: () => {},
    });
    // Standing in for the dead attempt's loop, which would never read its request again.
    const orphaned = gateOf(diedIn.id)(call(new AbortController().signal));
    const otherTask = gateOf('01othertask0000000000000000')(call(stopOther.signal));
    await expect.poll(async () => (await listApprovals(notes, { status: 'pending' })).length).toBe(2);

    await runWorker({
      config,
      logger: pino({ level: 'silent' }),
      signal: new AbortController().signal,
      exitWhenIdle: true,
      handlers: new Map<string, TaskHandler>([['test.quick', async ({ payload }) => payload]]),
    });
    expect((await queue.get(diedIn.id))?.state).toBe('done');
    expect(await orphaned).toMatchObject({ run: false, reason: expect.stringContaining('was withdrawn') });
    const pending = await listApprovals(notes, { status: 'pending' });
    expect(pending.map((request) => request.tool_call?.task)).toEqual(['01othertask0000000000000000']);
    const log = await readFile(path.join(config.paths.logs, (await readdir(config.paths.logs))[0] ?? ''), 'utf8');
    expect(log).toMatch(/withdrew call fs__write .* no loop waits for it any more/);
    expect(log).toContain(`the worker running task ${diedIn.id} died before a decision`);
    stopOther.abort(new Error('the test is over'));
    await expect(otherTask).rejects.toThrow('the test is over');
  });

  it('fails unknown types and non-JSON results for good, and retries a plain error', async () => {
    const { config, queue } = await setup();
    const unknown = await enqueued(queue, 'test.unknown');
    const notJson = await enqueued(queue, 'test.not_json');
    const flaky = await enqueued(queue, 'test.flaky');
    const handlers = new Map<string, TaskHandler>([
      ['test.not_json', async () => Number.NaN],
      [
        'test.flaky',
        async () => {
          throw new Error('the API said 503');
        },
      ],
    ]);
    const { logger, records } = capturingLogger();
    await runWorker({ config, logger, signal: new AbortController().signal, exitWhenIdle: true, handlers });
    expect(await queue.get(unknown)).toMatchObject({
      state: 'failed',
      task: { error: { type: 'UnrecoverableError', message: 'no handler for task type test.unknown' } },
    });
    expect(await queue.get(notJson)).toMatchObject({
      state: 'failed',
      task: { error: { message: expect.stringMatching(/^the handler returned a result that is not plain JSON/) } },
    });
    // Retried after the backoff: pending again, but not ready yet, so the worker was idle and returned.
    expect(await queue.get(flaky)).toMatchObject({ state: 'pending', task: { attempts: 1 } });
    expect(records.find((record) => record.outcome === 'retrying')?.msg).toMatch(
      new RegExp(`^task ${flaky} \\(test\\.flaky\\) failed in \\d+ms, will retry: the API said 503$`),
    );
  });

  it("ends a task at its type's timeout even when the handler ignores the signal", async () => {
    const { config, queue } = await setup(
      'queue:\n  policies:\n    overrides:\n      test.hang: {timeout: 50ms, max_attempts: 1}\n      test.slow: {timeout: 30d}\n',
    );
    const hang = await enqueued(queue, 'test.hang');
    const slow = await enqueued(queue, 'test.slow');
    const handlers = new Map<string, TaskHandler>([
      ['test.hang', () => new Promise(() => {})],
      // A timeout longer than a timer can hold must not end the task at once (Node turns it into 1 ms).
      ['test.slow', () => new Promise((resolve) => setTimeout(() => resolve('slow but fine'), 20))],
    ]);
    const { logger } = capturingLogger();
    await runWorker({ config, logger, signal: new AbortController().signal, exitWhenIdle: true, handlers });
    expect(await queue.get(hang)).toMatchObject({
      state: 'failed',
      task: { attempts: 1, error: { type: 'TaskTimeoutError', message: 'timed out after 50ms' } },
    });
    expect(await queue.get(slow)).toMatchObject({ state: 'done', task: { result: 'slow but fine' } });
  });

  it('lets running tasks finish within the grace period and returns the rest to pending/ uncounted', async () => {
    const { config, queue } = await setup();
    const hang = await enqueued(queue, 'test.hang');
    const finish = await enqueued(queue, 'test.finish');
    const shutdown = new AbortController();
    const bothStarted = countdown(2);
    const handlers = new Map<string, TaskHandler>([
      [
        'test.hang',
        () => {
          bothStarted.tick();
          return new Promise(() => {});
        },
      ],
      [
        'test.finish',
        async () => {
          bothStarted.tick();
          // Finishes only once the worker is stopping: inside the grace period, so it must complete normally.
          await new Promise((resolve) => shutdown.signal.addEventListener('abort', resolve, { once: true }));
          return 'finished';
        },
      ],
    ]);
    const { logger, records } = capturingLogger();
    const worker = runWorker({ config, logger, signal: shutdown.signal, handlers });
    await bothStarted.reached;
    shutdown.abort('SIGTERM');
    await worker;
    expect(await queue.get(finish)).toMatchObject({ state: 'done', task: { result: 'finished', attempts: 1 } });
    expect(await queue.get(hang)).toMatchObject({ state: 'pending', task: { attempts: 0 } });
    expect(await readdir(path.join(config.paths.queue, 'active'))).toEqual([]);
    // The worker's heartbeat file goes with it, so nobody waits for its lease to run out.
    expect(await readdir(path.join(config.paths.queue, 'workers'))).toEqual([]);
    expect(records.find((record) => record.outcome === 'released')?.msg).toMatch(
      /\(test\.hang\) stopped by shutdown; back in pending\/ after \d+ms$/,
    );
  });

  it('retries a task whose handler module does not load, imports it again once fixed, and fails a missing export at once', async () => {
    const integration = path.join(dir, 'custom', 'flaky');
    await mkdir(path.join(integration, 'src'), { recursive: true });
    await writeFile(
      path.join(integration, 'manifest.yaml'),
      [
        'domain: flaky',
        'tasks:',
        '  broken: {handler: ./src/broken.ts#run}',
        '  unnamed: {handler: ./src/ok.ts#missing}',
        '  ok: {handler: ./src/ok.ts#run}',
        '',
      ].join('\n'),
    );
    await writeFile(path.join(integration, 'src', 'broken.ts'), 'export async function run( {\n');
    await writeFile(path.join(integration, 'src', 'ok.ts'), 'export async function run() { return "ok"; }\n');
    await writeFile(
      path.join(dir, 'config.yaml'),
      [
        'data_dir: ./data',
        'worker: {poll_interval: 50ms}',
        'integration_dirs: [./custom]',
        'integrations:',
        '  - {type: flaky, name: f}',
        'queue:',
        '  policies:',
        '    defaults: {max_attempts: 2, backoff: {type: fixed, delay: 100ms}}',
        '',
      ].join('\n'),
    );
    const { config, registry, queue } = await loadTestRuntime(dir);
    const enqueue = async (type: string) => {
      const outcome = await queue.enqueue({ type, source: 'cli', integration: 'f' });
      if (outcome.status !== 'enqueued') throw new Error(`${type} was not enqueued`);
      return outcome.task.id;
    };
    const broken = await enqueue('flaky.broken');
    const unnamed = await enqueue('flaky.unnamed');
    const ok = await enqueue('flaky.ok');
    const run = () =>
      runWorker({
        config,
        registry,
        logger: pino({ level: 'silent' }),
        signal: new AbortController().signal,
        exitWhenIdle: true,
      });
    // The retry waits for its backoff, and an idle worker exits meanwhile: run it until the task is settled.
    const deadline = Date.now() + 10_000;
    await run();
    while ((await queue.get(broken))?.state === 'pending') {
      if (Date.now() > deadline) throw new Error('flaky.broken was still pending after 10 s of worker runs');
      await new Promise((resolve) => setTimeout(resolve, 50));
      await run();
    }
    // The module that does not load was tried on each attempt; the missing export failed on its first.
    const brokenRecord = await queue.get(broken);
    expect(brokenRecord).toMatchObject({ state: 'failed', task: { attempts: 2 } });
    expect(brokenRecord?.task?.error?.message).toMatch(
      /flaky\.broken cannot be loaded: .*manifest\.yaml:3.*cannot be loaded/s,
    );
    const unnamedRecord = await queue.get(unnamed);
    expect(unnamedRecord).toMatchObject({ state: 'failed', task: { attempts: 1 } });
    expect(unnamedRecord?.task?.error?.message).toMatch(/exports no `missing`/);
    expect(await queue.get(ok)).toMatchObject({ state: 'done', task: { result: 'ok' } });
    // Fixed while the same registry lives on (a worker that keeps running): the retried task loads it and runs.
    await writeFile(path.join(integration, 'src', 'broken.ts'), 'export async function run() { return "fixed"; }\n');
    await queue.retry(broken);
    await run();
    expect(await queue.get(broken)).toMatchObject({ state: 'done', task: { result: 'fixed' } });
  });

  it("ends a task at its timeout while its handler module's top-level code never settles", async () => {
    const { config, queue } = await setup(
      'queue:\n  policies:\n    defaults: {max_attempts: 1}\n    overrides:\n      test.stuck: {timeout: 200ms}\n',
    );
    const id = await enqueued(queue, 'test.stuck');
    const never = new Promise<TaskHandler>(() => {});
    const { logger } = capturingLogger();
    await runWorker({
      config,
      logger,
      signal: new AbortController().signal,
      exitWhenIdle: true,
      handlers: { get: () => never },
    });
    expect(await queue.get(id)).toMatchObject({ state: 'failed', task: { error: { type: 'TaskTimeoutError' } } });
  });

  it('fails a task whose handler throws something that is not an Error, with what it threw', async () => {
    const { config, queue } = await setup('queue:\n  policies:\n    defaults:\n      max_attempts: 1\n');
    const text = await enqueued(queue, 'test.throws_text');
    const object = await enqueued(queue, 'test.throws_object');
    const sync = await enqueued(queue, 'test.throws_sync');
    const handlers = new Map<string, TaskHandler>([
      [
        'test.throws_text',
        async () => {
          throw 'plain text';
        },
      ],
      [
        'test.throws_object',
        async () => {
          throw { code: 42 };
        },
      ],
      [
        'test.throws_sync',
        (() => {
          throw new TypeError('thrown before any promise');
        }) as unknown as TaskHandler,
      ],
    ]);
    const { logger } = capturingLogger();
    await runWorker({ config, logger, signal: new AbortController().signal, exitWhenIdle: true, handlers });
    expect(await queue.get(text)).toMatchObject({ state: 'failed', task: { error: { message: 'plain text' } } });
    expect(await queue.get(object)).toMatchObject({
      state: 'failed',
      task: { error: { message: 'non-Error thrown: {"code":42}' } },
    });
    expect(await queue.get(sync)).toMatchObject({
      state: 'failed',
      task: { error: { type: 'TypeError', message: 'thrown before any promise' } },
    });
  });

  it('opens the circuit breaker of a task type after consecutive failures and tells the human log', async () => {
    const { config, queue } = await setup(
      'queue:\n  policies:\n    defaults:\n      max_attempts: 1\ncircuit_breaker:\n  failures: 3\n  pause: 5m\n',
    );
    for (let index = 0; index < 3; index += 1) await enqueued(queue, 'test.broken', index);
    const handlers = new Map<string, TaskHandler>([
      [
        'test.broken',
        async () => {
          throw new Error('the API is down');
        },
      ],
    ]);
    const { logger } = capturingLogger();
    await runWorker({ config, logger, signal: new AbortController().signal, exitWhenIdle: true, handlers });
    const breakers = new CircuitBreakers({
      notes: new FileNoteStore({ root: config.paths.notes }),
      settings: config.circuitBreaker,
    });
    expect(await breakers.list()).toEqual([
      expect.objectContaining({
        taskType: 'test.broken',
        state: 'open',
        consecutiveFailures: 3,
        lastError: 'the API is down',
      }),
    ]);
    const log = await readFile(path.join(config.paths.logs, (await readdir(config.paths.logs))[0] ?? ''), 'utf8');
    expect(log).toMatch(/paused test\.broken for 5m after 3 consecutive failures/);
  });

  it('publishes its open breakers with its metrics, for a server that does not share its data directory', async () => {
    const { config, queue } = await setup(
      'queue:\n  policies:\n    defaults:\n      max_attempts: 1\ncircuit_breaker:\n  failures: 3\n  pause: 5m\n',
    );
    for (let index = 0; index < 3; index += 1) await enqueued(queue, 'test.broken', index);
    const observe = await queue.enqueue({ type: 'test.observe', source: 'cli', priority: 9 });
    const handlers = new Map<string, TaskHandler>([
      [
        'test.broken',
        async () => {
          throw new Error('the API is down');
        },
      ],
      [
        // Runs while the worker does: what it has published by then, as the server reads it.
        'test.observe',
        async () => {
          // Bounded: a worker that never publishes it fails the task, and the test with it.
          for (const deadline = Date.now() + 20_000; Date.now() < deadline; ) {
            for (const snapshot of await queue.workers.readMetrics()) {
              const breakers = (snapshot as { breakers?: JsonValue[] }).breakers ?? [];
              if (breakers.length > 0) return { worker: (snapshot as { worker: string }).worker, breakers };
            }
            await new Promise((resolve) => setTimeout(resolve, 50));
          }
          throw new Error('the worker did not publish its open breaker');
        },
      ],
    ]);
    const { logger } = capturingLogger();
    await runWorker({ config, logger, signal: new AbortController().signal, exitWhenIdle: true, handlers });
    const record = await queue.get(observe.status === 'enqueued' ? observe.task.id : '');
    expect(record?.state).toBe('done');
    expect(record?.task?.result).toEqual({
      worker: expect.any(String),
      breakers: [
        {
          taskType: 'test.broken',
          state: 'open',
          consecutiveFailures: 3,
          retryAt: expect.any(String),
          lastError: 'the API is down',
        },
      ],
    });
  });

  it('runs manifest handlers with their instance settings, platform config and stage enqueues', async () => {
    await writeFile(
      path.join(dir, 'config.yaml'),
      `data_dir: ./data\nworker:\n  poll_interval: 50ms\nintegration_dirs: [${JSON.stringify(greeterFolder)}]\nintegrations:\n  - type: greeter\n    name: friendly\n    greeting: Hi\n    platforms:\n      people:\n        names: [Ada, Grace]\n`,
    );
    const { config, registry, queue } = await loadTestRuntime(dir);
    const check = await queue.enqueue({ type: 'greeter.people.check', source: 'cli', integration: 'friendly' });
    const { logger } = capturingLogger();
    await runWorker({ config, registry, logger, signal: new AbortController().signal, exitWhenIdle: true });
    expect(await queue.get(check.status === 'enqueued' ? check.task.id : '')).toMatchObject({
      state: 'done',
      task: { result: { instance: 'friendly', enqueued: ['enqueued', 'enqueued'] } },
    });
    const done = await queue.list({ state: 'done', type: 'greeter.people.greet' });
    const results = await Promise.all(done.map(async (entry) => (await queue.get(entry.name?.id ?? ''))?.task));
    const rows = results.map((task) => [task?.priority, task?.integration, task?.source, task?.result]);
    expect(rows.sort((left, right) => JSON.stringify(left).localeCompare(JSON.stringify(right)))).toEqual([
      [6, 'friendly', 'automation', { text: 'Hi, Ada!' }],
      [6, 'friendly', 'automation', { text: 'Hi, Grace!' }],
    ]);
    const log = await readFile(path.join(config.paths.logs, (await readdir(config.paths.logs))[0] ?? ''), 'utf8');
    expect(log).toMatch(/\*\*friendly\/people\*\* greeted Ada/);
  });
});
