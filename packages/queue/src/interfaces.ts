/**
 * The queue as the rest of the system sees it: four interfaces that speak task ids, never file names or paths.
 * `FileTaskQueue` (data/queue/{pending,active,done,failed}) implements them today; a second backend (BullMQ on
 * Redis, say) proves itself by passing `describeTaskQueueContract` from `@assistant/queue/testing`.
 *
 * - {@link TaskQueue}: what the server, the CLI and the runtime do with tasks (enqueue, read, list, retry...).
 * - {@link TaskConsumer}: what a worker does (claim, complete, fail, release) while it holds a lease.
 * - {@link TaskEvents}: a stream of state changes, including those other processes make on the same queue.
 * - {@link WorkerDirectory}: which workers are alive, and the counters each publishes for /metrics.
 */
import type { QueueConfig, QueuePolicy } from './queue-config.ts';
import type { JsonValue, Task, TaskOwner, TaskSource } from './task-file.ts';
import type { TaskName } from './task-name.ts';

export type { TaskName } from './task-name.ts';

/** The states a task can be in. */
export const taskStates = ['pending', 'active', 'done', 'failed'] as const;
export type TaskState = (typeof taskStates)[number];

export interface EnqueueOptions {
  type: string;
  payload?: JsonValue;
  /** 0–9, lower first. @default 5 */
  priority?: number;
  /** When the task becomes ready. @default now */
  readyAtMs?: number;
  /** @default 'api' */
  source?: TaskSource;
  /** The integration instance the task belongs to. */
  integration?: string;
  /** Where a service result goes; the runtime routes it. */
  onResult?: JsonValue;
  /**
   * Apply dedup and rate limits. Scheduler and automation enqueues do; manual triggers (API, CLI) do not.
   * @default true for sources scheduler and automation, false otherwise
   */
  policies?: boolean;
}

/**
 * What became of an enqueue. `location` is where a person finds the task (for the file backend, its path relative
 * to the data directory); `existing` is the id of the task a duplicate would have repeated.
 */
export type EnqueueOutcome =
  | { status: 'enqueued'; task: Task; location: string }
  | { status: 'duplicate'; reason: string; existing: string }
  | { status: 'rate_limited'; reason: string; retryAtMs: number };

/** A task as a listing sees it. */
export interface TaskEntry {
  state: TaskState;
  /**
   * Where a person finds it, backend-neutral: the file backend gives the path relative to the data directory
   * (`queue/done/…yaml`). Not an address to act on: act through the queue, by id.
   */
  location: string;
  /** Undefined for something the queue set aside that is not a task at all (a stray file in failed/). */
  name: TaskName | undefined;
  /** Done and failed tasks: when the task got there (finished), in ms since the epoch. */
  finishedAtMs?: number;
  /** Active tasks: the id of the worker that holds it, when the backend knows. */
  worker?: string;
}

/** A task read in full; `problem` instead of `task` when it cannot be read as one. */
export interface TaskRecord extends TaskEntry {
  task?: Task;
  problem?: string;
}

export interface ListOptions {
  state?: TaskState;
  /** An exact type or a pattern with `*`. */
  type?: string;
  /** @default no limit */
  limit?: number;
  /**
   * Only tasks finished at or after this time (ms since the epoch): done and failed ones; pending and active tasks
   * are left out. For throughput figures. @default no bound
   */
  finishedSinceMs?: number;
}

export interface QueueStats {
  pending: number;
  /** Pending tasks whose ready time has come. */
  ready: number;
  /** Pending tasks waiting for a later ready time (backoff, delay, schedule). */
  scheduled: number;
  active: number;
  done: number;
  failed: number;
  /** Task counts per type, over pending and active. */
  byType: Record<string, { pending: number; active: number }>;
  /** Task counts per state and type, in every state; what is not a task at all counts under `unreadable`. */
  typesByState: Record<TaskState, Record<string, number>>;
}

/** Stats of a queue with nothing in it, for a backend to count into. */
export function emptyQueueStats(): QueueStats {
  return {
    pending: 0,
    ready: 0,
    scheduled: 0,
    active: 0,
    done: 0,
    failed: 0,
    byType: {},
    typesByState: { pending: {}, active: {}, done: {}, failed: {} },
  };
}

/** What a recovery pass did; every list holds task ids (or, for things that were not tasks, their location). */
export interface RecoveryReport {
  requeued: string[];
  failed: string[];
  /**
   * Stale copies of tasks that another file holds at a later step: active/ copies of tasks already finished or back
   * in pending/ (a crash between the two steps of leaving active/), and pending/ copies that a power cut or a hand
   * copy left beside the task's current file.
   */
  removedDuplicates: string[];
  quarantined: string[];
  removedTmp: number;
}

export interface PruneReport {
  done: number;
  failed: number;
}

/** Where the queue reports what it decided: policy rejections at info, quarantined files and lost leases at warn. */
export interface QueueLogger {
  info(message: string): void;
  warn(message: string): void;
  /** Lines about one task (its retry put it back until …), which a console at the default level leaves out. */
  debug?(message: string): void;
}

/** The queue settings of config.yaml, all optional here: tests and tools pass only what they care about. */
export interface QueueSettings {
  /** @default 'os' */
  durability?: QueueConfig['durability'];
  /** @default 1 MiB */
  maxTaskBytes?: number;
  /**
   * How long recovery leaves alone a file in active/ whose name does not say who holds it (a claim of the layout
   * before owners were put in names, or a file put there by hand); a claim that names its owner is recovered as soon
   * as the owner is gone. @default 30_000
   */
  claimGraceMs?: number;
  /** @default done 7 days, failed 30 days */
  retention?: QueueConfig['retention'];
  /** @default dedup on, no rate limit, 3 attempts, exponential backoff from 30 s to 1 h, 10 min timeout */
  policies?: QueueConfig['policies'];
}

/** The queue as the server, the CLI and the runtime use it. Every method speaks task ids. */
export interface TaskQueue {
  /** Checks and adds a task; with `policies`, dedup and rate limits may refuse it (a typed outcome, not a throw). */
  enqueue(options: EnqueueOptions): Promise<EnqueueOutcome>;
  /** A task by id in any state, read in full; undefined when there is none. */
  get(id: string): Promise<TaskRecord | undefined>;
  /** Pending and active in run order (priority, ready time, creation), then done and failed newest first. */
  list(options?: ListOptions): Promise<TaskEntry[]>;
  stats(): Promise<QueueStats>;
  /**
   * While the backend is known to be unreachable (Redis down), the error a caller that must answer now should give
   * (QUEUE_UNAVAILABLE, saying since when); undefined while it answers. Other calls wait for the backend to come
   * back, which suits a worker or a schedule but not a person waiting on a REST call. The file queue is never
   * unreachable this way: it has no such method.
   */
  unavailable?(): Error | undefined;
  /** failed → pending, ready now, with a fresh set of attempts; NOT_FOUND, CONFLICT (not failed) or BAD_REQUEST. */
  retry(id: string): Promise<TaskRecord>;
  /**
   * The done task whose result is to be routed again (`assistant task reroute`): NOT_FOUND when there is no such
   * task, CONFLICT when it is not done or cannot be read. The task stays where it is.
   */
  reroute(id: string): Promise<Task>;
  /**
   * Puts a task record in as it is, keeping its id, attempts and history (`assistant queue migrate`). An active task
   * comes in pending without its holder. `exists` when a task with that id is here already, in any state.
   * BAD_REQUEST for a record that is not a valid task.
   */
  importTask(task: Task, state: TaskState): Promise<'imported' | 'exists'>;
  /** Deletes a pending, done or failed task; CONFLICT for an active one; false when there is no such task. */
  remove(id: string): Promise<boolean>;
  /** Removes finished tasks older than the retention durations. */
  prune(): Promise<PruneReport>;
  /** Returns tasks of workers that are gone to pending (or failed, attempts spent); sweeps crash leftovers. */
  recover(options?: { skipOwner?: string }): Promise<RecoveryReport>;
  /** The policy (dedup, rate limit, attempts, backoff, timeout) that applies to a task type. */
  policyFor(type: string): QueuePolicy;
  /** True when no pending task is ready and none is active: nothing would run now. */
  isIdle(): Promise<boolean>;
  /** The queue's view of its workers. */
  readonly workers: WorkerDirectory;
  /** Opens a consumer that claims tasks under its own lease. */
  consumer(options?: TaskConsumerOptions): TaskConsumer;
  /** Opens a stream of this queue's state changes, made by any process. */
  events(): TaskEvents;
  /**
   * Releases what the queue holds open (watchers, connections): the last call a process makes on it. The file backend
   * can still be used afterwards (it opens its watchers again on demand); the Redis backend cannot.
   */
  close(): Promise<void>;
}

export interface TaskConsumerOptions {
  /** @default a new owner for this process */
  owner?: TaskOwner;
  /** How often the lease is renewed. @default 5_000 */
  heartbeatMs?: number;
  /** How often tasks of dead workers are looked for. @default 15_000 */
  sweepIntervalMs?: number;
  /** How often the backend is listed in full, in case a notification was missed. @default 30_000 */
  rescanIntervalMs?: number;
  /** The longest `waitForWork` sleeps before looking again. @default 1_000 */
  pollIntervalMs?: number;
  /** How often finished tasks are pruned. @default 3_600_000 */
  pruneIntervalMs?: number;
}

/** Which tasks a claim may take. */
export interface ClaimOptions {
  /**
   * Only task types this returns true for are claimed (and waited for); the others stay where they are, in run
   * order, for a later claim. Called synchronously, possibly once per type on every claim: keep it cheap.
   * @default every type
   */
  accept?: (type: string) => boolean;
}

/** A task this consumer holds; pass it back to complete, fail or release it. */
export interface ClaimedTask {
  id: string;
  /** The task as it runs: this attempt counted, `startedAt` and `worker` set. */
  task: Task;
}

export type FailOutcome = 'retrying' | 'delayed' | 'failed';

/**
 * What became of a handler's result: `done` with the result as kept (checked, scrubbed of secrets), `recorded`
 * false when the lease was lost meanwhile; or `failed` when the result could not be kept (nested too deep, not plain
 * JSON data), with the error the task failed with.
 */
export type ResultOutcome = { state: 'done'; result: JsonValue; recorded: boolean } | { state: 'failed'; error: Error };

/** A worker's side of the queue. Several consumers, in one process or many, may share a queue. */
export interface TaskConsumer {
  readonly owner: TaskOwner;
  /** Registers the lease, recovers what dead workers left and starts noticing new tasks. */
  start(): Promise<RecoveryReport>;
  /**
   * The next ready task in run order (priority, then ready time) among the types `accept` allows, or undefined when
   * none is ready now.
   */
  claim(options?: ClaimOptions): Promise<ClaimedTask | undefined>;
  /**
   * Pending tasks of a type (ready or not) as this consumer knows them now: it may lag a moment behind other
   * processes' enqueues and claims. For backpressure, not for accounting.
   */
  pendingCount(type: string): number;
  /** Records the result and finishes the task (done), or fails it when the result cannot be kept. */
  complete(claimed: ClaimedTask, result: unknown): Promise<ResultOutcome>;
  /**
   * A handler's error: `DelayedError` puts the task back until its time without counting the attempt;
   * `UnrecoverableError`, or any error once attempts are spent, fails it; anything else retries after the backoff.
   */
  fail(claimed: ClaimedTask, error: unknown): Promise<FailOutcome>;
  /** Returns a task unrun, its attempt not counted: the worker is shutting down. */
  release(claimed: ClaimedTask): Promise<void>;
  /**
   * Marks a held task as parked: none of its code runs while it waits (for the owner's approval or answer, for its
   * children), and its worker slot is about to be given back. Durable when it resolves, so a worker that dies while
   * the task is parked could not have been brought down by it: recovery then requeues the task with a
   * `WorkerDiedWhileWaiting` entry that spends no attempt and does not count toward poison. Marking a task parked
   * twice is the same as once; the mark goes with the claim when the task finishes, goes back or is recovered.
   */
  park(claimed: ClaimedTask): Promise<void>;
  /**
   * Removes the parked mark, durably, before the task's code runs again: from then on a death counts as usual.
   * A task that is not parked is left as it is.
   */
  unpark(claimed: ClaimedTask): Promise<void>;
  /** Renews the lease on every task this consumer holds now (it is renewed every `heartbeatMs` anyway). */
  extendLease(): Promise<void>;
  /**
   * Returns the tasks of workers that are gone to pending (or failed, attempts spent), as the consumer's own sweep
   * does every `sweepIntervalMs`: leaves alone every task this consumer holds, even while its own heartbeat is late
   * (Redis was down, the machine stalled). Queue housekeeping run by a worker's handler recovers through this, not
   * through the queue, which would count the worker's own claims as a dead worker's once its heartbeat is late.
   */
  recover(): Promise<RecoveryReport>;
  /**
   * Resolves when work may be there: a new task, a delayed task's time (of the types `accept` allows, when given),
   * `timeoutMs`, or the signal. It may resolve early (a new task of a type not accepted); callers claim and wait again.
   */
  waitForWork(options?: WaitForWorkOptions): Promise<void>;
  /** Stops and gives up the lease. Tasks still held must be released first. */
  close(): Promise<void>;
}

export interface WaitForWorkOptions extends ClaimOptions {
  signal?: AbortSignal;
  /** @default the consumer's `pollIntervalMs` */
  timeoutMs?: number;
}

export type TaskEventKind = 'added' | 'claimed' | 'completed' | 'failed' | 'requeued' | 'removed';

/**
 * A task changed state. `added`: a new task is pending; `requeued`: pending again (retry, backoff, delay, release,
 * recovery); `claimed`: active; `completed`: done; `failed`: failed; `removed`: gone (pruned, deleted).
 */
export interface TaskEvent {
  kind: TaskEventKind;
  id: string;
  type: string;
  /** The state it is in now; undefined after `removed`. */
  state: TaskState | undefined;
}

/** State changes of the queue, whichever process made them. Events of one task arrive in order. */
export interface TaskEvents {
  /** Calls `listener` for every change from now on; returns the function that stops it. */
  subscribe(listener: (event: TaskEvent) => void): () => void;
  close(): Promise<void>;
}

/** A worker as the directory knows it. */
export interface WorkerInfo extends TaskOwner {
  startedAt: string;
  heartbeatAt: string;
  /** Its heartbeat is within the lease. */
  alive: boolean;
}

/** The workers of a queue: their leases, and the counters each publishes for /metrics. */
export interface WorkerDirectory {
  /** How long a heartbeat holds. */
  readonly leaseMs: number;
  /** Records that `owner` is alive now. */
  heartbeat(owner: TaskOwner, startedAt: string): Promise<void>;
  /** Every worker that left a heartbeat, alive or not yet pruned. */
  list(nowMs?: number): Promise<WorkerInfo[]>;
  /** Whether the owner of a task is still there (heartbeat within the lease, pid alive when on this host). */
  liveness(owner: TaskOwner, nowMs?: number): Promise<'alive' | 'gone'>;
  /** Publishes a worker's counters (any JSON data; the runtime's metrics snapshot). */
  publishMetrics(ownerId: string, snapshot: JsonValue): Promise<void>;
  /** Every published snapshot that can be read, in worker id order. */
  readMetrics(): Promise<JsonValue[]>;
  /** Removes a worker's heartbeat and metrics (at a clean stop). */
  remove(ownerId: string): Promise<void>;
}

/** The capability housekeeping handlers get instead of the queue. */
export type QueueMaintenance = Pick<TaskQueue, 'prune' | 'recover' | 'stats'>;
