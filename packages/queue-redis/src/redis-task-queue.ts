import { randomBytes } from 'node:crypto';
import { AssistantError } from '@assistant/errors';
import {
  attemptOf,
  checkEnqueue,
  checkTaskRecord,
  decideAfterWorkerDied,
  defaultPolicy,
  defaultRetention,
  type EnqueueOptions,
  type EnqueueOutcome,
  emptyQueueStats,
  isTaskType,
  type ListOptions,
  newTask,
  newTaskId,
  type PruneReport,
  patternMatches,
  type QueueConfig,
  type QueueLogger,
  type QueuePolicy,
  type QueueSettings,
  type QueueStats,
  type RecoveryReport,
  resolvePolicy,
  type Task,
  type TaskConsumer,
  type TaskConsumerOptions,
  type TaskEntry,
  type TaskEventKind,
  type TaskEvents,
  type TaskOwner,
  type TaskQueue,
  type TaskRecord,
  type TaskState,
  taskFingerprint,
  taskStates,
  workerDiedError,
  workerDiedWhileWaitingError,
} from '@assistant/queue';
import { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import * as z from 'zod';
import { isConnectionError, RedisOutage } from './internal/redis-outage.ts';
import {
  handOverDedupKeyScript,
  headsScript,
  holdDedupKeyScript,
  markClaimScript,
  rateWindowScript,
  releaseClaimScript,
  sweepClaimScript,
  takeOverScript,
} from './internal/scripts.ts';
import { parseStoredTask } from './internal/stored-task.ts';
import { RedisTaskConsumer } from './redis-task-consumer.ts';
import { publishTaskEvent, RedisTaskEvents } from './redis-task-events.ts';
import { RedisWorkerDirectory } from './redis-worker-directory.ts';

const silentLogger: QueueLogger = { info() {}, warn() {} };

const claimSchema = z.object({
  owner: z.object({ id: z.string(), pid: z.int(), host: z.string() }),
  token: z.string(),
  /**
   * Set while the task is parked (waiting for the owner or its children, none of its code running): a death of its
   * owner meanwhile spends no attempt and does not count toward poison. It lives and goes with the claim.
   */
  parkedAt: z.string().optional(),
});
export type ClaimRecord = z.infer<typeof claimSchema>;

export interface RecoverOptions {
  /** A live consumer's own id: its claims are left alone (its heartbeat would say alive anyway). */
  skipOwner?: string;
  /**
   * Which of `skipOwner`'s claims it still holds. A claim it no longer holds (its outcome could not be written) is
   * recovered like a dead worker's, or nothing would ever return it to pending. @default every claim is held
   */
  holds?: (id: string) => boolean;
}

/** A MULTI on BullMQ's client: its scripts queue through `execCommand`, and ioredis' own commands beside them. */
interface JobTransaction {
  eval(script: string, numberOfKeys: number, ...args: (string | number)[]): unknown;
  exec(): Promise<[Error | null, unknown][] | null>;
}

/** BullMQ's client: the shared ioredis connection, wrapped. */
interface JobClient {
  multi(): JobTransaction;
}

/** BullMQ's backend methods this backend calls directly, with the shapes it passes (see the class comment). */
interface JobBackend {
  readonly client: Promise<JobClient>;
  /** Queues the script in a transaction (returning it), or runs it on the client (returning its answer). */
  execCommand(target: JobTransaction | JobClient, commandName: string, args: unknown[]): unknown;
  finishedErrors(options: { code: number; jobId: string; command: string; state: string }): Error;
  moveToActive(token: string, name?: string): Promise<unknown[]>;
  moveToFinishedArgs(
    job: { id: string; opts: { attempts: number } },
    value: string,
    property: 'returnvalue' | 'failedReason',
    shouldRemove: boolean,
    target: 'completed' | 'failed',
    token: string,
    timestamp: number,
    fetchNext: boolean,
    fieldsToUpdate: Record<string, string>,
  ): unknown[];
  moveToDelayedArgs(
    jobId: string,
    timestamp: number,
    token: string,
    delay: number,
    opts: { skipAttempt: boolean; fieldsToUpdate: Record<string, string> },
  ): unknown[];
  extendLocks(jobIds: string[], tokens: string[], duration: number): Promise<string[]>;
}

interface BullKeys {
  delayed: string;
  prioritized: string;
  wait: string;
  active: string;
  completed: string;
  failed: string;
  marker: string;
  de: string;
}

export interface RedisTaskQueueOptions {
  /** The Redis client every command goes through (maxRetriesPerRequest null); the queue does not close it. */
  client: Redis;
  /** Opens another connection like `client` (for blocking reads of the event stream). */
  connect: () => Redis;
  /** `redis://host:port`, without credentials: where a person finds a task. */
  displayUrl: string;
  /** @default 'assistant' */
  prefix?: string;
  settings?: QueueSettings;
  logger?: QueueLogger;
  /** @default 60_000 */
  leaseMs?: number;
}

/**
 * The queue on BullMQ over Redis: one BullMQ queue per task type (the queue name is the type), so a claim reads only
 * the types it accepts. The job id is the task id and the job's data is the whole Task record, rewritten by each
 * transition in the same script that moves the job (BullMQ's `fieldsToUpdate`), so `get`, listings, the API and the
 * dashboard read the same shape as from the file backend.
 *
 * - Ready time: every pending job sits in BullMQ's delayed set scored by its ready time (an enqueue adds it with a
 *   1 ms delay from a timestamp 1 ms before the ready time); BullMQ promotes due jobs in ready-time order, then
 *   runs them by priority (ours 0–9 as BullMQ's 1–10). A task whose ready time is in the past therefore still runs
 *   after others of its priority that were ready earlier, which plain `delay: 0` would not give.
 * - Claims go through the BullMQ queue's backend (`moveToActive`, `moveToFinished`, `moveToDelayed`, `extendLocks`:
 *   the Lua scripts a Worker runs) over the one shared connection, with the lease as the lock duration, instead of
 *   a BullMQ Worker per type: each Worker opens two connections of its own, and a consumer accepting fifty types
 *   would hold a hundred.
 * - Leases: each claim is recorded in the prefix's `claims` hash (owner and lock token). `recover` returns the jobs
 *   of owners the worker directory reports gone, counting the attempt they spent, at once rather than when the lock
 *   runs out: BullMQ's stalled-job check goes by lock expiry alone and would not record the attempt in the Task.
 *   A claim whose owner was never recorded (a crash between moveToActive and the claim's write) is recovered when
 *   its lock expires. A claim is removed in the same MULTI as the move that ends it (done, failed, back to pending),
 *   and `recover` also removes claims whose job is no longer active (left by older versions).
 * - Dedup: BullMQ `deduplication` keyed by the fingerprint, for policed enqueues; BullMQ drops the key when the job
 *   finishes, so a finished task no longer counts.
 * - Rate limits: a sliding window per type in a sorted set. BullMQ's limiter throttles how fast jobs are processed;
 *   this policy refuses enqueues, which is a different thing.
 * - Events: one Redis stream per prefix (see RedisTaskEvents).
 * - Indexes of the prefix: `types` (a set of every type used) and `ids` (task id → type) so `get`, `retry` and
 *   listings work across types.
 */
export class RedisTaskQueue implements TaskQueue {
  readonly client: Redis;
  readonly prefix: string;
  readonly workers: RedisWorkerDirectory;
  readonly logger: QueueLogger;
  readonly leaseMs: number;
  readonly maxTaskBytes: number;
  readonly retention: QueueConfig['retention'];
  readonly policies: QueueConfig['policies'];
  /** Whether Redis is reachable now; says so in the log once per outage and once when it is back. */
  readonly outage: RedisOutage;
  readonly #connect: () => Redis;
  readonly #displayUrl: string;
  readonly #queues = new Map<string, Queue>();
  readonly #consumers = new Set<TaskConsumer>();
  readonly #events = new Set<TaskEvents>();

  constructor(options: RedisTaskQueueOptions) {
    const settings = options.settings ?? {};
    this.client = options.client;
    this.#connect = options.connect;
    this.#displayUrl = options.displayUrl;
    this.prefix = options.prefix ?? 'assistant';
    this.logger = options.logger ?? silentLogger;
    this.leaseMs = options.leaseMs ?? 60_000;
    this.maxTaskBytes = settings.maxTaskBytes ?? 1_048_576;
    this.retention = settings.retention ?? defaultRetention;
    this.policies = settings.policies ?? { defaults: defaultPolicy, overrides: {} };
    this.outage = new RedisOutage({ client: this.client, displayUrl: this.#displayUrl, logger: this.logger });
    this.workers = new RedisWorkerDirectory({
      client: this.client,
      workersKey: this.key('workers'),
      metricsKey: this.key('metrics'),
      leaseMs: this.leaseMs,
      lastOutage: () => this.outage.last,
    });
  }

  /** A key of this backend's own, beside BullMQ's: `{prefix}::{name}` cannot be a BullMQ key (queue names are types). */
  key(name: string): string {
    return `${this.prefix}::${name}`;
  }

  /** The BullMQ queue of a task type, made on first use. */
  queueOf(type: string): Queue {
    let queue = this.#queues.get(type);
    if (!queue) {
      // lockDuration is read by the backend's moveToActive and moveToFinished: the lease of a claim.
      queue = new Queue(type, { connection: this.client, prefix: this.prefix, lockDuration: this.leaseMs } as never);
      // The connection's own errors are the outage's to report (once); BullMQ repeats each of them per queue.
      queue.on('error', (error: Error) => {
        if (this.outage.down || isConnectionError(error)) return;
        this.logger.warn(`redis queue ${type}: ${error.message}`);
      });
      this.#queues.set(type, queue);
    }
    return queue;
  }

  /** The BullMQ keys of a type's queue that this backend reads. */
  keysOf(type: string): BullKeys {
    const queue = this.queueOf(type);
    const key = (name: string) => queue.keys[name] ?? queue.toKey(name);
    return {
      delayed: key('delayed'),
      prioritized: key('prioritized'),
      wait: key('wait'),
      active: key('active'),
      completed: key('completed'),
      failed: key('failed'),
      marker: key('marker'),
      de: key('de'),
    };
  }

  backendOf(type: string): JobBackend {
    // The public escape hatch (`getBackend`) to the scripts a Worker runs; typed here with what is passed.
    return this.queueOf(type).getBackend() as unknown as JobBackend;
  }

  jobKey(type: string, id: string): string {
    return this.queueOf(type).toKey(id);
  }

  policyFor(type: string): QueuePolicy {
    return resolvePolicy(this.policies, type);
  }

  locationOf(type: string, id: string): string {
    return `${this.#displayUrl}/${this.prefix}/${type}/${id}`;
  }

  consumer(options: TaskConsumerOptions = {}): TaskConsumer {
    const consumer = new RedisTaskConsumer(this, options);
    this.#consumers.add(consumer);
    return consumer;
  }

  events(): TaskEvents {
    const events = new RedisTaskEvents({
      connect: this.#connect,
      streamKey: this.key('events'),
      onError: (error) => {
        if (this.outage.down || isConnectionError(error)) return;
        this.logger.warn(`reading the queue's event stream failed: ${error.message}`);
      },
    });
    this.#events.add(events);
    return events;
  }

  async publish(kind: TaskEventKind, id: string, type: string, state: TaskState | undefined): Promise<void> {
    await publishTaskEvent(this.client, this.key('events'), { kind, id, type, state }).catch((error: unknown) =>
      this.logger.warn(`publishing a ${kind} event for task ${id} failed: ${(error as Error).message}`),
    );
  }

  async types(): Promise<string[]> {
    return (await this.client.smembers(this.key('types'))).sort();
  }

  // ------------------------------------------------------------------------------------------------ enqueue

  async enqueue(options: EnqueueOptions): Promise<EnqueueOutcome> {
    const checked = checkEnqueue(options);
    const { type, priority, source, fingerprint, usePolicies } = checked;
    const nowMs = Date.now();
    const policy = this.policyFor(type);
    const queue = this.queueOf(type);
    const id = newTaskId(nowMs);
    if (usePolicies && policy.dedup) {
      const existing = await this.client.get(`${this.keysOf(options.type).de}:${fingerprint}`);
      if (existing !== null) return this.#duplicate(options.type, source, existing);
    }
    if (policy.rateLimit) {
      const { max, perMs } = policy.rateLimit;
      // Every enqueue of the type is counted, as the file backend counts every task created; only policed ones are
      // refused.
      const answer = (await this.client.eval(
        rateWindowScript,
        1,
        this.key(`rate:${options.type}`),
        nowMs,
        perMs,
        max,
        id,
        usePolicies ? '1' : '0',
      )) as number[];
      if (answer[0] === 0) {
        const rejection = {
          status: 'rate_limited' as const,
          reason: `${answer[2]} ${options.type} tasks created in the last ${Math.round(perMs / 1000)}s; the limit is ${max}`,
          retryAtMs: answer[1] ?? nowMs + perMs,
        };
        this.logger.info(`enqueue ${options.type} (${source}) skipped: ${rejection.reason}`);
        return rejection;
      }
    }
    const readyAtMs = Math.max(1, Math.floor(options.readyAtMs ?? nowMs));
    const task = newTask(checked, { id, nowMs, readyAtMs, policy, integration: options.integration });
    const text = JSON.stringify(task);
    this.#assertSize(text, options.type);
    await this.client.multi().sadd(this.key('types'), options.type).hset(this.key('ids'), id, options.type).exec();
    const job = await queue.add(options.type, task, {
      jobId: id,
      ...jobPlacement(priority, readyAtMs),
      ...(usePolicies && policy.dedup ? { deduplication: { id: fingerprint } } : {}),
    });
    if (job.id !== id) {
      // Another process enqueued the same task between the check above and this add.
      await this.client.hdel(this.key('ids'), id);
      if (policy.rateLimit) await this.client.zrem(this.key(`rate:${options.type}`), id);
      return this.#duplicate(options.type, source, job.id ?? '');
    }
    // A manual enqueue is never refused as a duplicate, but it is one that later policed enqueues see, as a pending
    // file is for the file backend: it takes the dedup key unless another task holds it.
    if (!usePolicies && policy.dedup) await this.#holdDedupKey(type, id, fingerprint);
    await this.publish('added', id, options.type, 'pending');
    return { status: 'enqueued', task, location: this.locationOf(options.type, id) };
  }

  /**
   * Points the type's dedup key for `fingerprint` at this task when no other task holds it, and marks the job so
   * BullMQ drops the key when the job finishes; when another task holds it, this one is next in line for it. Left
   * alone once the job has finished (it was quick): the key would then never be dropped.
   */
  async #holdDedupKey(type: string, id: string, fingerprint: string): Promise<void> {
    await this.client.eval(
      holdDedupKeyScript,
      3,
      `${this.keysOf(type).de}:${fingerprint}`,
      this.jobKey(type, id),
      this.#successorsKey(type, fingerprint),
      id,
      fingerprint,
    );
  }

  /**
   * After a task finished or was removed: an identical task still pending or active behind it takes the dedup key it
   * held, so later policed enqueues still see it as a duplicate (as the file backend sees any pending task). Only
   * identical manual tasks wait in line for a key: BullMQ refuses identical policed ones.
   */
  async #handOverDedupKey(task: Pick<Task, 'id' | 'type' | 'payload'>): Promise<void> {
    if (!this.policyFor(task.type).dedup) return;
    const fingerprint = taskFingerprint(task.type, task.payload);
    await this.client.eval(
      handOverDedupKeyScript,
      2,
      `${this.keysOf(task.type).de}:${fingerprint}`,
      this.#successorsKey(task.type, fingerprint),
      task.id,
      fingerprint,
      this.jobKey(task.type, ''),
    );
  }

  /** Identical tasks waiting for the dedup key `fingerprint` of `type` to be free. */
  #successorsKey(type: string, fingerprint: string): string {
    return this.key(`dedup-next:${type}:${fingerprint}`);
  }

  #duplicate(type: string, source: string, existing: string): EnqueueOutcome {
    const reason = `an identical ${type} task is already pending or active (${existing})`;
    this.logger.info(`enqueue ${type} (${source}) skipped: ${reason}`);
    return { status: 'duplicate', reason, existing };
  }

  #assertSize(text: string, type: string): void {
    const bytes = Buffer.byteLength(text);
    if (bytes > this.maxTaskBytes) {
      throw new AssistantError(
        'PAYLOAD_TOO_LARGE',
        `task ${type} would be ${bytes} bytes; queue.max_task_bytes allows ${this.maxTaskBytes}`,
        { hint: 'store large content in a note and put its path in the payload' },
      );
    }
  }

  // ----------------------------------------------------------------------------------------------- reading

  async #typeOf(id: string): Promise<string | undefined> {
    return (await this.client.hget(this.key('ids'), id)) ?? undefined;
  }

  async #stateOf(type: string, id: string): Promise<TaskState | undefined> {
    const state = await this.queueOf(type).getJobState(id);
    switch (state) {
      case 'delayed':
      case 'prioritized':
      case 'waiting':
      case 'waiting-children':
        return 'pending';
      case 'active':
        return 'active';
      case 'completed':
        return 'done';
      case 'failed':
        return 'failed';
      default:
        return undefined;
    }
  }

  async get(id: string): Promise<TaskRecord | undefined> {
    const type = await this.#typeOf(id);
    if (type === undefined) return undefined;
    const state = await this.#stateOf(type, id);
    if (state === undefined) return undefined;
    const [data, finishedOn] = await this.client.hmget(this.jobKey(type, id), 'data', 'finishedOn');
    return this.#record(state, type, id, data, finishedOn);
  }

  #record(
    state: TaskState,
    type: string,
    id: string,
    data: string | null | undefined,
    finishedOn: string | null | undefined,
  ): TaskRecord {
    const parsed = parseStoredTask(data);
    const location = this.locationOf(type, id);
    if ('problem' in parsed) return { state, location, name: undefined, problem: parsed.problem };
    const { task } = parsed;
    const finishedAtMs = finishedOn ? Number(finishedOn) : undefined;
    return {
      state,
      location,
      name: {
        priority: task.priority,
        readyAtMs: Date.parse(task.readyAt),
        id: task.id,
        fingerprint: taskFingerprint(task.type, task.payload),
        type: task.type,
      },
      ...((state === 'done' || state === 'failed') && finishedAtMs !== undefined ? { finishedAtMs } : {}),
      ...(state === 'active' && task.worker ? { worker: task.worker.id } : {}),
      task,
    };
  }

  /** The ids of a type's tasks in a state, with finish times for done and failed ones. */
  async #idsIn(type: string, state: TaskState, finishedSinceMs?: number): Promise<string[]> {
    const keys = this.keysOf(type);
    switch (state) {
      case 'pending': {
        const [delayed, prioritized, waiting] = await Promise.all([
          this.client.zrange(keys.delayed, 0, -1),
          this.client.zrange(keys.prioritized, 0, -1),
          this.client.lrange(keys.wait, 0, -1),
        ]);
        return [...prioritized, ...waiting, ...delayed];
      }
      case 'active':
        return this.client.lrange(keys.active, 0, -1);
      case 'done':
      case 'failed':
        return this.client.zrangebyscore(
          state === 'done' ? keys.completed : keys.failed,
          finishedSinceMs ?? '-inf',
          '+inf',
        );
    }
  }

  async list(options: ListOptions = {}): Promise<TaskEntry[]> {
    const finishedOnly = options.finishedSinceMs !== undefined;
    const states = (options.state ? [options.state] : taskStates).filter(
      (state) => !finishedOnly || state === 'done' || state === 'failed',
    );
    const pattern = options.type;
    const types = (await this.types()).filter((type) => pattern === undefined || patternMatches(pattern, type));
    const result: TaskEntry[] = [];
    for (const state of states) {
      const entries: TaskRecord[] = [];
      for (const type of types) {
        const ids = await this.#idsIn(type, state, options.finishedSinceMs);
        if (ids.length === 0) continue;
        const pipeline = this.client.pipeline();
        for (const id of ids) pipeline.hmget(this.jobKey(type, id), 'data', 'finishedOn');
        const answers = (await pipeline.exec()) ?? [];
        ids.forEach((id, index) => {
          const [data, finishedOn] = (answers[index]?.[1] as (string | null)[] | undefined) ?? [];
          entries.push(this.#record(state, type, id, data, finishedOn));
        });
      }
      if (state === 'pending' || state === 'active') entries.sort(compareRunOrder);
      else {
        entries.sort(
          (left, right) =>
            (right.finishedAtMs ?? 0) - (left.finishedAtMs ?? 0) || compareIds(right.location, left.location),
        );
      }
      for (const { task: _task, problem: _problem, ...entry } of entries) result.push(entry);
    }
    return options.limit === undefined ? result : result.slice(0, options.limit);
  }

  /** QUEUE_UNAVAILABLE while Redis is unreachable (since when, and why), else undefined. */
  unavailable(): AssistantError | undefined {
    return this.outage.unavailableError();
  }

  /**
   * Fails at once with QUEUE_UNAVAILABLE while Redis is unreachable, where every other call waits for it: /health,
   * /metrics and the dashboard poll this and must answer, not hang until Redis is back.
   */
  async stats(): Promise<QueueStats> {
    const unavailable = this.unavailable();
    if (unavailable) throw unavailable;
    const nowMs = Date.now();
    const stats = emptyQueueStats();
    for (const [type, counts] of await this.countsByType(nowMs)) {
      stats.pending += counts.pending;
      stats.ready += counts.ready;
      stats.scheduled += counts.pending - counts.ready;
      stats.active += counts.active;
      stats.done += counts.done;
      stats.failed += counts.failed;
      if (counts.pending + counts.active > 0) stats.byType[type] = { pending: counts.pending, active: counts.active };
      for (const state of taskStates) if (counts[state] > 0) stats.typesByState[state][type] = counts[state];
    }
    return stats;
  }

  /** Counts per type from the sizes of BullMQ's sets, in one round trip. */
  async countsByType(
    nowMs: number = Date.now(),
    types?: string[],
  ): Promise<Map<string, Record<TaskState | 'ready', number>>> {
    const listed = types ?? (await this.types());
    const pipeline = this.client.pipeline();
    const readyMax = (nowMs + 1) * 0x1000 - 1;
    for (const type of listed) {
      const keys = this.keysOf(type);
      pipeline.zcard(keys.delayed);
      pipeline.zcount(keys.delayed, 0, readyMax);
      pipeline.zcard(keys.prioritized);
      pipeline.llen(keys.wait);
      pipeline.llen(keys.active);
      pipeline.zcard(keys.completed);
      pipeline.zcard(keys.failed);
    }
    const answers = ((await pipeline.exec()) ?? []).map((answer) => Number(answer[1] ?? 0));
    const counts = new Map<string, Record<TaskState | 'ready', number>>();
    listed.forEach((type, index) => {
      const [delayed = 0, delayedReady = 0, prioritized = 0, waiting = 0, active = 0, done = 0, failed = 0] =
        answers.slice(index * 7, index * 7 + 7);
      counts.set(type, {
        pending: delayed + prioritized + waiting,
        ready: delayedReady + prioritized + waiting,
        active,
        done,
        failed,
      });
    });
    return counts;
  }

  async isIdle(): Promise<boolean> {
    for (const counts of (await this.countsByType()).values()) {
      if (counts.active > 0 || counts.ready > 0) return false;
    }
    return true;
  }

  /** For each type, the priority (BullMQ's, 1–10) and ready time of its next ready job; absent when none is ready. */
  async heads(types: string[], nowMs: number): Promise<Map<string, { priority: number; readyAtMs: number }>> {
    const heads = new Map<string, { priority: number; readyAtMs: number }>();
    if (types.length === 0) return heads;
    const keys: string[] = [];
    const prefixes: string[] = [];
    for (const type of types) {
      const queue = this.queueOf(type);
      keys.push(this.keysOf(type).prioritized, this.keysOf(type).delayed);
      prefixes.push(queue.toKey(''));
    }
    const answer = (await this.client.eval(headsScript, keys.length, ...keys, nowMs, ...prefixes)) as number[];
    types.forEach((type, index) => {
      const priority = answer[index * 2] ?? -1;
      if (priority >= 0) heads.set(type, { priority, readyAtMs: answer[index * 2 + 1] ?? 0 });
    });
    return heads;
  }

  // --------------------------------------------------------------------------------------------- transitions

  async retry(id: string): Promise<TaskRecord> {
    const record = await this.get(id);
    if (!record) throw new AssistantError('NOT_FOUND', `no task with id ${id}`);
    if (record.state !== 'failed') {
      throw new AssistantError('CONFLICT', `task ${id} is ${record.state}; only failed tasks can be retried`);
    }
    if (!record.task) {
      throw new AssistantError('BAD_REQUEST', `task ${id} cannot be read: ${record.problem ?? 'unknown problem'}`);
    }
    const nowMs = Date.now();
    const task: Task = { ...record.task, attempts: 0, readyAt: new Date(nowMs).toISOString() };
    delete task.startedAt;
    delete task.finishedAt;
    delete task.worker;
    delete task.error;
    delete task.result;
    // Failed → BullMQ's delayed set at now, with the fresh data, in one transaction (BullMQ's own retry moves to wait
    // and keeps the data as it was).
    const jobKey = this.jobKey(task.type, id);
    const moved = await this.client
      .multi()
      .zrem(this.keysOf(task.type).failed, id)
      .hset(jobKey, 'data', JSON.stringify(task), 'delay', '0')
      .hdel(jobKey, 'finishedOn', 'failedReason', 'processedOn')
      .zadd(this.keysOf(task.type).delayed, nowMs * 0x1000, id)
      .exec();
    if (Number(moved?.[0]?.[1] ?? 0) !== 1) {
      // Someone else retried it between the read and the move (their data and time equal ours): it is theirs.
      throw new AssistantError('CONFLICT', `task ${id} was retried meanwhile`);
    }
    await this.#markDelayed(task.type);
    if (this.policyFor(task.type).dedup)
      await this.#holdDedupKey(task.type, id, taskFingerprint(task.type, task.payload));
    this.logger.info(`task ${id} (${task.type}) retried by hand`);
    await this.publish('requeued', id, task.type, 'pending');
    return { ...record, state: 'pending', task, name: record.name && { ...record.name, readyAtMs: nowMs } };
  }

  /** Wakes BullMQ's bookkeeping of the delayed set after a job was put there by hand (its marker). */
  async #markDelayed(type: string): Promise<void> {
    await this.client.zadd(this.keysOf(type).marker, 1, '1');
  }

  async reroute(id: string): Promise<Task> {
    const record = await this.get(id);
    if (!record) throw new AssistantError('NOT_FOUND', `no task with id ${id}`);
    if (record.state !== 'done') {
      throw new AssistantError('CONFLICT', `task ${id} is ${record.state}; only a done task has a result to route`);
    }
    if (!record.task) {
      throw new AssistantError('CONFLICT', `task ${id} cannot be read: ${record.problem ?? 'unknown problem'}`);
    }
    return record.task;
  }

  async prune(): Promise<PruneReport> {
    const nowMs = Date.now();
    const report: PruneReport = { done: 0, failed: 0 };
    for (const type of await this.types()) {
      const queue = this.queueOf(type);
      for (const state of ['done', 'failed'] as const) {
        const maxAgeMs = state === 'done' ? this.retention.doneMs : this.retention.failedMs;
        const key = state === 'done' ? this.keysOf(type).completed : this.keysOf(type).failed;
        for (const id of await this.client.zrangebyscore(key, '-inf', `(${nowMs - maxAgeMs}`)) {
          if ((await queue.remove(id)) === 1) {
            await this.client.hdel(this.key('ids'), id);
            await this.publish('removed', id, type, undefined);
            report[state] += 1;
          }
        }
      }
    }
    if (report.done + report.failed > 0) {
      this.logger.info(`pruned ${report.done} done and ${report.failed} failed tasks past their retention`);
    }
    return report;
  }

  /**
   * Removes a task in any state but active (held by a worker): for `assistant queue migrate`. False when there is
   * no such task or it is active.
   */
  async remove(id: string): Promise<boolean> {
    const type = await this.#typeOf(id);
    if (type === undefined) return false;
    const state = await this.#stateOf(type, id);
    if (state === 'active') throw new AssistantError('CONFLICT', `task ${id} is running; stop it before removing it`);
    const stored = parseStoredTask(await this.client.hget(this.jobKey(type, id), 'data'));
    // BullMQ refuses a job whose lock is held: it was claimed since it was looked at.
    if (state !== undefined && (await this.queueOf(type).remove(id)) !== 1) {
      throw new AssistantError('CONFLICT', `task ${id} was claimed meanwhile; stop it before removing it`);
    }
    if ('task' in stored) await this.#handOverDedupKey(stored.task);
    await this.client.hdel(this.key('ids'), id);
    if (state !== undefined) await this.publish('removed', id, type, undefined);
    return state !== undefined;
  }

  /**
   * Puts a task record in as it is (id, attempts, history kept), for `assistant queue migrate`: pending and active
   * ones as pending at their ready time, done and failed ones finished at their `finishedAt`.
   */
  async importTask(task: Task, state: TaskState): Promise<'imported' | 'exists'> {
    if (!isTaskType(task.type)) throw new AssistantError('BAD_REQUEST', `task ${task.id} has no valid type`);
    // The shape the file backend's reader would accept: a migration brings nothing a worker could not run.
    task = checkTaskRecord(task, this.maxTaskBytes);
    const claimedType = await this.client.hsetnx(this.key('ids'), task.id, task.type);
    if (claimedType === 0) return 'exists';
    await this.client.sadd(this.key('types'), task.type);
    const queue = this.queueOf(task.type);
    const imported: Task = { ...task };
    if (state === 'pending' || state === 'active') {
      delete imported.startedAt;
      delete imported.worker;
      const readyAtMs = Math.max(1, Date.parse(task.readyAt) || Date.now());
      await queue.add(task.type, imported, { jobId: task.id, ...jobPlacement(task.priority, readyAtMs) });
      await this.publish('added', task.id, task.type, 'pending');
      return 'imported';
    }
    // A finished task goes straight into BullMQ's completed or failed set, with the fields its job hash would have.
    const finishedAtMs = Date.parse(task.finishedAt ?? '') || Date.now();
    const fields: Record<string, string> = {
      name: task.type,
      data: JSON.stringify(imported),
      opts: '{}',
      timestamp: String(Date.parse(task.createdAt) || finishedAtMs),
      delay: '0',
      priority: String(task.priority + 1),
      finishedOn: String(finishedAtMs),
      atm: String(task.attempts),
      ...(state === 'done'
        ? { returnvalue: JSON.stringify(task.result ?? null) }
        : { failedReason: task.error?.message ?? 'failed' }),
    };
    await this.client
      .multi()
      .hset(this.jobKey(task.type, task.id), fields)
      .zadd(state === 'done' ? this.keysOf(task.type).completed : this.keysOf(task.type).failed, finishedAtMs, task.id)
      .exec();
    await this.publish(state === 'done' ? 'completed' : 'failed', task.id, task.type, state);
    return 'imported';
  }

  // ------------------------------------------------------------------------------------------------ recovery

  async claimOf(id: string): Promise<ClaimRecord | undefined> {
    const text = await this.client.hget(this.key('claims'), id);
    if (text === null) return undefined;
    try {
      const checked = claimSchema.safeParse(JSON.parse(text));
      return checked.success ? checked.data : undefined;
    } catch {
      return undefined;
    }
  }

  /**
   * Returns active jobs whose owner is gone to pending (or failed, attempts spent), counting the attempt the owner
   * spent with a `worker died` entry in the history. Safe from several processes at once: each job is taken over by
   * one script that checks the lock still holds the gone owner's token (see `takeOverScript`).
   */
  async recover(options: RecoverOptions = {}): Promise<RecoveryReport> {
    const report: RecoveryReport = { requeued: [], failed: [], removedDuplicates: [], quarantined: [], removedTmp: 0 };
    const active = new Set<string>();
    for (const type of await this.types()) {
      for (const id of await this.client.lrange(this.keysOf(type).active, 0, -1)) {
        active.add(id);
        try {
          await this.#recoverJob(type, id, report, options);
        } catch (error) {
          this.logger.warn(`recovery skipped task ${id} (${type}): ${(error as Error).message}`);
        }
      }
    }
    await this.#sweepClaims(active);
    await this.workers.pruneGone();
    return report;
  }

  /**
   * Removes the claims of jobs that are no longer active (`activeIds`: those the walk above saw active), which
   * recovery, walking the active lists, would otherwise never look at: before a move and its claim's removal were one
   * MULTI, a worker killed between the two left such a claim. Each is checked again in Redis before it goes (see
   * `sweepClaimScript`), so a job claimed since the walk keeps its claim.
   */
  async #sweepClaims(activeIds: ReadonlySet<string>): Promise<void> {
    const claims = await this.client.hgetall(this.key('claims'));
    const candidates = Object.keys(claims).filter((id) => !activeIds.has(id));
    if (candidates.length === 0) return;
    const types = await this.client.hmget(this.key('ids'), ...candidates);
    let removed = 0;
    for (const [index, id] of candidates.entries()) {
      const type = types[index];
      const keys = type ? [this.key('claims'), this.keysOf(type).active] : [this.key('claims')];
      const text = claims[id] ?? '';
      if ((await this.client.eval(sweepClaimScript, keys.length, ...keys, id, text)) === 1) removed += 1;
    }
    if (removed > 0) {
      this.logger.info(`removed ${removed} claims of tasks no longer running (left by workers stopped mid-move)`);
    }
  }

  async #recoverJob(type: string, id: string, report: RecoveryReport, options: RecoverOptions): Promise<void> {
    const claim = await this.claimOf(id);
    if (claim) {
      if (claim.owner.id === options.skipOwner) {
        if (options.holds?.(id) ?? true) return;
      } else if ((await this.workers.livenessById(claim.owner.id)) === 'alive') return;
    }
    const token = `recovery-${randomBytes(8).toString('hex')}`;
    // Without a recorded claim only an expired lock is taken over: the claimer may be writing its claim right now.
    const taken = await this.client.eval(
      takeOverScript,
      2,
      `${this.jobKey(type, id)}:lock`,
      this.keysOf(type).active,
      claim?.token ?? '',
      token,
      this.leaseMs,
      id,
    );
    if (taken !== 1) return;
    const parsed = parseStoredTask(await this.client.hget(this.jobKey(type, id), 'data'));
    if ('problem' in parsed) {
      await this.finishFailed(type, id, token, undefined, parsed.problem);
      report.quarantined.push(this.locationOf(type, id));
      return;
    }
    const stored = parsed.task;
    const nowMs = Date.now();
    const finishedAt = new Date(nowMs).toISOString();
    // Parked when its owner died: none of its code was running, so the death is not the task's (decision 0062). The
    // mark is part of the claim just taken over (same lock token), so an earlier claim's mark cannot count here.
    const parked = claim?.parkedAt !== undefined && stored.startedAt !== undefined;
    // The claim wrote the attempt it counted; a claim that died before writing it (no startedAt) counts nothing.
    const error = parked && claim ? workerDiedWhileWaitingError(claim.owner.id) : workerDiedError(stored);
    const counted: Task = {
      ...stored,
      ...(parked ? { attempts: stored.attempts - 1 } : {}),
      history: [...stored.history, ...attemptOf(stored, finishedAt, error)],
    };
    delete counted.startedAt;
    delete counted.worker;
    await this.client.hdel(this.key('claims'), id);
    const death = decideAfterWorkerDied(counted.history);
    if (
      !parked &&
      stored.startedAt !== undefined &&
      (counted.attempts >= counted.maxAttempts || death.outcome === 'poisoned')
    ) {
      const failedWith = death.outcome === 'poisoned' ? death.error : error;
      await this.finishFailed(type, id, token, { ...counted, finishedAt, error: failedWith }, failedWith.message);
      report.failed.push(id);
      this.logger.warn(
        `task ${id} (${type}) failed: ${failedWith.message}${death.outcome === 'poisoned' ? '' : '; no attempts left'}`,
      );
      return;
    }
    await this.requeue(type, id, token, counted, Date.parse(stored.readyAt) || nowMs);
    report.requeued.push(id);
    this.logger.warn(
      `task ${id} (${type}) returned to pending: ${error.message} (${parked ? 'still' : 'attempt'} ${counted.attempts} of ${counted.maxAttempts})`,
    );
  }

  // ------------------------------------------------------------------------ moves of a held job (lock `token`)

  /**
   * Sets (`parked`) or clears a held job's parked mark in its claim, atomically, while the claim is still the
   * holder's: false when it is not (recovery took the job over), and nothing changed.
   */
  async markClaim(options: { id: string; owner: TaskOwner; token: string; parked: boolean }): Promise<boolean> {
    const { id, owner, token, parked } = options;
    const record: ClaimRecord = { owner, token, ...(parked ? { parkedAt: new Date().toISOString() } : {}) };
    const answer = await this.client.eval(markClaimScript, 1, this.key('claims'), id, token, JSON.stringify(record));
    return answer === 1;
  }

  /**
   * Sets a held job's lock again when it ran out while its holder could not renew it (Redis was down for longer than
   * the lease): true when the job is still active and nobody else took it over, so the holder may still record what
   * it did instead of running the task a second time. The same token, so the holder's other calls keep working.
   */
  async retakeLock(type: string, id: string, token: string): Promise<boolean> {
    const taken = await this.client.eval(
      takeOverScript,
      2,
      `${this.jobKey(type, id)}:lock`,
      this.keysOf(type).active,
      token,
      token,
      this.leaseMs,
      id,
    );
    return taken === 1;
  }

  /** Active → pending (BullMQ's delayed set) at `readyAtMs`, with `task` as its data. */
  async requeue(type: string, id: string, token: string, task: Task, readyAtMs: number): Promise<void> {
    const next: Task = { ...task, readyAt: new Date(readyAtMs).toISOString() };
    const args = this.backendOf(type).moveToDelayedArgs(id, readyAtMs, token, 0, {
      skipAttempt: true,
      fieldsToUpdate: { data: JSON.stringify(next) },
    });
    await this.#moveHeld({ type, id, token, command: 'moveToDelayed', args });
    await this.publish('requeued', id, type, 'pending');
  }

  /** Active → done, with `task` (its result set) as its data. */
  async finishDone(type: string, id: string, token: string, task: Task): Promise<void> {
    const backend = this.backendOf(type);
    const args = backend.moveToFinishedArgs(
      { id, opts: { attempts: 1 } },
      JSON.stringify(task.result ?? null),
      'returnvalue',
      false,
      'completed',
      token,
      Date.now(),
      false,
      { data: JSON.stringify(task) },
    );
    await this.#moveHeld({ type, id, token, command: 'moveToFinished', args });
    await this.#handOverDedupKey(task);
    await this.publish('completed', id, type, 'done');
  }

  /** Active → failed; `task` undefined keeps the data as it is (a job whose data is not a task). */
  async finishFailed(type: string, id: string, token: string, task: Task | undefined, reason: string): Promise<void> {
    const backend = this.backendOf(type);
    const args = backend.moveToFinishedArgs(
      { id, opts: { attempts: 1 } },
      reason,
      'failedReason',
      false,
      'failed',
      token,
      Date.now(),
      false,
      task ? { data: JSON.stringify(task) } : {},
    );
    await this.#moveHeld({ type, id, token, command: 'moveToFinished', args });
    if (task) await this.#handOverDedupKey(task);
    await this.publish('failed', id, type, 'failed');
  }

  /**
   * Runs BullMQ's move of a held job (`args` built by its `…Args` method) and removes the job's claim in the same MULTI
   * (see `releaseClaimScript`): a worker killed between a move and a separate HDEL left the claim for good, since
   * recovery reads the claims of active jobs only. A refused move throws BullMQ's own error (lock lost, not active),
   * the claim kept.
   */
  async #moveHeld(options: {
    type: string;
    id: string;
    token: string;
    command: 'moveToFinished' | 'moveToDelayed';
    args: unknown[];
  }): Promise<void> {
    const { type, id, token, command, args } = options;
    const backend = this.backendOf(type);
    const client = await backend.client;
    const releaseKeys = [this.key('claims'), this.keysOf(type).active];
    const transaction = client.multi();
    backend.execCommand(transaction, command, args);
    transaction.eval(releaseClaimScript, 2, ...releaseKeys, id, token);
    const answers = await transaction.exec();
    let [moveError, code] = answers?.[0] ?? [new Error(`${command} of job ${id} got no answer from Redis`), 0];
    let releaseError = answers?.[1]?.[0];
    if (moveError && /NOSCRIPT/.test(moveError.message)) {
      // Redis lost its scripts (SCRIPT FLUSH) while this connection stayed up: the move did not run, and ioredis
      // loads a script again only for a command sent on its own, not inside a MULTI. So the move on its own, then the
      // claim's removal: a worker killed between the two leaves a claim, which the next sweep removes.
      moveError = null;
      code = await backend.execCommand(client, command, args);
      releaseError = await this.client.eval(releaseClaimScript, 2, ...releaseKeys, id, token).then(
        () => null,
        (error: unknown) => error as Error,
      );
    }
    if (moveError) throw moveError;
    if (typeof code === 'number' && code < 0) {
      throw backend.finishedErrors({ code, jobId: id, command, state: 'active' });
    }
    // The move is done: a claim that could not be removed is only a leftover, which the next sweep removes.
    if (releaseError) this.logger.warn(`removing the claim of task ${id} (${type}) failed: ${releaseError.message}`);
  }

  /** Closes the BullMQ queues, consumers and event readers made through this queue (not the shared client). */
  async close(): Promise<void> {
    const steps: Promise<unknown>[] = [
      ...[...this.#consumers].map((consumer) => consumer.close()),
      ...[...this.#events].map((events) => events.close()),
    ];
    await Promise.allSettled(steps);
    await Promise.allSettled([...this.#queues.values()].map((queue) => queue.close()));
    this.#queues.clear();
    this.#consumers.clear();
    this.#events.clear();
  }
}

/**
 * Where BullMQ puts a new job: in the delayed set at its ready time (1 ms delay from 1 ms before it), with our
 * priority 0–9 as BullMQ's 1–10 (BullMQ's 0 means "no priority", a plain list).
 */
function jobPlacement(priority: number, readyAtMs: number): { priority: number; delay: number; timestamp: number } {
  return { priority: priority + 1, delay: 1, timestamp: readyAtMs - 1 };
}

function compareRunOrder(left: TaskRecord, right: TaskRecord): number {
  const a = left.name;
  const b = right.name;
  if (!a || !b) return a ? -1 : b ? 1 : 0;
  return a.priority - b.priority || a.readyAtMs - b.readyAtMs || compareIds(a.id, b.id);
}

function compareIds(left: string, right: string): number {
  return left < right ? -1 : left > right ? 1 : 0;
}
