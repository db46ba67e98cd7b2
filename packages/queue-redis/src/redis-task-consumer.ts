import { randomBytes } from 'node:crypto';
import {
  attemptOf,
  type ClaimedTask,
  type ClaimOptions,
  decideFailure,
  type FailOutcome,
  newWorkerOwner,
  type RecoveryReport,
  type ResultOutcome,
  repeatMaintenance,
  resultProblem,
  type Task,
  type TaskConsumer,
  type TaskConsumerOptions,
  type TaskOwner,
  UnrecoverableError,
  workerDiedError,
} from '@assistant/queue';
import { parseStoredTask } from './internal/stored-task.ts';
import type { RedisTaskQueue } from './redis-task-queue.ts';

/** Node fires longer timers after 1 ms (with a TimeoutOverflowWarning), so every delay is capped at this. */
const maxTimerMs = 2_147_483_647;

/** How many times a claim looks again when another consumer took the job it aimed at. */
const claimRetries = 5;

interface Held {
  type: string;
  token: string;
}

/**
 * A worker's side of the Redis queue: claims with BullMQ's moveToActive on the type whose next ready job comes
 * first in run order, holds each job's lock (renewed with the heartbeat), and wakes on the prefix's event stream.
 */
export class RedisTaskConsumer implements TaskConsumer {
  readonly queue: RedisTaskQueue;
  readonly owner: TaskOwner;
  readonly #options: Required<Omit<TaskConsumerOptions, 'owner'>>;
  readonly #held = new Map<string, Held>();
  readonly #pending = new Map<string, number>();
  readonly #timers: NodeJS.Timeout[] = [];
  readonly #waiters = new Set<() => void>();
  #types: string[] = [];
  #events: ReturnType<RedisTaskQueue['events']> | undefined;
  #startedAt = new Date().toISOString();
  #closing: Promise<void> | undefined;
  /** Bumped by every change this consumer makes to its counts, so a refresh read before it does not undo it. */
  #generation = 0;

  constructor(queue: RedisTaskQueue, options: TaskConsumerOptions = {}) {
    this.queue = queue;
    this.owner = options.owner ?? newWorkerOwner();
    this.#options = {
      heartbeatMs: options.heartbeatMs ?? 5_000,
      sweepIntervalMs: options.sweepIntervalMs ?? 15_000,
      rescanIntervalMs: options.rescanIntervalMs ?? 30_000,
      pollIntervalMs: options.pollIntervalMs ?? 1_000,
      pruneIntervalMs: options.pruneIntervalMs ?? 3_600_000,
    };
  }

  async start(): Promise<RecoveryReport> {
    this.#startedAt = new Date().toISOString();
    await this.extendLease();
    this.#every(this.#options.heartbeatMs, () => this.extendLease());
    this.#events = this.queue.events();
    this.#events.subscribe((event) => {
      if (event.kind === 'added' || event.kind === 'requeued') this.#wake();
    });
    const report = await this.queue.recover({ skipOwner: this.owner.id });
    await this.#refreshCounts();
    this.#every(this.#options.sweepIntervalMs, () => this.recover());
    // The counts behind pendingCount follow the event stream between these; a missed event is corrected here.
    this.#every(Math.min(this.#options.pollIntervalMs, this.#options.rescanIntervalMs), () => this.#refreshCounts());
    this.#every(this.#options.pruneIntervalMs, () => this.queue.prune());
    await this.queue.prune();
    return report;
  }

  #every(intervalMs: number, action: () => Promise<unknown>): void {
    this.#timers.push(
      repeatMaintenance({
        intervalMs,
        action,
        stopped: () => this.#closing !== undefined,
        warn: (message) => this.queue.logger.warn(message),
      }),
    );
  }

  async #refreshCounts(): Promise<void> {
    const generation = this.#generation;
    this.#types = await this.queue.types();
    const counts = await this.queue.countsByType(Date.now(), this.#types);
    // A claim or requeue of ours since the counts were read has already adjusted them: these are older.
    if (generation !== this.#generation) return;
    this.#pending.clear();
    for (const [type, count] of counts) if (count.pending > 0) this.#pending.set(type, count.pending);
  }

  pendingCount(type: string): number {
    return this.#pending.get(type) ?? 0;
  }

  async claim(options: ClaimOptions = {}): Promise<ClaimedTask | undefined> {
    for (let attempt = 0; attempt < claimRetries; attempt += 1) {
      if (this.#closing) return undefined;
      this.#types = await this.queue.types();
      const accepted = options.accept ? this.#types.filter((type) => options.accept?.(type)) : this.#types;
      const heads = await this.queue.heads(accepted, Date.now());
      let best: { type: string; priority: number; readyAtMs: number } | undefined;
      for (const [type, head] of heads) {
        if (
          !best ||
          head.priority < best.priority ||
          (head.priority === best.priority && head.readyAtMs < best.readyAtMs)
        ) {
          best = { type, ...head };
        }
      }
      if (!best) return undefined;
      const claimed = await this.#claimFrom(best.type);
      if (claimed) return claimed;
    }
    return undefined;
  }

  async #claimFrom(type: string): Promise<ClaimedTask | undefined> {
    const token = `${this.owner.id}:${randomBytes(8).toString('hex')}`;
    const answer = await this.queue.backendOf(type).moveToActive(token);
    const id = typeof answer[1] === 'string' && answer[1] !== '' ? answer[1] : undefined;
    if (id === undefined) return undefined;
    const parsed = parseStoredTask(await this.queue.client.hget(this.queue.jobKey(type, id), 'data'));
    if ('problem' in parsed) {
      await this.queue.finishFailed(type, id, token, undefined, parsed.problem);
      this.queue.logger.warn(`task ${id} (${type}) set aside in failed: ${parsed.problem}`);
      return undefined;
    }
    const stored = parsed.task;
    const startedAt = new Date().toISOString();
    const task: Task = {
      ...stored,
      // Started before and never finished: the previous holder's lock ran out without a recovery recording it.
      history:
        stored.startedAt !== undefined && stored.finishedAt === undefined
          ? [...stored.history, ...attemptOf(stored, startedAt, workerDiedError(stored))]
          : stored.history,
      attempts: stored.attempts + 1,
      startedAt,
      worker: this.owner,
    };
    delete task.finishedAt;
    delete task.error;
    delete task.result;
    // Held before the claim is recorded: this consumer's sweep leaves alone only the claims it holds.
    this.#held.set(id, { type, token });
    try {
      // The attempt is written at once (the file backend counts it at the next move instead): a recovery of this
      // job then finds it counted in the data.
      await this.queue.client
        .multi()
        .hset(this.queue.jobKey(type, id), 'data', JSON.stringify(task))
        .hset(this.queue.key('claims'), id, JSON.stringify({ owner: this.owner, token }))
        .exec();
    } catch (error) {
      // Not held, so not renewed: recovered when its lock runs out, or at once if the claim was written after all.
      this.#held.delete(id);
      throw error;
    }
    this.#generation += 1;
    this.#pending.set(type, Math.max(0, (this.#pending.get(type) ?? 1) - 1));
    await this.queue.publish('claimed', id, type, 'active');
    return { id, task };
  }

  /** Renews the heartbeat and the lock of every job this consumer holds. */
  async extendLease(): Promise<void> {
    await this.queue.workers.heartbeat(this.owner, this.#startedAt);
    const byType = new Map<string, { ids: string[]; tokens: string[] }>();
    for (const [id, held] of this.#held) {
      const group = byType.get(held.type) ?? { ids: [], tokens: [] };
      group.ids.push(id);
      group.tokens.push(held.token);
      byType.set(held.type, group);
    }
    for (const [type, group] of byType) {
      const lapsed = await this.queue.backendOf(type).extendLocks(group.ids, group.tokens, this.queue.leaseMs);
      // A lock that ran out while Redis was down is set again, unless someone took the job over meanwhile.
      for (const id of lapsed) {
        const held = this.#held.get(id);
        if (held) await this.queue.retakeLock(type, id, held.token);
      }
    }
  }

  /**
   * Returns gone workers' jobs to pending, leaving alone those this consumer holds; a claim of its own it no longer
   * holds (its outcome could not be written) is returned like a dead worker's, or nothing would.
   */
  recover(): Promise<RecoveryReport> {
    return this.queue.recover({ skipOwner: this.owner.id, holds: (id) => this.#held.has(id) });
  }

  /**
   * Sets the parked mark in the job's claim (see RedisTaskQueue's `markClaim`): one atomic write, acknowledged by
   * Redis (and as durable as its persistence settings make any write) before it resolves.
   */
  async park(claimed: ClaimedTask): Promise<void> {
    await this.#mark(claimed, true);
  }

  /** Clears the parked mark before the task's code runs again. */
  async unpark(claimed: ClaimedTask): Promise<void> {
    await this.#mark(claimed, false);
  }

  async #mark(claimed: ClaimedTask, parked: boolean): Promise<void> {
    const held = this.#heldOf(claimed);
    const marked = await this.queue.markClaim({ id: claimed.id, owner: this.owner, token: held.token, parked });
    if (!marked) {
      throw new Error(
        `task ${claimed.id} (${claimed.task.type}) could not be ${parked ? 'parked' : 'unparked'}: its claim is no longer this worker's (${this.owner.id}); it may run twice`,
      );
    }
  }

  #heldOf(claimed: ClaimedTask): Held {
    const held = this.#held.get(claimed.id);
    if (!held) throw new Error(`task ${claimed.id} is not held by this consumer (${this.owner.id})`);
    return held;
  }

  async complete(claimed: ClaimedTask, result: unknown): Promise<ResultOutcome> {
    const problem = resultProblem(result);
    if (typeof problem === 'string') {
      const error = new UnrecoverableError(problem);
      await this.fail(claimed, error);
      return { state: 'failed', error };
    }
    const held = this.#heldOf(claimed);
    const task: Task = { ...claimed.task, finishedAt: new Date().toISOString(), result: problem.value };
    const recorded = await this.#move(claimed, () => this.queue.finishDone(held.type, claimed.id, held.token, task));
    return { state: 'done', result: problem.value, recorded };
  }

  async fail(claimed: ClaimedTask, error: unknown): Promise<FailOutcome> {
    const held = this.#heldOf(claimed);
    const decision = decideFailure(claimed.task, error, this.queue.policyFor(claimed.task.type), Date.now());
    if (decision.outcome === 'failed') {
      const failed = decision.task;
      await this.#move(claimed, () =>
        this.queue.finishFailed(held.type, claimed.id, held.token, failed, failed.error?.message ?? 'failed'),
      );
      return 'failed';
    }
    await this.#backToPending(claimed, decision.task, decision.readyAtMs);
    // One line per retry: debug, so an outage does not fill the console (the worker logs its start and end).
    this.queue.logger.debug?.(decision.message);
    return decision.outcome;
  }

  async release(claimed: ClaimedTask): Promise<void> {
    await this.#backToPending(
      claimed,
      { ...claimed.task, attempts: claimed.task.attempts - 1 },
      Date.parse(claimed.task.readyAt) || Date.now(),
    );
  }

  async #backToPending(claimed: ClaimedTask, task: Task, readyAtMs: number): Promise<void> {
    const held = this.#heldOf(claimed);
    const next: Task = { ...task };
    delete next.startedAt;
    delete next.worker;
    delete next.finishedAt;
    const moved = await this.#move(claimed, () =>
      this.queue.requeue(held.type, claimed.id, held.token, next, readyAtMs),
    );
    if (moved) {
      this.#generation += 1;
      this.#pending.set(held.type, (this.#pending.get(held.type) ?? 0) + 1);
    }
  }

  /**
   * Runs a move of a held job and forgets it; false when BullMQ refused it because the lock is no longer ours (a
   * stalled process whose job was recovered): the job is someone else's now and may run twice.
   *
   * A lock that merely ran out (Redis was down for longer than the lease, and this move waited for it) is set again
   * and the move tried once more, so the task's outcome is kept rather than the task run again. A move that fails
   * for another reason throws with the job forgotten here but its claim left in Redis: this consumer's sweep then
   * returns it to pending like a dead worker's, so it is not stranded in active. A move that went through removed
   * the claim with it.
   */
  async #move(claimed: ClaimedTask, move: () => Promise<void>): Promise<boolean> {
    const held = this.#heldOf(claimed);
    try {
      try {
        await move();
      } catch (error) {
        if (!isLockLost(error) || !(await this.queue.retakeLock(held.type, claimed.id, held.token))) throw error;
        await move();
      }
      // The move removed the claim in the same MULTI (RedisTaskQueue's #moveHeld).
      return true;
    } catch (error) {
      if (!isLockLost(error)) throw error;
      const message = (error as Error).message;
      this.queue.logger.warn(
        `task ${claimed.id} (${claimed.task.type}) could not be moved on: this worker lost its lease (${message}); the task may run twice`,
      );
      return false;
    } finally {
      this.#held.delete(claimed.id);
    }
  }

  async waitForWork(options: { signal?: AbortSignal; timeoutMs?: number; accept?: (type: string) => boolean } = {}) {
    if (options.signal?.aborted || this.#closing) return;
    let timeoutMs = options.timeoutMs ?? this.#options.pollIntervalMs;
    const nextReady = await this.#nextReadyAtMs(options.accept);
    if (nextReady !== undefined) timeoutMs = Math.min(timeoutMs, Math.max(0, nextReady - Date.now()));
    await new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.#waiters.delete(done);
        options.signal?.removeEventListener('abort', done);
        resolve();
      };
      const timer = setTimeout(done, Math.min(timeoutMs, maxTimerMs));
      this.#waiters.add(done);
      options.signal?.addEventListener('abort', done, { once: true });
    });
  }

  /** The earliest ready time among the accepted types' delayed jobs (the delayed set's score holds it). */
  async #nextReadyAtMs(accept?: (type: string) => boolean): Promise<number | undefined> {
    const types = accept ? this.#types.filter((type) => accept(type)) : this.#types;
    if (types.length === 0) return undefined;
    const pipeline = this.queue.client.pipeline();
    for (const type of types) pipeline.zrange(this.queue.keysOf(type).delayed, 0, 0, 'WITHSCORES');
    let earliest: number | undefined;
    for (const [, answer] of (await pipeline.exec()) ?? []) {
      const score = Array.isArray(answer) ? Number(answer[1]) : Number.NaN;
      if (!Number.isFinite(score)) continue;
      const readyAtMs = Math.floor(score / 0x1000);
      if (earliest === undefined || readyAtMs < earliest) earliest = readyAtMs;
    }
    return earliest;
  }

  #wake(): void {
    for (const waiter of [...this.#waiters]) waiter();
  }

  close(): Promise<void> {
    this.#closing ??= (async () => {
      for (const timer of this.#timers) clearInterval(timer);
      this.#wake();
      await this.#events?.close();
      await this.queue.workers.remove(this.owner.id);
    })();
    return this.#closing;
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }
}

/** BullMQ's refusal of a move whose lock is not the caller's: gone (expired), another's, or the job moved on. */
function isLockLost(error: unknown): boolean {
  return /lock|not in the active state|Missing key/i.test((error as Error).message);
}
