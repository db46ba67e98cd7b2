/**
 * The behaviour every queue backend must have, as one vitest suite: `describeTaskQueueContract(name, backend)`.
 * It speaks only the interfaces (TaskQueue, TaskConsumer, TaskEvents, WorkerDirectory) and never looks at the
 * backend's storage, so a second backend proves itself by passing it. Run it from a test file:
 *
 *   describeTaskQueueContract('file backend', async () => { ...; return { open, cleanup }; });
 */
import { AssistantError } from '@assistant/errors';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { ClaimedTask, QueueSettings, TaskConsumer, TaskEvent, TaskQueue, TaskRecord } from '../interfaces.ts';
import type { QueueConfig } from '../queue-config.ts';
import { DelayedError, UnrecoverableError } from '../task-errors.ts';
import type { Task } from '../task-file.ts';

/** What the suite may tune; everything else is the backend's default. */
export interface ContractQueueOptions {
  settings?: QueueSettings;
  /** How long a worker's heartbeat holds. */
  leaseMs?: number;
}

export interface ContractBackend {
  /**
   * Opens a queue on this backend's store. Every call is another instance on the same store, as another process
   * would open it: what one instance does, the others see.
   */
  open(options?: ContractQueueOptions): Promise<TaskQueue>;
  /** Removes the store. */
  cleanup(): Promise<void>;
}

/** How long the suite waits for anything asynchronous (a notification, a watcher) before it fails, naming it. */
const waitLimitMs = 10_000;

async function waitFor<T>(what: string, probe: () => Promise<T | undefined> | T | undefined): Promise<T> {
  const deadline = Date.now() + waitLimitMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`waited ${waitLimitMs} ms for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** Claims the next task, waiting for the consumer to learn of it; fails naming what it waited for. */
async function claimNext(consumer: TaskConsumer, what = 'a task to claim'): Promise<ClaimedTask> {
  const deadline = Date.now() + waitLimitMs;
  for (;;) {
    const claimed = await consumer.claim();
    if (claimed) return claimed;
    if (Date.now() > deadline) throw new Error(`waited ${waitLimitMs} ms for ${what}`);
    await consumer.waitForWork({ timeoutMs: 100 });
  }
}

function policies(overrides: QueueConfig['policies']['overrides'] = {}): QueueConfig['policies'] {
  return {
    defaults: {
      dedup: true,
      rateLimit: null,
      maxAttempts: 3,
      backoff: { type: 'fixed', delayMs: 0, maxMs: 0 },
      timeoutMs: 60_000,
    },
    overrides,
  };
}

function taskOf(record: TaskRecord): Task {
  if (!record.task) throw new Error(`expected a readable task at ${record.location}`);
  return record.task;
}

function enqueuedId(outcome: Awaited<ReturnType<TaskQueue['enqueue']>>): string {
  if (outcome.status !== 'enqueued') throw new Error(`expected the task to be enqueued, got ${outcome.status}`);
  return outcome.task.id;
}

export function describeTaskQueueContract(name: string, createBackend: () => Promise<ContractBackend>): void {
  describe(`TaskQueue contract: ${name}`, () => {
    let backend: ContractBackend;
    const closers: (() => Promise<void>)[] = [];

    beforeEach(async () => {
      backend = await createBackend();
    });
    afterEach(async () => {
      for (const close of closers.splice(0).reverse()) await close();
      await backend.cleanup();
    });

    async function open(options: ContractQueueOptions = {}): Promise<TaskQueue> {
      const queue = await backend.open({ ...options, settings: { policies: policies(), ...options.settings } });
      closers.push(() => queue.close());
      return queue;
    }

    function consumerOf(queue: TaskQueue): TaskConsumer {
      const consumer = queue.consumer({ pollIntervalMs: 50 });
      closers.push(() => consumer.close());
      return consumer;
    }

    it('enqueues and reads a task back by id, with its location, in list and stats', async () => {
      const queue = await open();
      const outcome = await queue.enqueue({ type: 'contract.echo', payload: { n: 1 }, priority: 3 });
      const id = enqueuedId(outcome);
      expect(outcome).toMatchObject({ task: { id, type: 'contract.echo', payload: { n: 1 }, priority: 3 } });
      if (outcome.status === 'enqueued') expect(outcome.location).not.toMatch(/^\//);
      const record = await queue.get(id);
      expect(record).toMatchObject({ state: 'pending', task: { id, attempts: 0, payload: { n: 1 } } });
      expect(record?.location).toBe(outcome.status === 'enqueued' ? outcome.location : '');
      expect(await queue.get('00000000000000000000000000')).toBeUndefined();
      const listed = await queue.list();
      expect(listed.map((entry) => entry.name?.id)).toEqual([id]);
      expect(await queue.list({ type: 'contract.*' })).toHaveLength(1);
      expect(await queue.list({ type: 'other.*' })).toHaveLength(0);
      expect(await queue.list({ state: 'done' })).toHaveLength(0);
      const stats = await queue.stats();
      expect(stats).toMatchObject({ pending: 1, ready: 1, scheduled: 0, active: 0, done: 0, failed: 0 });
      expect(stats.byType['contract.echo']).toEqual({ pending: 1, active: 0 });
      expect(await queue.isIdle()).toBe(false);
    });

    it('refuses bad input with a clear error', async () => {
      const queue = await open();
      await expect(queue.enqueue({ type: 'Not A Type' })).rejects.toThrow(/task type/);
      await expect(queue.enqueue({ type: 'a.b', priority: 12 })).rejects.toThrow(/priority/);
      await expect(queue.retry('00000000000000000000000000')).rejects.toMatchObject({ code: 'NOT_FOUND' });
    });

    it('applies dedup and rate limits to policed enqueues only; a duplicate names the existing task id', async () => {
      const queue = await open({
        settings: {
          policies: policies({ 'contract.limited': { dedup: false, rateLimit: { max: 2, perMs: 60_000 } } }),
        },
      });
      const first = enqueuedId(
        await queue.enqueue({ type: 'contract.dedup', payload: { a: 1, b: 2 }, source: 'scheduler' }),
      );
      const again = await queue.enqueue({ type: 'contract.dedup', payload: { b: 2, a: 1 }, source: 'automation' });
      expect(again).toMatchObject({ status: 'duplicate', existing: first });
      // A second instance (another process) sees the same task.
      const other = await open();
      expect(
        await other.enqueue({ type: 'contract.dedup', payload: { a: 1, b: 2 }, source: 'scheduler' }),
      ).toMatchObject({
        status: 'duplicate',
        existing: first,
      });
      // Manual enqueues bypass the policies.
      expect((await queue.enqueue({ type: 'contract.dedup', payload: { a: 1, b: 2 }, source: 'cli' })).status).toBe(
        'enqueued',
      );
      for (let index = 0; index < 2; index += 1) {
        enqueuedId(await queue.enqueue({ type: 'contract.limited', payload: index, source: 'scheduler' }));
      }
      const limited = await queue.enqueue({ type: 'contract.limited', payload: 9, source: 'scheduler' });
      expect(limited).toMatchObject({ status: 'rate_limited' });
      if (limited.status === 'rate_limited') expect(limited.retryAtMs).toBeGreaterThan(Date.now());
    });

    it('counts a manual enqueue and a task retried by hand as pending duplicates for policed enqueues', async () => {
      const queue = await open();
      const consumer = consumerOf(queue);
      await consumer.start();
      const manual = enqueuedId(await queue.enqueue({ type: 'contract.manual', payload: { n: 1 }, source: 'api' }));
      expect(await queue.enqueue({ type: 'contract.manual', payload: { n: 1 }, source: 'scheduler' })).toMatchObject({
        status: 'duplicate',
        existing: manual,
      });
      await consumer.fail(await claimNext(consumer), new UnrecoverableError('failed for good'));
      // Failed: no longer pending, so a scheduled enqueue goes in; it runs and finishes.
      const scheduled = enqueuedId(
        await queue.enqueue({ type: 'contract.manual', payload: { n: 1 }, source: 'scheduler' }),
      );
      await consumer.complete(await claimNext(consumer), null);
      expect((await queue.get(scheduled))?.state).toBe('done');
      await queue.retry(manual);
      expect(await queue.enqueue({ type: 'contract.manual', payload: { n: 1 }, source: 'scheduler' })).toMatchObject({
        status: 'duplicate',
        existing: manual,
      });
    });

    it('still counts an identical manual task as a duplicate once the one before it finished', async () => {
      const queue = await open();
      const consumer = consumerOf(queue);
      await consumer.start();
      const first = enqueuedId(await queue.enqueue({ type: 'contract.twice', payload: { n: 1 }, source: 'api' }));
      const second = enqueuedId(await queue.enqueue({ type: 'contract.twice', payload: { n: 1 }, source: 'cli' }));
      const claimed = await claimNext(consumer);
      expect(claimed.id).toBe(first);
      await consumer.complete(claimed, null);
      // The second is still pending: a scheduled enqueue of the same task is its duplicate.
      expect(await queue.enqueue({ type: 'contract.twice', payload: { n: 1 }, source: 'scheduler' })).toMatchObject({
        status: 'duplicate',
        existing: second,
      });
      const again = await claimNext(consumer);
      expect(again.id).toBe(second);
      await consumer.fail(again, new UnrecoverableError('failed for good'));
      expect((await queue.enqueue({ type: 'contract.twice', payload: { n: 1 }, source: 'scheduler' })).status).toBe(
        'enqueued',
      );
    });

    it('no longer counts a finished task as a duplicate', async () => {
      const queue = await open();
      const consumer = consumerOf(queue);
      const id = enqueuedId(await queue.enqueue({ type: 'contract.once', payload: 1, source: 'scheduler' }));
      await consumer.start();
      const claimed = await claimNext(consumer);
      expect(claimed.id).toBe(id);
      expect(await queue.enqueue({ type: 'contract.once', payload: 1, source: 'scheduler' })).toMatchObject({
        status: 'duplicate',
        existing: id,
      });
      await consumer.complete(claimed, null);
      expect((await queue.enqueue({ type: 'contract.once', payload: 1, source: 'scheduler' })).status).toBe('enqueued');
    });

    it('claims in run order: priority, then ready time; a task not ready yet waits', async () => {
      const queue = await open();
      const now = Date.now();
      const later = enqueuedId(
        await queue.enqueue({ type: 'contract.later', priority: 0, readyAtMs: now + 3_600_000 }),
      );
      const low = enqueuedId(await queue.enqueue({ type: 'contract.low', priority: 7 }));
      const second = enqueuedId(await queue.enqueue({ type: 'contract.high', priority: 2, readyAtMs: now - 1_000 }));
      const first = enqueuedId(await queue.enqueue({ type: 'contract.high', priority: 2, readyAtMs: now - 2_000 }));
      // All enqueued before the consumer starts: what is tested is the order it guarantees among tasks it knows.
      const consumer = consumerOf(queue);
      await consumer.start();
      const order: string[] = [];
      for (let index = 0; index < 3; index += 1) {
        const claimed = await claimNext(consumer);
        order.push(claimed.id);
        expect(claimed.task).toMatchObject({ attempts: 1 });
        expect(claimed.task.worker?.id).toBe(consumer.owner.id);
        await consumer.complete(claimed, { ok: true });
      }
      expect(order).toEqual([first, second, low]);
      expect(await consumer.claim()).toBeUndefined();
      expect(await queue.isIdle()).toBe(true);
      expect(await queue.stats()).toMatchObject({ pending: 1, scheduled: 1, ready: 0, done: 3 });
      expect((await queue.get(later))?.state).toBe('pending');
      expect((await queue.list({ state: 'pending' })).map((entry) => entry.name?.id)).toEqual([later]);
    });

    it('claims only the types a claim accepts, in run order among them, and leaves the others for later', async () => {
      const queue = await open();
      const now = Date.now();
      const first = enqueuedId(await queue.enqueue({ type: 'contract.io', priority: 2, readyAtMs: now - 3_000 }));
      const model = enqueuedId(await queue.enqueue({ type: 'contract.model', priority: 6, readyAtMs: now - 2_000 }));
      const second = enqueuedId(await queue.enqueue({ type: 'contract.io', priority: 7, readyAtMs: now - 4_000 }));
      const other = enqueuedId(await queue.enqueue({ type: 'contract.other', priority: 6, readyAtMs: now - 1_000 }));
      const consumer = consumerOf(queue);
      await consumer.start();
      await waitFor('the consumer to know of all four tasks', () =>
        consumer.pendingCount('contract.io') === 2 &&
        consumer.pendingCount('contract.model') === 1 &&
        consumer.pendingCount('contract.other') === 1
          ? true
          : undefined,
      );
      expect(consumer.pendingCount('contract.none')).toBe(0);
      const notModel = (type: string) => type !== 'contract.model';
      const order: string[] = [];
      for (let index = 0; index < 3; index += 1) {
        const claimed = await consumer.claim({ accept: notModel });
        if (!claimed) throw new Error(`expected a task to claim, claim ${index + 1} of 3`);
        order.push(claimed.id);
        await consumer.complete(claimed, null);
      }
      // Priority first whatever the type; the model task's earlier ready time does not let it pass the filter.
      expect(order).toEqual([first, other, second]);
      expect(await consumer.claim({ accept: notModel })).toBeUndefined();
      expect(await consumer.claim({ accept: () => false })).toBeUndefined();
      expect(consumer.pendingCount('contract.io')).toBe(0);
      expect(consumer.pendingCount('contract.model')).toBe(1);
      const claimed = await consumer.claim();
      expect(claimed?.id).toBe(model);
      expect(consumer.pendingCount('contract.model')).toBe(0);
      if (claimed) await consumer.complete(claimed, null);
      expect(await queue.stats()).toMatchObject({ pending: 0, active: 0, done: 4 });
    });

    it('waits only for the types it accepts: a ready task of another type does not end the wait at once', async () => {
      const queue = await open();
      enqueuedId(await queue.enqueue({ type: 'contract.held' }));
      const consumer = consumerOf(queue);
      await consumer.start();
      await waitFor('the consumer to know of the task', () =>
        consumer.pendingCount('contract.held') === 1 ? true : undefined,
      );
      const accept = (type: string) => type !== 'contract.held';
      // The wait ends by its timeout (or a spurious wake); what matters is that the held task is never claimed.
      await consumer.waitForWork({ accept, timeoutMs: 50 });
      expect(await consumer.claim({ accept })).toBeUndefined();
      const wanted = enqueuedId(await queue.enqueue({ type: 'contract.wanted' }));
      const claimed = await waitFor('the accepted task to be claimable', async () => {
        const next = await consumer.claim({ accept });
        if (next === undefined) await consumer.waitForWork({ accept, timeoutMs: 100 });
        return next;
      });
      expect(claimed.id).toBe(wanted);
      await consumer.complete(claimed, null);
      expect(consumer.pendingCount('contract.held')).toBe(1);
    });

    it('completes a task with its result, and fails a result that cannot be kept', async () => {
      const queue = await open();
      const consumer = consumerOf(queue);
      const id = enqueuedId(await queue.enqueue({ type: 'contract.done' }));
      const bad = enqueuedId(await queue.enqueue({ type: 'contract.bad' }));
      await consumer.start();
      const claimed = await claimNext(consumer);
      expect(claimed.id).toBe(id);
      expect((await queue.get(id))?.state).toBe('active');
      expect(await queue.stats()).toMatchObject({ active: 1 });
      expect(await consumer.complete(claimed, { answer: 42 })).toEqual({
        state: 'done',
        result: { answer: 42 },
        recorded: true,
      });
      expect(await queue.get(id)).toMatchObject({ state: 'done', task: { result: { answer: 42 }, attempts: 1 } });
      expect(await queue.reroute(id)).toMatchObject({ id, result: { answer: 42 } });
      const badClaim = await claimNext(consumer);
      expect(badClaim.id).toBe(bad);
      const outcome = await consumer.complete(badClaim, { fn: () => 1 });
      expect(outcome.state).toBe('failed');
      expect(await queue.get(bad)).toMatchObject({ state: 'failed' });
      await expect(queue.reroute(bad)).rejects.toMatchObject({ code: 'CONFLICT' });
    });

    it('lists who holds an active task, when finished ones finished, and only those finished since a time', async () => {
      const queue = await open();
      const consumer = consumerOf(queue);
      const first = enqueuedId(await queue.enqueue({ type: 'contract.first' }));
      const second = enqueuedId(await queue.enqueue({ type: 'contract.second' }));
      await consumer.start();
      const claimed = await claimNext(consumer);
      expect(claimed.id).toBe(first);
      const [active] = await queue.list({ state: 'active' });
      expect(active).toMatchObject({ state: 'active', worker: consumer.owner.id });
      expect(active?.finishedAtMs).toBeUndefined();
      const before = Date.now();
      await consumer.complete(claimed, null);
      const [done] = await queue.list({ state: 'done' });
      expect(done?.name?.id).toBe(first);
      expect(done?.worker).toBeUndefined();
      // A file system's clock may be coarser than Date.now(): a second either way is the same minute for any chart.
      expect(done?.finishedAtMs).toBeGreaterThanOrEqual(before - 1_000);
      expect(done?.finishedAtMs).toBeLessThanOrEqual(Date.now() + 1_000);
      const recent = await queue.list({ finishedSinceMs: before - 1_000 });
      expect(recent.map((entry) => entry.name?.id)).toEqual([first]);
      expect(await queue.list({ finishedSinceMs: Date.now() + 60_000 })).toEqual([]);
      expect((await queue.list({ state: 'pending' })).map((entry) => entry.name?.id)).toEqual([second]);
    });

    it('retries after the backoff, keeps each attempt in the history, fails when attempts are spent, and retry(id) starts again', async () => {
      const queue = await open({
        settings: {
          policies: policies({
            'contract.flaky': { maxAttempts: 2, backoff: { type: 'fixed', delayMs: 0, maxMs: 0 } },
            'contract.slow': { backoff: { type: 'fixed', delayMs: 3_600_000, maxMs: 3_600_000 } },
          }),
        },
      });
      const consumer = consumerOf(queue);
      const id = enqueuedId(await queue.enqueue({ type: 'contract.flaky' }));
      await consumer.start();
      const firstTry = await claimNext(consumer);
      expect(await consumer.fail(firstTry, new Error('boom 1'))).toBe('retrying');
      expect(await queue.get(id)).toMatchObject({ state: 'pending', task: { attempts: 1 } });
      const secondTry = await claimNext(consumer, 'the retried task');
      expect(secondTry.task.attempts).toBe(2);
      expect(await consumer.fail(secondTry, new Error('boom 2'))).toBe('failed');
      const failed = await queue.get(id);
      expect(failed).toMatchObject({ state: 'failed', task: { error: { message: 'boom 2' } } });
      expect(failed?.task?.history.map((attempt) => attempt.error.message)).toEqual(['boom 1', 'boom 2']);
      await expect(queue.reroute(id)).rejects.toMatchObject({ code: 'CONFLICT' });
      const retried = await queue.retry(id);
      expect(retried).toMatchObject({ state: 'pending', task: { attempts: 0 } });
      await expect(queue.retry(id)).rejects.toMatchObject({ code: 'CONFLICT' });
      const thirdTry = await claimNext(consumer, 'the task retried by hand');
      expect(thirdTry.task.attempts).toBe(1);
      await consumer.complete(thirdTry, 'ok');

      const slow = enqueuedId(await queue.enqueue({ type: 'contract.slow' }));
      const slowTry = await claimNext(consumer);
      expect(await consumer.fail(slowTry, new Error('later'))).toBe('retrying');
      const waiting = await queue.get(slow);
      expect(Date.parse(waiting?.task?.readyAt ?? '')).toBeGreaterThan(Date.now() + 3_000_000);
      expect(await consumer.claim()).toBeUndefined();
      expect(await queue.stats()).toMatchObject({ scheduled: 1, ready: 0 });
    });

    it('delays without spending an attempt, fails at once on an unrecoverable error, and releases unrun', async () => {
      const queue = await open();
      const consumer = consumerOf(queue);
      const delayed = enqueuedId(await queue.enqueue({ type: 'contract.delayed' }));
      await consumer.start();
      const claimed = await claimNext(consumer);
      expect(claimed.id).toBe(delayed);
      expect(await consumer.fail(claimed, new DelayedError(Date.now() + 3_600_000, 'not yet'))).toBe('delayed');
      expect(await queue.get(delayed)).toMatchObject({ state: 'pending', task: { attempts: 0 } });
      expect(await consumer.claim()).toBeUndefined();

      const doomed = enqueuedId(await queue.enqueue({ type: 'contract.doomed' }));
      const doomedClaim = await claimNext(consumer);
      expect(doomedClaim.id).toBe(doomed);
      expect(await consumer.fail(doomedClaim, new UnrecoverableError('no'))).toBe('failed');
      expect((await queue.get(doomed))?.state).toBe('failed');

      const released = enqueuedId(await queue.enqueue({ type: 'contract.released' }));
      const releasedClaim = await claimNext(consumer);
      expect(releasedClaim.id).toBe(released);
      await consumer.release(releasedClaim);
      expect(await queue.get(released)).toMatchObject({ state: 'pending', task: { attempts: 0 } });
      const again = await claimNext(consumer, 'the released task');
      expect(again).toMatchObject({ id: released, task: { attempts: 1 } });
      await consumer.complete(again, null);
    });

    it('recovers the tasks of a worker that is gone, counting the attempt it spent, and never those of a live one', async () => {
      const queue = await open();
      const dying = queue.consumer({ pollIntervalMs: 50 });
      const id = enqueuedId(await queue.enqueue({ type: 'contract.orphan' }));
      await dying.start();
      const claimed = await claimNext(dying);
      expect(claimed.id).toBe(id);
      // Another instance, as another process would run it: the owner is alive, so its task stays.
      const other = await open();
      expect((await other.recover()).requeued).toEqual([]);
      expect((await other.get(id))?.state).toBe('active');
      // The owner goes without releasing what it held: its lease ends.
      await dying.close();
      const report = await other.recover();
      expect(report.requeued).toEqual([id]);
      const record = await other.get(id);
      expect(record).toMatchObject({ state: 'pending', task: { attempts: 1 } });
      const survivor = consumerOf(other);
      await survivor.start();
      const again = await claimNext(survivor, 'the recovered task');
      expect(again).toMatchObject({ id, task: { attempts: 2 } });
      expect(again.task.history.map((attempt) => attempt.error.type)).toEqual(['WorkerDied']);
      await survivor.complete(again, 'ok');
    });

    it('fails as poison a task whose worker died while running it twice, and never runs it a third time', async () => {
      const queue = await open();
      const id = enqueuedId(await queue.enqueue({ type: 'contract.poison' }));
      for (const death of [1, 2]) {
        const dying = consumerOf(await open());
        await dying.start();
        expect((await claimNext(dying, `the task, run ${death}`)).id).toBe(id);
        // The owner goes without releasing what it held, as a crashed worker does.
        await dying.close();
        const report = await queue.recover();
        expect(death === 1 ? report.requeued : report.failed).toEqual([id]);
      }
      // Three attempts are allowed; the two deaths alone decide.
      const record = await queue.get(id);
      expect(record).toMatchObject({
        state: 'failed',
        task: {
          attempts: 2,
          maxAttempts: 3,
          error: { type: 'PoisonTask', message: 'poison: its worker died while running it 2 times' },
        },
      });
      expect(taskOf(record as TaskRecord).history.map((attempt) => attempt.error.type)).toEqual([
        'WorkerDied',
        'WorkerDied',
      ]);
    });

    it('requeues a task whose worker died while it was parked, spending no attempt, and never fails it as poison', async () => {
      const queue = await open();
      const id = enqueuedId(await queue.enqueue({ type: 'contract.parked' }));
      for (const death of [1, 2, 3]) {
        const dying = consumerOf(await open());
        await dying.start();
        const claimed = await claimNext(dying, `the task, run ${death}`);
        expect(claimed).toMatchObject({ id, task: { attempts: 1 } });
        // It waits for the owner (or its children): none of its code runs when its worker goes.
        await dying.park(claimed);
        await dying.park(claimed);
        await dying.close();
        expect(await queue.recover()).toMatchObject({ requeued: [id], failed: [] });
        expect(await queue.get(id)).toMatchObject({ state: 'pending', task: { attempts: 0 } });
      }
      const survivor = consumerOf(queue);
      await survivor.start();
      const again = await claimNext(survivor, 'the task after three deaths while parked');
      expect(again).toMatchObject({ id, task: { attempts: 1, maxAttempts: 3 } });
      expect(again.task.history.map((attempt) => attempt.error.type)).toEqual([
        'WorkerDiedWhileWaiting',
        'WorkerDiedWhileWaiting',
        'WorkerDiedWhileWaiting',
      ]);
      expect(again.task.history[0]?.error.message).toMatch(/waiting/);
      await survivor.complete(again, 'ok');
      expect(await queue.get(id)).toMatchObject({ state: 'done', task: { result: 'ok' } });
    });

    it('counts a death as usual once the task is unparked, and a parked mark never outlives its claim', async () => {
      const queue = await open();
      const id = enqueuedId(await queue.enqueue({ type: 'contract.unparked' }));
      // Parked, then unparked: its code runs again when the worker dies, so the death counts.
      const first = consumerOf(await open());
      await first.start();
      const claimed = await claimNext(first, 'the task, run 1');
      await first.park(claimed);
      await first.unpark(claimed);
      await first.unpark(claimed);
      await first.close();
      expect(await queue.recover()).toMatchObject({ requeued: [id] });
      expect(await queue.get(id)).toMatchObject({ state: 'pending', task: { attempts: 1 } });
      // Parked, then failed while parked (a retry): the mark goes with the claim that made it.
      const second = consumerOf(await open());
      await second.start();
      const retried = await claimNext(second, 'the task, run 2');
      await second.park(retried);
      expect(await second.fail(retried, new Error('stopped while waiting'))).toBe('retrying');
      // Run 3 dies while running: a second death while running, so it is poison, whatever run 2 marked.
      const third = consumerOf(await open());
      await third.start();
      expect((await claimNext(third, 'the task, run 3')).id).toBe(id);
      await third.close();
      expect(await queue.recover()).toMatchObject({ failed: [id] });
      const record = await queue.get(id);
      expect(record).toMatchObject({ state: 'failed', task: { error: { type: 'PoisonTask' } } });
      expect(taskOf(record as TaskRecord).history.map((attempt) => attempt.error.type)).toEqual([
        'WorkerDied',
        'Error',
        'WorkerDied',
      ]);
    });

    it('imports task records as they are, in every state, once; removes any but an active one', async () => {
      const source = await open();
      const consumer = consumerOf(source);
      await consumer.start();
      const doneId = enqueuedId(await source.enqueue({ type: 'contract.imported', payload: { n: 1 }, priority: 2 }));
      const failedId = enqueuedId(await source.enqueue({ type: 'contract.imported', payload: { n: 2 } }));
      const activeId = enqueuedId(await source.enqueue({ type: 'contract.imported', payload: { n: 3 } }));
      const pendingId = enqueuedId(
        await source.enqueue({ type: 'contract.imported', payload: { n: 4 }, readyAtMs: Date.now() + 3_600_000 }),
      );
      await consumer.complete(await claimNext(consumer), { answer: 42 });
      await consumer.fail(await claimNext(consumer), new UnrecoverableError('kept in failed'));
      const active = await claimNext(consumer);
      expect(active.id).toBe(activeId);
      const records: TaskRecord[] = [];
      for (const id of [doneId, failedId, activeId, pendingId]) {
        const record = await source.get(id);
        if (!record?.task) throw new Error(`expected task ${id} to be readable`);
        records.push(record);
      }
      // A second store, as a migration's target is.
      const targetBackend = await createBackend();
      closers.unshift(() => targetBackend.cleanup());
      const target = await targetBackend.open({ settings: { policies: policies() } });
      closers.push(() => target.close());
      for (const record of records) expect(await target.importTask(taskOf(record), record.state)).toBe('imported');
      const [done, , running, pending] = records.map(taskOf) as [Task, Task, Task, Task];
      expect(await target.importTask(done, 'done')).toBe('exists');
      expect(await target.get(doneId)).toMatchObject({ state: 'done', task: { result: { answer: 42 }, priority: 2 } });
      expect(await target.get(failedId)).toMatchObject({
        state: 'failed',
        task: { error: { message: 'kept in failed' }, attempts: 1 },
      });
      const imported = await target.get(activeId);
      expect(imported).toMatchObject({ state: 'pending', task: { attempts: running.attempts, payload: { n: 3 } } });
      expect(imported?.task?.worker).toBeUndefined();
      expect(await target.get(pendingId)).toMatchObject({ state: 'pending', task: { readyAt: pending.readyAt } });
      expect(await target.stats()).toMatchObject({ pending: 2, ready: 1, scheduled: 1, done: 1, failed: 1 });
      await expect(target.importTask({ ...done, id: 'not an id' }, 'done')).rejects.toMatchObject({
        code: 'BAD_REQUEST',
      });

      const importedConsumer = consumerOf(target);
      await importedConsumer.start();
      const claimed = await claimNext(importedConsumer, 'the imported active task');
      expect(claimed).toMatchObject({ id: activeId, task: { attempts: running.attempts + 1 } });
      await expect(target.remove(activeId)).rejects.toMatchObject({ code: 'CONFLICT' });
      await importedConsumer.complete(claimed, null);
      for (const id of [doneId, failedId, pendingId, activeId]) expect(await target.remove(id)).toBe(true);
      expect(await target.remove(doneId)).toBe(false);
      expect(await target.stats()).toMatchObject({ pending: 0, active: 0, done: 0, failed: 0 });
    });

    it('prunes finished tasks past their retention', async () => {
      const queue = await open({ settings: { retention: { doneMs: 0, failedMs: 3_600_000 } } });
      const consumer = consumerOf(queue);
      const id = enqueuedId(await queue.enqueue({ type: 'contract.prune' }));
      const kept = enqueuedId(await queue.enqueue({ type: 'contract.kept' }));
      await consumer.start();
      await consumer.complete(await claimNext(consumer), null);
      await consumer.fail(await claimNext(consumer), new UnrecoverableError('kept in failed'));
      // Retention 0: pruned as soon as the clock has moved past the time it finished.
      await waitFor('the done task to be pruned', async () => ((await queue.prune()).done === 1 ? true : undefined));
      expect(await queue.get(id)).toBeUndefined();
      expect((await queue.get(kept))?.state).toBe('failed');
    });

    it('streams state changes, including those another instance makes', async () => {
      const queue = await open();
      const events = queue.events();
      closers.push(() => events.close());
      const seen: TaskEvent[] = [];
      const stop = events.subscribe((event) => seen.push(event));
      const other = await open();
      const id = enqueuedId(await other.enqueue({ type: 'contract.events' }));
      await waitFor('the added event', () => seen.find((event) => event.id === id && event.kind === 'added'));
      const consumer = consumerOf(other);
      await consumer.start();
      const claimed = await claimNext(consumer);
      await consumer.complete(claimed, 'ok');
      const completed = await waitFor('the completed event', () =>
        seen.find((event) => event.id === id && event.kind === 'completed'),
      );
      expect(completed).toEqual({ kind: 'completed', id, type: 'contract.events', state: 'done' });
      const kinds = seen.filter((event) => event.id === id).map((event) => event.kind);
      expect(kinds[0]).toBe('added');
      expect(kinds.at(-1)).toBe('completed');
      // Failed, then retried by hand from this instance: failed, then pending again.
      const doomed = enqueuedId(await other.enqueue({ type: 'contract.events', payload: 2 }));
      await consumer.fail(await claimNext(consumer), new UnrecoverableError('no'));
      await waitFor('the failed event', () => seen.find((event) => event.id === doomed && event.kind === 'failed'));
      await queue.retry(doomed);
      await waitFor('the requeued event', () =>
        seen.find((event) => event.id === doomed && event.kind === 'requeued' && event.state === 'pending'),
      );
      // Unsubscribed: a listener still subscribed hears of the next task, the stopped one does not.
      const stillListening: TaskEvent[] = [];
      const stopOther = events.subscribe((event) => stillListening.push(event));
      stop();
      const count = seen.length;
      const after = enqueuedId(await other.enqueue({ type: 'contract.events', payload: 3 }));
      await waitFor('the added event at the listener still subscribed', () =>
        stillListening.find((event) => event.id === after && event.kind === 'added'),
      );
      stopOther();
      expect(seen.filter((event) => event.id === after)).toEqual([]);
      expect(seen.length).toBe(count);
    });

    it('keeps a directory of workers: liveness, listing and published metrics', async () => {
      const queue = await open();
      const consumer = queue.consumer({ pollIntervalMs: 50 });
      await consumer.start();
      const other = await open();
      expect(await other.workers.liveness(consumer.owner)).toBe('alive');
      const listed = await other.workers.list();
      expect(listed.find((worker) => worker.id === consumer.owner.id)).toMatchObject({ alive: true });
      await queue.workers.publishMetrics(consumer.owner.id, { version: 1, tasks: { n: 3 } });
      expect(await other.workers.readMetrics()).toContainEqual({ version: 1, tasks: { n: 3 } });
      await consumer.close();
      expect(await other.workers.liveness(consumer.owner)).toBe('gone');
      expect((await other.workers.list()).filter((worker) => worker.id === consumer.owner.id && worker.alive)).toEqual(
        [],
      );
      expect(await other.workers.readMetrics()).not.toContainEqual({ version: 1, tasks: { n: 3 } });
    });

    it('answers NOT_FOUND and CONFLICT as AssistantErrors', async () => {
      const queue = await open();
      const id = enqueuedId(await queue.enqueue({ type: 'contract.pending' }));
      const error = await queue.retry(id).catch((caught: unknown) => caught);
      expect(error).toBeInstanceOf(AssistantError);
      expect(error).toMatchObject({ code: 'CONFLICT' });
      await expect(queue.reroute('00000000000000000000000000')).rejects.toMatchObject({ code: 'NOT_FOUND' });
    });
  });
}
