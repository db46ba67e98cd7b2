import { randomBytes } from 'node:crypto';
import { lstat, mkdir, readdir, rename, rm, stat, unlink } from 'node:fs/promises';
import path from 'node:path';
import { AssistantError } from '@assistant/errors';
import {
  DirectorySyncs,
  type Durability,
  isCompleteTmpText,
  parseTaskTmpName,
  taskTmpName,
  writeFileDurably,
} from './durable-write.ts';
import {
  type ActiveName,
  activeFileName,
  decodeStateName,
  isScratchName,
  parseActiveName,
  type QueuePaths,
  queuePaths,
  reasonSuffix,
} from './file-layout.ts';
import { FileTaskConsumer } from './file-task-consumer.ts';
import { FileTaskEvents } from './file-task-events.ts';
import { FileWorkerDirectory, ignoreMissing, isMissing } from './file-worker-directory.ts';
import { taskFingerprint } from './fingerprint.ts';
import type {
  EnqueueOptions,
  EnqueueOutcome,
  ListOptions,
  PruneReport,
  QueueLogger,
  QueueSettings,
  QueueStats,
  RecoveryReport,
  TaskConsumer,
  TaskConsumerOptions,
  TaskEntry,
  TaskEvents,
  TaskQueue,
  TaskRecord,
  TaskState,
} from './interfaces.ts';
import { emptyQueueStats, taskStates } from './interfaces.ts';
import { checkEnqueue, newTask } from './new-task.ts';
import { decideAfterWorkerDied } from './poison.ts';
import { defaultPolicy, defaultRetention, type QueueConfig, type QueuePolicy } from './queue-config.ts';
import { describeFileKind, readTaskText } from './read-task-text.ts';
import { resolvePolicy } from './resolve-policy.ts';
import { attemptOf, workerDiedError, workerDiedWhileWaitingError } from './task-attempts.ts';
import { checkTaskRecord, parseTaskFile, stringifyTask, type Task, TaskFileError } from './task-file.ts';
import { newTaskId, taskIdTimeMs } from './task-id.ts';
import { decodeTaskName, encodeTaskName, isLaterVersion, requeuedTaskName, type TaskName } from './task-name.ts';

const silentLogger: QueueLogger = { info() {}, warn() {} };

export interface FileTaskQueueOptions {
  /** The queue directory: `data/queue`. */
  directory: string;
  /**
   * What `location` is relative to: the data directory. @default the queue directory's parent. A queue directory
   * outside it is shown as `queue/…`, as if it were in its usual place.
   */
  dataDirectory?: string;
  settings?: QueueSettings;
  logger?: QueueLogger;
  /** A worker whose heartbeat is older than this is gone and its tasks are recovered. @default 60_000 */
  leaseMs?: number;
  /**
   * A task in active/ whose file does not name its owner (the layout before owners were put in names, or a file
   * put there by hand) is left alone for this long after it got there. @default 30_000
   */
  claimGraceMs?: number;
  /** Files in tmp/ older than this are leftovers of a crash and are removed. @default 3_600_000 */
  tmpMaxAgeMs?: number;
  /** For tests. @default Date.now */
  now?: () => number;
}

/** A task file as this backend lists it: never seen outside the package. */
export interface FileEntry {
  state: TaskState;
  fileName: string;
  path: string;
  /** Undefined for a file in failed/ whose name is not a task name (quarantined). */
  name: TaskName | undefined;
  /** done/ and failed/: the file's mtime, the time the task got there. Set by listings that sort by it. */
  finishedAtMs?: number;
}

/** A task file read; `problem` instead of `task` when it cannot be read as one. */
export interface FileRecord extends FileEntry {
  task?: Task;
  problem?: string;
}

/**
 * The filesystem queue. Every move between states is a rename, which is atomic and exclusive: of two processes
 * renaming the same file, one wins and the other gets ENOENT. File names are the index: dedup, rate limits,
 * listings and stats read names and never parse YAML.
 */
export class FileTaskQueue implements TaskQueue {
  readonly #listings = new Map<TaskState, StateListing>();
  readonly #runningListings = new Map<TaskState, Promise<StateListing>>();
  readonly #queuedListings = new Map<TaskState, Promise<StateListing>>();
  /**
   * When each file in done/ and failed/ got there (its mtime), by path: a finished task's file is not written again
   * where it is, so a listing stats only the files it has not seen before instead of every finished task each time.
   */
  readonly #finishTimes = new Map<string, number>();
  readonly paths: QueuePaths;
  readonly dataDirectory: string;
  readonly durability: Durability;
  /** Group commit: one fsync of a directory serves every write into it that is waiting for one. */
  readonly directorySyncs = new DirectorySyncs();
  readonly maxTaskBytes: number;
  readonly retention: QueueConfig['retention'];
  readonly policies: QueueConfig['policies'];
  readonly logger: QueueLogger;
  readonly workers: FileWorkerDirectory;
  readonly claimGraceMs: number;
  readonly tmpMaxAgeMs: number;
  readonly now: () => number;

  private constructor(options: FileTaskQueueOptions) {
    const settings = options.settings ?? {};
    this.paths = queuePaths(path.resolve(options.directory));
    this.dataDirectory = path.resolve(options.dataDirectory ?? path.dirname(this.paths.root));
    this.durability = settings.durability ?? 'os';
    this.maxTaskBytes = settings.maxTaskBytes ?? 1_048_576;
    this.retention = settings.retention ?? defaultRetention;
    this.policies = settings.policies ?? { defaults: defaultPolicy, overrides: {} };
    this.logger = options.logger ?? silentLogger;
    this.workers = new FileWorkerDirectory({
      directory: this.paths.workers,
      tmpDir: this.paths.tmp,
      durability: this.durability,
      leaseMs: options.leaseMs ?? 60_000,
    });
    this.claimGraceMs = options.claimGraceMs ?? options.settings?.claimGraceMs ?? 30_000;
    this.tmpMaxAgeMs = options.tmpMaxAgeMs ?? 3_600_000;
    this.now = options.now ?? Date.now;
  }

  /** Opens the queue at `directory`, creating its directories when missing. */
  static async open(options: FileTaskQueueOptions): Promise<FileTaskQueue> {
    const queue = new FileTaskQueue(options);
    const { root, ...directories } = queue.paths;
    // 0o700: tasks hold mail and issue text, which is nobody else's business on a shared machine.
    await mkdir(root, { recursive: true, mode: 0o700 });
    for (const directory of Object.values(directories)) await mkdir(directory, { recursive: true, mode: 0o700 });
    return queue;
  }

  policyFor(type: string): QueuePolicy {
    return resolvePolicy(this.policies, type);
  }

  consumer(options: TaskConsumerOptions = {}): TaskConsumer {
    return new FileTaskConsumer(this, options);
  }

  events(): TaskEvents {
    return new FileTaskEvents(this.paths);
  }

  async close(): Promise<void> {}

  /** Where a person finds a file: relative to the data directory, or `queue/…` when the queue lives elsewhere. */
  locationOf(file: string): string {
    const fromData = path.relative(this.dataDirectory, file);
    const shown =
      fromData !== '' && !fromData.startsWith('..') && !path.isAbsolute(fromData)
        ? fromData
        : path.join('queue', path.relative(this.paths.root, file));
    return shown.split(path.sep).join('/');
  }

  /** The public view of a listed file. */
  toEntry(entry: FileEntry, location: string = this.locationOf(entry.path)): TaskEntry {
    const worker = entry.state === 'active' ? parseActiveName(entry.fileName).ownerId : undefined;
    return {
      state: entry.state,
      location,
      name: entry.name,
      ...(entry.finishedAtMs === undefined ? {} : { finishedAtMs: entry.finishedAtMs }),
      ...(worker === undefined ? {} : { worker }),
    };
  }

  toRecord(record: FileRecord): TaskRecord {
    return {
      ...this.toEntry(record),
      ...(record.task ? { task: record.task } : {}),
      ...(record.problem !== undefined ? { problem: record.problem } : {}),
    };
  }

  // ------------------------------------------------------------------------------------------------ enqueue

  async enqueue(options: EnqueueOptions): Promise<EnqueueOutcome> {
    const checked = checkEnqueue(options);
    const { type, priority, source, fingerprint } = checked;
    const nowMs = this.now();
    const policy = this.policyFor(type);
    if (checked.usePolicies) {
      const rejection = await this.#checkPolicies(type, fingerprint, policy, nowMs);
      if (rejection) {
        this.logger.info(`enqueue ${type} (${source}) skipped: ${rejection.reason}`);
        return rejection;
      }
    }
    const id = newTaskId(nowMs);
    const readyAtMs = Math.max(0, Math.floor(options.readyAtMs ?? nowMs));
    const task = newTask(checked, { id, nowMs, readyAtMs, policy, integration: options.integration });
    const fileName = encodeTaskName({ priority, readyAtMs, id, fingerprint, type });
    const text = stringifyTask(task);
    this.#assertSize(text, type);
    const target = path.join(this.paths.pending, fileName);
    // Acknowledged means durable, whatever the durability setting: the caller is told `enqueued` only once the
    // name is on disk in pending/. Concurrent enqueues share the directory's fsync (group commit).
    await writeFileDurably({
      tmpDir: this.paths.tmp,
      target,
      text,
      directorySyncs: this.directorySyncs,
      tmpName: taskTmpName('pending', fileName, text),
    });
    this.#cameIntoPending(target);
    return { status: 'enqueued', task, location: this.locationOf(target) };
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

  async #checkPolicies(
    type: string,
    fingerprint: string,
    policy: QueuePolicy,
    nowMs: number,
  ): Promise<Exclude<EnqueueOutcome, { status: 'enqueued' }> | undefined> {
    if (policy.dedup) {
      for (const state of ['pending', 'active'] as const) {
        const existing = await this.#duplicateIn(state, fingerprint);
        if (existing) {
          return {
            status: 'duplicate',
            reason: `an identical ${type} task is already ${state} (${existing})`,
            existing,
          };
        }
      }
    }
    if (policy.rateLimit) {
      const { max, perMs } = policy.rateLimit;
      const since = nowMs - perMs;
      // The id's first ten characters are its creation time, so the window is counted from names alone.
      const created: number[] = [];
      for (const state of taskStates) {
        for (const name of (await this.#listing(state)).decoded.values()) {
          if (name.type !== type) continue;
          const createdMs = taskIdTimeMs(name.id);
          if (createdMs > since) created.push(createdMs);
        }
      }
      if (created.length >= max) {
        created.sort((left, right) => left - right);
        const retryAtMs = (created[created.length - max] ?? nowMs) + perMs;
        return {
          status: 'rate_limited',
          reason: `${created.length} ${type} tasks created in the last ${Math.round(perMs / 1000)}s; the limit is ${max}`,
          retryAtMs,
        };
      }
    }
    return undefined;
  }

  // ----------------------------------------------------------------------------------------------- reading

  /**
   * The id of a task in `state` with this fingerprint. While a queue drains, pending/ changes with every enqueue and
   * claim, and listing 10,000 names for every enqueue's dedup check was most of a worker's CPU; so the check uses a
   * listing up to {@link dedupListingMaxAgeMs} old, with this process's own enqueues added to it at once. A match is
   * confirmed on disk (a task claimed or finished since is listed again, never taken for a duplicate), so a stale
   * listing can only miss a task another process added within that second: the race two processes enqueuing the same
   * task at once have anyway. active/ is small and always listed exactly.
   */
  async #duplicateIn(state: 'pending' | 'active', fingerprint: string): Promise<string | undefined> {
    // Only pending/ grows deep; active/ holds what workers run now and is always listed as it is.
    const cached = state === 'pending' ? this.#listings.get(state) : undefined;
    const recent = cached !== undefined && Date.now() - cached.listedAtMs < dedupListingMaxAgeMs;
    const listing = recent ? cached : await this.#listing(state);
    const id = listing.byFingerprint.get(fingerprint);
    if (id === undefined) return undefined;
    const fileName = listing.byId.get(id);
    if (!recent || (fileName !== undefined && (await pathExists(path.join(this.paths[state], fileName))))) return id;
    return (await this.#freshListing(state)).byFingerprint.get(fingerprint);
  }

  /**
   * A file this process just put into pending/ (an enqueue, a retry, a requeue, a recovery) goes into the dedup
   * listing at once, however recently that was taken: only other processes' additions can be missed by it.
   */
  #cameIntoPending(target: string): void {
    if (path.dirname(target) !== this.paths.pending) return;
    const listing = this.#listings.get('pending');
    if (listing !== undefined) addName(listing, 'pending', path.basename(target));
  }

  async #names(state: TaskState): Promise<readonly string[]> {
    return (await this.#listing(state)).names;
  }

  /**
   * The index of a state's directory: its names, by id and by fingerprint. Kept while the directory's mtime is
   * unchanged (every create, rename or removal in it changes that, whichever process made it), so a lookup on a quiet
   * queue costs one stat per state instead of a listing. A directory changed within the last {@link settleMs} is
   * listed again on every use: a coarse filesystem clock could give two changes in a row the same mtime.
   */
  async #listing(state: TaskState): Promise<StateListing> {
    const info = await stat(this.paths[state], { bigint: true }).catch(() => undefined);
    const cached = this.#listings.get(state);
    if (cached?.settled && info && cached.mtimeNs === info.mtimeNs) return cached;
    return this.#freshListing(state);
  }

  /**
   * A listing that starts after this call: joins one that is queued and not started yet, else queues one after the
   * listing now running. However many lookups arrive at once (a burst of API reads on a busy queue), at most one
   * listing per state runs and one waits.
   */
  #freshListing(state: TaskState): Promise<StateListing> {
    const queued = this.#queuedListings.get(state);
    if (queued) return queued;
    const running = this.#runningListings.get(state);
    const next = (running ?? Promise.resolve())
      .catch(() => undefined)
      .then(() => {
        this.#queuedListings.delete(state);
        const run = this.#list(state);
        this.#runningListings.set(state, run);
        const clear = () => {
          if (this.#runningListings.get(state) === run) this.#runningListings.delete(state);
        };
        run.then(clear, clear);
        return run;
      });
    this.#queuedListings.set(state, next);
    return next;
  }

  async #list(state: TaskState): Promise<StateListing> {
    const directory = this.paths[state];
    // The mtime before the listing: a change during it makes the next stat differ, so it is never missed.
    const info = await stat(directory, { bigint: true }).catch(() => undefined);
    let names: string[];
    try {
      names = await readdir(directory);
    } catch (error) {
      if (!isMissing(error)) throw error;
      names = [];
    }
    const mtimeNs = info?.mtimeNs ?? -1n;
    const settled = info !== undefined && Date.now() - Number(info.mtimeMs) > settleMs;
    const previous = this.#listings.get(state);
    // While a queue drains, pending/ changes with every enqueue and claim, and a dedup check lists it each time:
    // rebuilding the index of 10,000 names per enqueue was most of a worker's CPU. Names are immutable (a task that
    // moves gets a new one), so the previous index is brought up to date with what came and went instead. An index
    // holding two files of one id or fingerprint (a crash's leftover, identical manual enqueues) is rebuilt in full,
    // so removing one of them cannot hide the other.
    const listing =
      previous !== undefined && !previous.duplicates
        ? updatedListing(previous, state, names)
        : builtListing(state, names, previous?.decoded);
    listing.mtimeNs = mtimeNs;
    listing.settled = settled;
    listing.listedAtMs = Date.now();
    this.#listings.set(state, listing);
    return listing;
  }

  /** Task files in a state: every `.yaml` name, plus in failed/ quarantined files that have a reason beside them. */
  async entries(state: TaskState): Promise<FileEntry[]> {
    const listing = await this.#listing(state);
    const names = listing.names;
    const reasons = new Set(names.filter((fileName) => fileName.endsWith(reasonSuffix)));
    const entries: FileEntry[] = [];
    for (const fileName of names) {
      if (fileName.endsWith(reasonSuffix)) continue;
      // The listing decoded every name once; decoding again on each call made stats() cost tens of ms at 10k tasks.
      const name = listing.decoded.get(fileName);
      if (!name && !(state === 'failed' && reasons.has(fileName + reasonSuffix))) continue;
      entries.push({ state, fileName, path: path.join(this.paths[state], fileName), name });
    }
    return entries;
  }

  /** Lists tasks from their names: pending and active in run order, done and failed newest first. */
  async list(options: ListOptions = {}): Promise<TaskEntry[]> {
    // Each state's location prefix once, not a path.relative per task: a listing may hold every finished task.
    const prefixes = new Map<TaskState, string>();
    return (await this.listFiles(options)).map((entry) => {
      if (path.dirname(entry.path) !== this.paths[entry.state]) return this.toEntry(entry);
      let prefix = prefixes.get(entry.state);
      if (prefix === undefined) {
        prefix = this.locationOf(path.join(this.paths[entry.state], 'x')).slice(0, -1);
        prefixes.set(entry.state, prefix);
      }
      return this.toEntry(entry, `${prefix}${entry.fileName}`);
    });
  }

  async listFiles(options: ListOptions = {}): Promise<FileEntry[]> {
    const finishedOnly = options.finishedSinceMs !== undefined;
    const states = (options.state ? [options.state] : taskStates).filter(
      (state) => !finishedOnly || state === 'done' || state === 'failed',
    );
    const matcher = options.type === undefined ? undefined : typeMatcher(options.type);
    const result: FileEntry[] = [];
    for (const state of states) {
      let entries = await this.entries(state);
      if (matcher) entries = entries.filter((entry) => entry.name !== undefined && matcher(entry.name.type));
      if (state === 'pending' || state === 'active') {
        entries.sort((left, right) => compareStrings(left.fileName, right.fileName));
      } else {
        entries = await this.#withFinishTimes(state, entries, matcher === undefined);
        if (options.finishedSinceMs !== undefined) {
          const since = options.finishedSinceMs;
          entries = entries.filter((entry) => (entry.finishedAtMs ?? 0) >= since);
        }
        entries.sort(
          (left, right) =>
            (right.finishedAtMs ?? 0) - (left.finishedAtMs ?? 0) || compareStrings(right.fileName, left.fileName),
        );
      }
      result.push(...entries);
    }
    return options.limit === undefined ? result : result.slice(0, options.limit);
  }

  /** The entries with their finish times: remembered ones, and a stat of each file not seen before. */
  async #withFinishTimes(state: 'done' | 'failed', entries: FileEntry[], whole: boolean): Promise<FileEntry[]> {
    const known = this.#finishTimes;
    const unknown = entries.filter((entry) => !known.has(entry.path));
    await Promise.all(
      unknown.map(async (entry) => {
        const info = await lstat(entry.path).catch(() => undefined);
        if (info) known.set(entry.path, info.mtimeMs);
      }),
    );
    const withTimes = entries.map((entry) => ({ ...entry, finishedAtMs: known.get(entry.path) ?? 0 }));
    // Forget files that left this state (pruned, retried), so the memory follows the folder's size; only a listing
    // of the whole folder knows which left (a type filter leaves the other types' files out).
    if (!whole) return withTimes;
    const present = new Set(entries.map((entry) => entry.path));
    const prefix = this.paths[state] + path.sep;
    for (const file of known.keys()) {
      if (file.startsWith(prefix) && !present.has(file)) known.delete(file);
    }
    return withTimes;
  }

  /** Finds a task by id in any state and reads it. */
  async get(id: string): Promise<TaskRecord | undefined> {
    const record = await this.getFile(id);
    return record && this.toRecord(record);
  }

  /** By the index: one stat per state and one read. A file that moved meanwhile sends it to the directory again. */
  async getFile(id: string): Promise<FileRecord | undefined> {
    for (let attempt = 0; attempt < 5; attempt += 1) {
      let moved = false;
      for (const state of taskStates) {
        const listing = await this.#listing(state);
        const fileName = listing.byId.get(id);
        if (fileName === undefined) continue;
        const record = await this.read({
          state,
          fileName,
          path: path.join(this.paths[state], fileName),
          name: listing.decoded.get(fileName),
        });
        if (record.problem !== movedWhileReading) return record;
        // Stale: it moved on since the listing. Forget it and look again in every state.
        this.#listings.delete(state);
        moved = true;
        break;
      }
      if (!moved) return undefined;
    }
    return undefined;
  }

  async reroute(id: string): Promise<Task> {
    const record = await this.getFile(id);
    if (!record) throw new AssistantError('NOT_FOUND', `no task with id ${id}`);
    if (record.state !== 'done') {
      throw new AssistantError('CONFLICT', `task ${id} is ${record.state}; only a done task has a result to route`);
    }
    if (!record.task) {
      throw new AssistantError('CONFLICT', `task ${id} cannot be read: ${record.problem ?? 'unknown problem'}`);
    }
    return record.task;
  }

  /** Reads a listed task's file; a file that cannot be read as a task comes back with `problem`. */
  async read(entry: FileEntry): Promise<FileRecord> {
    let text: string;
    try {
      text = await readTaskText(entry.path, this.maxTaskBytes);
    } catch (error) {
      if (isMissing(error)) return { ...entry, problem: movedWhileReading };
      if (error instanceof TaskFileError) return { ...entry, problem: error.message };
      throw error;
    }
    const reason = await readTaskText(entry.path + reasonSuffix, maxReasonBytes).catch(() => undefined);
    if (!entry.name) return { ...entry, problem: reason?.trim() ?? 'the file name is not a task name' };
    try {
      return { ...entry, task: this.parseTask(text, entry.name) };
    } catch (error) {
      if (error instanceof TaskFileError) return { ...entry, problem: reason?.trim() ?? error.message };
      throw error;
    }
  }

  /** Reads a task file's text with this queue's limits and defaults; throws TaskFileError when it is not a task. */
  parseTask(text: string, name: TaskName): Task {
    return parseTaskFile(text, {
      name,
      defaultMaxAttempts: this.policyFor(name.type).maxAttempts,
      maxBytes: this.maxTaskBytes,
      createdAtMs: taskIdTimeMs(name.id),
    });
  }

  async stats(): Promise<QueueStats> {
    const nowMs = this.now();
    const stats = emptyQueueStats();
    for (const state of taskStates) {
      const entries = await this.entries(state);
      stats[state] = entries.length;
      const types = stats.typesByState[state];
      for (const entry of entries) {
        const type = entry.name?.type ?? 'unreadable';
        types[type] = (types[type] ?? 0) + 1;
      }
      if (state !== 'pending' && state !== 'active') continue;
      for (const entry of entries) {
        if (!entry.name) continue;
        const counts = stats.byType[entry.name.type] ?? { pending: 0, active: 0 };
        stats.byType[entry.name.type] = counts;
        counts[state] += 1;
        if (state === 'pending') {
          if (entry.name.readyAtMs <= nowMs) stats.ready += 1;
          else stats.scheduled += 1;
        }
      }
    }
    return stats;
  }

  /** True when no pending task is ready and none is active: nothing would run now. */
  async isIdle(): Promise<boolean> {
    if ((await this.entries('active')).length > 0) return false;
    const nowMs = this.now();
    const nothingReady = (await this.entries('pending')).every(
      (entry) => entry.name !== undefined && entry.name.readyAtMs > nowMs,
    );
    // Active again: a task claimed between the two listings was in neither of them.
    return nothingReady && (await this.entries('active')).length === 0;
  }

  // --------------------------------------------------------------------------------------------- transitions

  /** failed → pending, ready now, with a fresh set of attempts. The history of earlier attempts is kept. */
  async retry(id: string): Promise<TaskRecord> {
    const record = await this.getFile(id);
    if (!record) throw new AssistantError('NOT_FOUND', `no task with id ${id}`);
    if (record.state !== 'failed') {
      throw new AssistantError('CONFLICT', `task ${id} is ${record.state}; only failed tasks can be retried`);
    }
    if (!record.task || !record.name) {
      throw new AssistantError('BAD_REQUEST', `task ${id} cannot be read: ${record.problem ?? 'unknown problem'}`, {
        hint: `fix ${this.locationOf(record.path)} by hand and move it into pending/`,
      });
    }
    const { name, fileName } = requeuedTaskName(record.name, this.now());
    const task: Task = { ...record.task, attempts: 0, readyAt: new Date(name.readyAtMs).toISOString() };
    delete task.startedAt;
    delete task.finishedAt;
    delete task.worker;
    delete task.error;
    delete task.result;
    // Rewrite in place, then one rename: the task is in exactly one directory at every instant. The rename is made
    // durable before the call returns: a retry is acknowledged like an enqueue.
    await this.rewrite(record.path, task);
    await this.move(record.path, path.join(this.paths.pending, fileName), { durable: true });
    await unlink(record.path + reasonSuffix).catch(ignoreMissing);
    this.logger.info(`task ${id} (${task.type}) retried by hand`);
    return { state: 'pending', location: this.locationOf(path.join(this.paths.pending, fileName)), name, task };
  }

  /**
   * Puts a task record in as it is (id, attempts, history), for `assistant queue migrate`. An active task comes in
   * pending, its attempt not counted again: whoever held it is on the other backend. `exists` when the id is here
   * already in any state, which makes a migration that stopped halfway safe to run again.
   */
  async importTask(task: Task, state: TaskState): Promise<'imported' | 'exists'> {
    if (await this.getFile(task.id)) return 'exists';
    // Through the reader the worker uses: what is imported is what a claim will read back.
    const imported = checkTaskRecord(task, this.maxTaskBytes);
    const target: TaskState = state === 'active' ? 'pending' : state;
    if (state === 'active') {
      delete imported.startedAt;
      delete imported.worker;
    }
    const fileName = encodeTaskName({
      priority: imported.priority,
      readyAtMs: Date.parse(imported.readyAt),
      id: imported.id,
      fingerprint: taskFingerprint(imported.type, imported.payload),
      type: imported.type,
    });
    await this.writeTo(target, fileName, imported);
    return 'imported';
  }

  /**
   * Deletes a task in any state but active (a running task is stopped through steering, not pulled from under its
   * worker): CONFLICT for an active one, false when there is no such task.
   */
  async remove(id: string): Promise<boolean> {
    const record = await this.getFile(id);
    if (!record) return false;
    if (record.state === 'active') {
      throw new AssistantError('CONFLICT', `task ${id} is running; stop it before removing it`);
    }
    const removed = await this.removeFile(record.path);
    if (record.state === 'failed') await unlink(record.path + reasonSuffix).catch(ignoreMissing);
    return removed;
  }

  /**
   * Replaces a task file's content atomically and durably: file and name are on disk when it returns, whatever the
   * durability setting, so the file a task leaves may be removed after it (a finished task never vanishes: either
   * the next state's file or the one it left is there after a power cut, and recovery removes a leftover copy).
   * In tmp/ it is named after where it goes, so recovery can put it there if a crash stops it before the rename.
   */
  async rewrite(target: string, task: Task): Promise<void> {
    const directory = path.dirname(target);
    const state = (['pending', 'done', 'failed'] as const).find((candidate) => this.paths[candidate] === directory);
    const text = stringifyTask(task);
    await writeFileDurably({
      tmpDir: this.paths.tmp,
      target,
      text,
      directorySyncs: this.directorySyncs,
      ...(state === undefined ? {} : { tmpName: taskTmpName(state, path.basename(target), text) }),
    });
    this.#cameIntoPending(target);
  }

  /** Writes a task's new content straight into another state's directory (done/, failed/, pending/), durably. */
  async writeTo(state: TaskState, fileName: string, task: Task): Promise<string> {
    const target = path.join(this.paths[state], fileName);
    await this.rewrite(target, task);
    return target;
  }

  /**
   * Renames a task file between state directories; under strict durability both directories are synced, and with
   * `durable` the target's is whatever the setting (the move is acknowledged to someone: a retry).
   */
  async move(from: string, to: string, options: { durable?: boolean } = {}): Promise<void> {
    await rename(from, to);
    this.#cameIntoPending(to);
    if (this.durability === 'strict' || options.durable) await this.directorySyncs.sync(path.dirname(to));
    if (this.durability === 'strict' && path.dirname(from) !== path.dirname(to)) {
      await this.directorySyncs.sync(path.dirname(from));
    }
  }

  async removeFile(file: string): Promise<boolean> {
    try {
      await unlink(file);
    } catch (error) {
      if (isMissing(error)) return false;
      throw error;
    }
    if (this.durability === 'strict') await this.directorySyncs.sync(path.dirname(file));
    return true;
  }

  /**
   * Removes a stale copy of a task (another file of its id is the current one), durably, and says so: a power cut
   * or a hand copy left it, and running it would run the task twice.
   */
  async removeStaleCopy(file: string, reason: string): Promise<boolean> {
    try {
      await unlink(file);
    } catch (error) {
      if (isMissing(error)) return false;
      throw error;
    }
    await this.directorySyncs.sync(path.dirname(file));
    this.logger.warn(`${path.relative(this.paths.root, file)} removed: ${reason}`);
    return true;
  }

  /**
   * Moves a file that cannot be run into failed/, bytes untouched, with the reason in `{name}.error.txt` beside
   * it. Returns false when the file had already gone (another worker dealt with it).
   */
  async quarantine(from: string, reason: string): Promise<boolean> {
    // A claim's name in active/ carries its owner: in failed/ the file goes under its task name again.
    const fileName =
      path.dirname(from) === this.paths.active
        ? parseActiveName(path.basename(from)).taskFileName
        : path.basename(from);
    let target = path.join(this.paths.failed, fileName);
    try {
      await this.move(from, target);
    } catch (error) {
      if (isMissing(error)) return false;
      // failed/ already holds something of that name that a rename cannot replace (a directory, or a file where
      // a directory is going): set it aside under a name of its own, with the reason beside it all the same.
      if (!isNameClash(error)) throw error;
      target = path.join(this.paths.failed, `${fileName}.${randomBytes(4).toString('hex')}.quarantined`);
      try {
        await this.move(from, target);
      } catch (retryError) {
        if (isMissing(retryError)) return false;
        throw retryError;
      }
    }
    await writeFileDurably({
      tmpDir: this.paths.tmp,
      target: target + reasonSuffix,
      text: `${reason}\n`,
      directorySyncs: this.durability === 'strict' ? this.directorySyncs : undefined,
    });
    const where = path.relative(this.paths.root, target);
    this.logger.warn(
      `${path.relative(this.paths.root, from)} moved to ${where === `failed/${fileName}` ? 'failed/' : where}: ${reason}`,
    );
    return true;
  }

  /** Removes a file of done/ or failed/, or a directory quarantined there, without following links. */
  async #removeEntry(file: string): Promise<boolean> {
    const info = await lstat(file).catch(() => undefined);
    if (!info) return false;
    if (!info.isDirectory()) return this.removeFile(file);
    await rm(file, { recursive: true, force: true });
    if (this.durability === 'strict') await this.directorySyncs.sync(path.dirname(file));
    return true;
  }

  // ------------------------------------------------------------------------------------------------ recovery

  /**
   * Returns tasks whose worker is gone to pending/, counting the attempt the worker spent (a claim writes nothing:
   * the file holds the attempts before it), or to failed/ with `worker died` once their attempts are spent; removes
   * active/ copies of tasks whose next state was already written (done/, failed/, or pending/ for a retry); quarantines unreadable files; sweeps stale tmp/ files. Safe to run from several processes at once:
   * every move is a rename, and a rename that loses the race is skipped.
   * Before that it puts back complete tasks a crash left in tmp/; after it, it leaves one file per task where a power
   * cut or a hand copy left two (pending/ against the others; against done/ and failed/ too unless `periodic`, a
   * worker's sweep every 15 s, which would otherwise list those big directories each time).
   */
  async recover(options: { skipOwner?: string; periodic?: boolean } = {}): Promise<RecoveryReport> {
    const report: RecoveryReport = { requeued: [], failed: [], removedDuplicates: [], quarantined: [], removedTmp: 0 };
    const nowMs = this.now();
    // Only a claim of the old layout (no owner in its name) needs the finished ids: listing done/ and failed/ (tens of
    // thousands of names after a big drain) on every sweep cost a worker CPU and kept their listings in memory.
    let finished: Promise<ReadonlySet<string>> | undefined;
    const finishedIds = () => {
      finished ??= (async () => {
        const ids = new Set<string>();
        for (const state of ['done', 'failed'] as const) {
          for (const entry of await this.entries(state)) if (entry.name) ids.add(entry.name.id);
        }
        return ids;
      })();
      return finished;
    };
    await this.#restoreTmp(nowMs);
    for (const fileName of await this.#names('active')) {
      try {
        await this.#recoverActive(fileName, nowMs, finishedIds, report, options);
      } catch (error) {
        // One entry that cannot be dealt with (no permission, a mount point) must not stop the rest, nor a worker
        // from starting: it is reported and looked at again on the next pass.
        this.logger.warn(`recovery skipped active/${fileName}: ${(error as Error).message}`);
      }
    }
    await this.#resolveDuplicates(report, { withFinished: options.periodic !== true });
    await this.#sweepParkedMarkers();
    report.removedTmp = await this.sweepTmp(nowMs);
    await this.workers.pruneGone(nowMs);
    return report;
  }

  /**
   * Removes the parked markers whose claim is no longer in active/ (a worker that stopped between a task leaving
   * active/ and its marker's removal). parked/ is listed before active/: a marker is written only while its claim is
   * there, so a claim missing from the later listing has left for good, and its marker can never count for another.
   */
  async #sweepParkedMarkers(): Promise<void> {
    const markers = await readdir(this.paths.parked).catch(() => [] as string[]);
    if (markers.length === 0) return;
    const claims = new Set<string>();
    // A listing of its own, not the cached one: it must come after parked/'s.
    for (const fileName of await readdir(this.paths.active)) {
      const active = parseActiveName(fileName);
      if (active.ownerId !== undefined) claims.add(activeFileName(active.taskFileName, active.ownerId));
    }
    for (const marker of markers) {
      if (claims.has(marker) || isScratchName(marker)) continue;
      await unlink(path.join(this.paths.parked, marker)).catch((error: unknown) => {
        if (!isMissing(error)) this.logger.warn(`recovery skipped parked/${marker}: ${(error as Error).message}`);
      });
    }
  }

  /**
   * Puts back each complete task file a crash left in tmp/ before its rename: its name there says where it was
   * going and the digest of what it holds in full (see taskTmpName), so a torn write is never taken for a task.
   * Only once it is older than the lease: a writer renames its file moments after writing it, so one that has not
   * by then is gone, or stalled like a gone worker. A file whose task is already there or further on (done/ or
   * failed/, or a later version in pending/ or active/) is removed instead; a torn one is left for the tmp sweep.
   */
  async #restoreTmp(nowMs: number): Promise<void> {
    for (const tmpName of await readdir(this.paths.tmp).catch(() => [])) {
      const destination = parseTaskTmpName(tmpName);
      const name = destination && decodeTaskName(destination.fileName);
      if (!destination || !name) continue;
      const file = path.join(this.paths.tmp, tmpName);
      try {
        const info = await lstat(file).catch(() => undefined);
        if (!info?.isFile() || nowMs - info.mtimeMs <= this.workers.leaseMs) continue;
        try {
          const text = await readTaskText(file, this.maxTaskBytes);
          if (!isCompleteTmpText(destination.digest, text)) continue;
          this.parseTask(text, name);
        } catch (error) {
          if (isMissing(error) || error instanceof TaskFileError) continue;
          throw error;
        }
        if (await this.#isBehind(name, destination.state)) {
          await unlink(file).catch(ignoreMissing);
          continue;
        }
        const target = path.join(this.paths[destination.state], destination.fileName);
        await this.move(file, target, { durable: true });
        this.logger.warn(
          `task ${name.id} (${name.type}) put back into ${destination.state}/ from tmp/: a crash stopped its write before the rename`,
        );
      } catch (error) {
        this.logger.warn(`recovery skipped tmp/${tmpName}: ${(error as Error).message}`);
      }
    }
  }

  /** True when the task of `name`, going to `state`, is already there or further on in another file. */
  async #isBehind(name: TaskName, state: 'pending' | 'done' | 'failed'): Promise<boolean> {
    for (const finished of ['done', 'failed'] as const) {
      if ((await this.#listing(finished)).byId.has(name.id)) return true;
    }
    if (state !== 'pending') return false;
    for (const other of ['pending', 'active'] as const) {
      const listing = await this.#listing(other);
      const current = listing.decoded.get(listing.byId.get(name.id) ?? '');
      if (current && current.readyAtMs >= name.readyAtMs) return true;
    }
    return false;
  }

  /**
   * Leaves one file per task in pending/. A power cut can keep a move and lose the claim's rename before it (a task
   * then in pending/ and in done/, or in pending/ twice after a retry), and a hand copy does the same; each copy
   * would run. A file in pending/ goes when its task is in done/ or failed/ (looked up only `withFinished`), or when
   * another file of it in pending/ or active/ is a later version: a later ready time (every return to pending/ takes
   * one), a claim of the same name, or else the greater name. Files in active/ are left to their owners and to
   * #recoverActive.
   */
  async #resolveDuplicates(report: RecoveryReport, options: { withFinished: boolean }): Promise<void> {
    // pending/ first: a retry (failed/x → pending/y) made during the listings then shows in one of them or in
    // neither, never as a stale failed/x beside the fresh pending/y, which would remove the retried task.
    const pending = await this.#listing('pending');
    const active = await this.#listing('active');
    const ids = new Set<string>();
    let finished: Set<string> | undefined;
    if (options.withFinished) {
      finished = new Set();
      for (const state of ['done', 'failed'] as const) {
        for (const id of (await this.#listing(state)).byId.keys()) finished.add(id);
      }
    }
    if (pending.duplicates || finished !== undefined) {
      const seen = new Set<string>();
      for (const name of pending.decoded.values()) {
        if (seen.has(name.id) || finished?.has(name.id)) ids.add(name.id);
        seen.add(name.id);
      }
    }
    for (const name of active.decoded.values()) if (pending.byId.has(name.id)) ids.add(name.id);
    if (ids.size === 0) return;
    interface Copy {
      fileName: string;
      name: TaskName;
      active: boolean;
    }
    const later = (left: Copy, right: Copy) =>
      left.name.readyAtMs !== right.name.readyAtMs
        ? left.name.readyAtMs > right.name.readyAtMs
        : left.active !== right.active
          ? left.active
          : left.fileName > right.fileName;
    const latest = new Map<string, Copy>();
    const copies: Copy[] = [];
    const offer = (copy: Copy) => {
      const current = latest.get(copy.name.id);
      if (!current || later(copy, current)) latest.set(copy.name.id, copy);
    };
    for (const [fileName, name] of active.decoded) if (ids.has(name.id)) offer({ fileName, name, active: true });
    for (const [fileName, name] of pending.decoded) {
      if (!ids.has(name.id)) continue;
      const copy = { fileName, name, active: false };
      copies.push(copy);
      offer(copy);
    }
    for (const copy of copies) {
      const current = latest.get(copy.name.id);
      const reason = finished?.has(copy.name.id)
        ? `task ${copy.name.id} (${copy.name.type}) is finished already (in done/ or failed/); a power cut or a copy left this one`
        : current !== undefined && current !== copy
          ? `a later version of task ${copy.name.id} (${copy.name.type}) is ${current.active ? 'active' : 'pending'}/${current.fileName}; a power cut or a copy left this one`
          : undefined;
      if (reason === undefined) continue;
      try {
        if (await this.removeStaleCopy(path.join(this.paths.pending, copy.fileName), reason)) {
          report.removedDuplicates.push(copy.name.id);
        }
      } catch (error) {
        this.logger.warn(`recovery skipped pending/${copy.fileName}: ${(error as Error).message}`);
      }
    }
  }

  /** One entry of active/ in a recovery pass. */
  async #recoverActive(
    fileName: string,
    nowMs: number,
    finishedIds: () => Promise<ReadonlySet<string>>,
    report: RecoveryReport,
    options: { skipOwner?: string },
  ): Promise<void> {
    const file = path.join(this.paths.active, fileName);
    // lstat: a link is judged as a link, never by what it points at (a dangling one would look absent forever).
    const info = await lstat(file).catch(() => undefined);
    if (!info) return;
    if (!info.isFile()) {
      // No claim ever leaves one of these in active/ (a claimer quarantines what it cannot read at once), so there
      // is no owner to wait for: a directory, FIFO or link here is set aside now.
      const reason = `${describeFileKind(info)}, not a regular file; only regular files are tasks`;
      if (await this.quarantine(file, reason)) report.quarantined.push(this.locationOf(file));
      return;
    }
    // Whole milliseconds, as the clock reads them: a file renamed this very millisecond is 0 ms old, not -0.4.
    const arrivedMs = Math.floor(info.ctimeMs);
    const active = parseActiveName(fileName);
    if (active.ownerId !== undefined && decodeTaskName(active.taskFileName)) {
      await this.#recoverOwned(file, active, arrivedMs, nowMs, report, options);
      return;
    }
    const name = decodeTaskName(fileName);
    if (!name) {
      if (nowMs - arrivedMs >= this.claimGraceMs) {
        if (await this.quarantine(file, 'the file name is not a task name')) {
          report.quarantined.push(this.locationOf(file));
        }
      }
      return;
    }
    // A claim of the layout before: its owner is recorded inside the file, a moment after the rename.
    let task: Task;
    try {
      task = this.parseTask(await readTaskText(file, this.maxTaskBytes), name);
    } catch (error) {
      if (isMissing(error)) return;
      if (!(error instanceof TaskFileError)) throw error;
      if (nowMs - arrivedMs >= this.claimGraceMs && (await this.quarantine(file, error.message))) {
        report.quarantined.push(this.locationOf(file));
      }
      return;
    }
    if (task.worker?.id === options.skipOwner && options.skipOwner !== undefined) return;
    // A live owner finishes its own work, including removing active/x after writing done/x.
    if (task.worker && (await this.workers.liveness(task.worker, nowMs)) === 'alive') return;
    // Renamed into active/ moments ago: its claimer may not have recorded itself as the owner yet.
    if (nowMs - arrivedMs < this.claimGraceMs) return;
    // Its owner wrote done/x (or failed/x) and died before removing active/x: the finished copy wins.
    if ((await finishedIds()).has(name.id)) {
      if (await this.removeFile(file)) report.removedDuplicates.push(name.id);
      return;
    }
    const diedAt = new Date(nowMs).toISOString();
    const deathHistory = [...task.history, ...attemptOf(task, diedAt, workerDiedError(task))];
    const death = decideAfterWorkerDied(deathHistory);
    if (task.attempts >= task.maxAttempts || death.outcome === 'poisoned') {
      const target = path.join(this.paths.failed, fileName);
      try {
        await this.move(file, target);
      } catch (error) {
        if (isMissing(error)) return;
        throw error;
      }
      const error = death.outcome === 'poisoned' ? death.error : workerDiedError(task);
      await this.rewrite(target, { ...task, finishedAt: diedAt, error, history: deathHistory });
      report.failed.push(task.id);
      this.logger.warn(
        `task ${task.id} (${task.type}) failed: ${error.message}${death.outcome === 'poisoned' ? '' : '; no attempts left'}`,
      );
    } else {
      // Under a new name (ready now): a recoverer that read active/x a moment ago cannot touch the next claim.
      const requeued = requeuedTaskName(name, nowMs);
      try {
        await this.move(file, path.join(this.paths.pending, requeued.fileName));
      } catch (error) {
        if (isMissing(error)) return;
        throw error;
      }
      report.requeued.push(task.id);
      this.logger.warn(
        `task ${task.id} (${task.type}) returned to pending: ${workerDiedError(task).message} (attempt ${task.attempts} of ${task.maxAttempts})`,
      );
    }
  }

  /**
   * A claim of this layout, `active/{name}@{owner}.yaml`: left alone while its owner is alive. Once the owner is gone
   * the file is first renamed to a name of this pass's own (`…@{owner}+{token}.yaml`), which only one recoverer can
   * win. A copy whose task id is already in another file (pending/, done/, failed/ or a later claim) is stale: its
   * owner, or an earlier recovery, wrote the next state in full and stopped before removing it, so it is removed and
   * nothing is counted again. Otherwise the attempt the owner spent is counted (with a `worker died` entry in the
   * history) in a fresh file written straight to pending/ (or failed/, attempts spent), and then the token file is
   * removed: the token file itself is never written, so a recoverer that lost it cannot bring it back.
   * A token name older than the lease is a pass that stopped half-way (a crash, a stall), and the next pass takes
   * it over; two passes that both finish write the same target name, so the task still ends up in one file.
   */
  async #recoverOwned(
    file: string,
    active: ActiveName,
    ctimeMs: number,
    nowMs: number,
    report: RecoveryReport,
    options: { skipOwner?: string },
  ): Promise<void> {
    const ownerId = active.ownerId ?? '';
    const name = decodeTaskName(active.taskFileName);
    if (!name) return;
    if (active.recoveryToken === undefined) {
      if (ownerId === options.skipOwner) return;
      if ((await this.workers.livenessById(ownerId, nowMs)) === 'alive') return;
    } else if (nowMs - ctimeMs <= this.workers.leaseMs) {
      // Another pass is returning it right now.
      return;
    }
    const mineName = activeFileName(active.taskFileName, ownerId, randomBytes(4).toString('hex'));
    const mine = path.join(this.paths.active, mineName);
    try {
      await this.move(file, mine);
    } catch (error) {
      if (isMissing(error)) return;
      throw error;
    }
    if (await this.#hasNewerCopy(name, mineName)) {
      if (await this.removeFile(mine)) report.removedDuplicates.push(name.id);
      return;
    }
    let stored: Task;
    try {
      stored = this.parseTask(await readTaskText(mine, this.maxTaskBytes), name);
    } catch (error) {
      if (isMissing(error)) return;
      if (!(error instanceof TaskFileError)) throw error;
      if (await this.quarantine(mine, error.message)) report.quarantined.push(this.locationOf(mine));
      return;
    }
    // The marker of this very claim (its name and owner), read only now that this pass holds the claim: the owner is
    // gone, so it can no longer park or unpark it. A claim is never made twice under one name and owner, so a marker
    // left by an earlier claim cannot be this one's.
    const markerPath = path.join(this.paths.parked, activeFileName(active.taskFileName, ownerId));
    const parked = (await lstat(markerPath).catch(() => undefined)) !== undefined;
    // The file holds the attempts spent before this claim; the claim itself (made at the rename, its ctime) counts,
    // unless the task was parked when its owner died: then none of its code was running, and the death is not its.
    const died: Task = {
      ...stored,
      attempts: stored.attempts + 1,
      startedAt: new Date(ctimeMs).toISOString(),
      worker: { id: ownerId, pid: 0, host: '' },
    };
    const finishedAt = new Date(nowMs).toISOString();
    const error = parked
      ? workerDiedWhileWaitingError(ownerId)
      : { type: 'WorkerDied', message: `worker died: ${ownerId} stopped while running it` };
    const history = [...stored.history, ...attemptOf(died, finishedAt, error)];
    const counted: Task = { ...stored, attempts: parked ? stored.attempts : died.attempts, history };
    delete counted.startedAt;
    delete counted.worker;
    const death = decideAfterWorkerDied(history);
    if (!parked && (counted.attempts >= counted.maxAttempts || death.outcome === 'poisoned')) {
      const failedWith = death.outcome === 'poisoned' ? death.error : error;
      await this.writeTo('failed', active.taskFileName, { ...counted, finishedAt, error: failedWith });
      await this.removeFile(mine);
      report.failed.push(name.id);
      this.logger.warn(
        `task ${name.id} (${name.type}) failed: ${failedWith.message}${death.outcome === 'poisoned' ? '' : '; no attempts left'}`,
      );
      return;
    }
    // The next name after the claimed one (keeping its place in line, ready now): a pass that took this over from
    // a stalled one computes the same name, so if both finish the second write replaces the first.
    const requeued = requeuedTaskName(name, name.readyAtMs);
    await this.writeTo('pending', requeued.fileName, {
      ...counted,
      readyAt: new Date(requeued.name.readyAtMs).toISOString(),
    });
    await this.removeFile(mine);
    // After the claim has gone: a crash before this leaves a marker whose claim is gone, which the sweep removes.
    if (parked) await this.removeFile(markerPath);
    report.requeued.push(name.id);
    this.logger.warn(
      `task ${name.id} (${name.type}) returned to pending: ${error.message} (${parked ? 'still' : 'attempt'} ${counted.attempts} of ${counted.maxAttempts})`,
    );
  }

  /**
   * True when a file other than active/`except` holds the task of `name` at this move or a later one: done/ or
   * failed/ under the same name, or pending/ or active/ under a later ready time (every return to pending/ takes a
   * strictly later name). An older copy never counts: a stale claim left by a worker that died after writing its
   * retry must not make recovery drop the newer claim of that retry.
   */
  async #hasNewerCopy(name: TaskName, except: string): Promise<boolean> {
    for (const state of taskStates) {
      const listing = await this.#listing(state);
      if (state !== 'active') {
        const other = listing.decoded.get(listing.byId.get(name.id) ?? '');
        if (other && other.readyAtMs >= name.readyAtMs) return true;
        continue;
      }
      for (const [fileName, other] of listing.decoded) {
        if (other.id === name.id && fileName !== except && other.readyAtMs > name.readyAtMs) return true;
      }
    }
    return false;
  }

  /** Removes files in tmp/ older than `tmpMaxAgeMs`: writes that a crash interrupted before their rename. */
  async sweepTmp(nowMs: number = this.now()): Promise<number> {
    let removed = 0;
    for (const fileName of await readdir(this.paths.tmp).catch(() => [])) {
      const file = path.join(this.paths.tmp, fileName);
      const info = await lstat(file).catch(() => undefined);
      if (info && nowMs - info.mtimeMs > this.tmpMaxAgeMs) {
        // rm, not unlink: a directory left here must not make every recovery pass fail.
        await rm(file, { recursive: true, force: true });
        removed += 1;
      }
    }
    return removed;
  }

  /**
   * Removes done/ and failed/ files older than the retention durations (by the time they got there). A file whose
   * finish time is remembered (the listings' `#finishTimes`) and not yet due is passed over without a stat: a
   * finished task's file is not written again where it is, and an edit by hand only makes it newer. One that looks
   * due is stat'ed again before it goes, so such an edit is seen.
   */
  async prune(): Promise<PruneReport> {
    const nowMs = this.now();
    const report: PruneReport = { done: 0, failed: 0 };
    const known = this.#finishTimes;
    for (const state of ['done', 'failed'] as const) {
      const maxAgeMs = state === 'done' ? this.retention.doneMs : this.retention.failedMs;
      const present = new Set<string>();
      for (const fileName of await this.#names(state)) {
        if (fileName.endsWith(reasonSuffix)) continue;
        const file = path.join(this.paths[state], fileName);
        present.add(file);
        const remembered = known.get(file);
        if (remembered !== undefined && nowMs - remembered <= maxAgeMs) continue;
        const info = await lstat(file).catch(() => undefined);
        if (!info) continue;
        known.set(file, info.mtimeMs);
        if (nowMs - info.mtimeMs <= maxAgeMs) continue;
        if (await this.#removeEntry(file)) report[state] += 1;
        await unlink(file + reasonSuffix).catch(ignoreMissing);
        present.delete(file);
      }
      // What left the folder (pruned now, retried, removed by hand) is forgotten: the memory follows its size.
      const prefix = this.paths[state] + path.sep;
      for (const file of known.keys()) if (file.startsWith(prefix) && !present.has(file)) known.delete(file);
    }
    if (report.done + report.failed > 0) {
      this.logger.info(`pruned ${report.done} done and ${report.failed} failed tasks past their retention`);
    }
    return report;
  }
}

/** What a read says when the file moved on between its listing and the read. */
const movedWhileReading = 'the file moved while it was being read; look again';

/**
 * How long after its last change a directory's listing is trusted on its mtime alone. Filesystem clocks can be
 * coarse (jiffies; whole seconds on some), so two changes close together may share an mtime.
 */
const settleMs = 2_000;

/** One state directory's names, as of its mtime. */
interface StateListing {
  mtimeNs: bigint;
  /** When the directory was read (Date.now()). */
  listedAtMs: number;
  /** The mtime was old enough at listing time to tell the next change apart. */
  settled: boolean;
  names: readonly string[];
  /** Task names by file name. */
  decoded: Map<string, TaskName>;
  /** Names in the directory that are not task names (reasons beside quarantined files, strays). */
  undecodable: Set<string>;
  /** File names by task id. */
  byId: Map<string, string>;
  /** Task ids by fingerprint. */
  byFingerprint: Map<string, string>;
  /** Two files share an id or a fingerprint: the index is rebuilt in full rather than updated. */
  duplicates: boolean;
}

/** The index of a directory's names, built from scratch (reusing `known` decodings: names never change meaning). */
function builtListing(state: TaskState, names: string[], known?: ReadonlyMap<string, TaskName>): StateListing {
  const listing: StateListing = {
    mtimeNs: -1n,
    listedAtMs: 0,
    settled: false,
    names,
    decoded: new Map(),
    undecodable: new Set(),
    byId: new Map(),
    byFingerprint: new Map(),
    duplicates: false,
  };
  for (const fileName of names) addName(listing, state, fileName, known?.get(fileName));
  return listing;
}

/** `previous` brought up to date with `names`: what left is removed, what came is decoded and added. */
function updatedListing(previous: StateListing, state: TaskState, names: string[]): StateListing {
  const present = new Set(names);
  for (const [fileName, name] of previous.decoded) {
    if (present.has(fileName)) continue;
    previous.decoded.delete(fileName);
    if (previous.byId.get(name.id) === fileName) previous.byId.delete(name.id);
    if (previous.byFingerprint.get(name.fingerprint) === name.id) previous.byFingerprint.delete(name.fingerprint);
  }
  for (const fileName of previous.undecodable) if (!present.has(fileName)) previous.undecodable.delete(fileName);
  previous.names = names;
  for (const fileName of names) {
    if (previous.decoded.has(fileName) || previous.undecodable.has(fileName)) continue;
    addName(previous, state, fileName);
  }
  return previous;
}

function addName(listing: StateListing, state: TaskState, fileName: string, known?: TaskName): void {
  const name = known ?? decodeStateName(state, fileName);
  if (!name) {
    listing.undecodable.add(fileName);
    return;
  }
  listing.decoded.set(fileName, name);
  const other = listing.byId.get(name.id);
  if (other !== undefined || listing.byFingerprint.has(name.fingerprint)) listing.duplicates = true;
  // Two files of one id (a power cut's leftover until recovery removes one): the index names the later version.
  const otherName = other === undefined ? undefined : listing.decoded.get(other);
  if (other === undefined || otherName === undefined || isLaterVersion(fileName, name, other, otherName)) {
    listing.byId.set(name.id, fileName);
  }
  listing.byFingerprint.set(name.fingerprint, name.id);
}

/** How old a listing a dedup check may use while the directory keeps changing (see `#duplicateIn`). */
const dedupListingMaxAgeMs = 1_000;

async function pathExists(file: string): Promise<boolean> {
  try {
    await lstat(file);
    return true;
  } catch (error) {
    if (isMissing(error)) return false;
    throw error;
  }
}

/** The longest `.error.txt` reason read back; ours are one line. */
const maxReasonBytes = 65_536;

/** What rename answers when the target exists and cannot be replaced by what is being moved. */
function isNameClash(error: unknown): boolean {
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  return code === 'EISDIR' || code === 'ENOTDIR' || code === 'ENOTEMPTY' || code === 'EEXIST';
}

function typeMatcher(pattern: string): (type: string) => boolean {
  if (!pattern.includes('*')) return (type) => type === pattern;
  const expression = new RegExp(
    `^${pattern
      .split('*')
      .map((part) => part.replace(/[.+?^${}()|[\]\\]/g, '\\$&'))
      .join('.*')}$`,
  );
  return (type) => expression.test(type);
}

function compareStrings(left: string, right: string): number {
  return left < right ? -1 : left > right ? 1 : 0;
}
