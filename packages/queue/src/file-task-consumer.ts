import { type FSWatcher, watch } from 'node:fs';
import { lstat, readdir, unlink } from 'node:fs/promises';
import path from 'node:path';
import { scrubSecretsDeep } from '@assistant/errors';
import { readClaimsHold } from './claims-hold.ts';
import { writeFileDurably } from './durable-write.ts';
import { activeFileName, assertWorkerId, isScratchName } from './file-layout.ts';
import type { FileTaskQueue } from './file-task-queue.ts';
import { isMissing, newWorkerOwner } from './file-worker-directory.ts';
import { maxTaskNestingDepth, valueNestingDepth } from './input-limits.ts';
import type {
  ClaimedTask,
  ClaimOptions,
  FailOutcome,
  RecoveryReport,
  ResultOutcome,
  TaskConsumer,
  TaskConsumerOptions,
  WaitForWorkOptions,
} from './interfaces.ts';
import { PendingIndex } from './internal/pending-index.ts';
import { repeatMaintenance } from './maintenance.ts';
import { describeFileKind, readTaskText } from './read-task-text.ts';
import { attemptOf, decideFailure, workerDiedError } from './task-attempts.ts';
import { UnrecoverableError } from './task-errors.ts';
import { type JsonValue, jsonValueSchema, type Task, TaskFileError, type TaskOwner } from './task-file.ts';
import { decodeTaskName, requeuedTaskName, type TaskName } from './task-name.ts';

/** Node fires longer timers after 1 ms (with a TimeoutOverflowWarning), so every delay is capped at this. */
const maxTimerMs = 2_147_483_647;

/** Where a claimed task's file is: kept by the consumer, never handed out. */
interface HeldFile {
  name: TaskName;
  fileName: string;
  path: string;
  /** Its parked marker (parked/, named as the claim is in active/) is there, or being written or removed. */
  parked: boolean;
}

/**
 * The worker's side of the queue: claims ready tasks in run order from an in-memory index of pending/ (fed by a
 * directory watcher, checked by periodic full listings), holds a lease on them through its heartbeat file, and
 * moves them on when they finish. Several consumers, in one process or many, may share a queue directory.
 */
export class FileTaskConsumer implements TaskConsumer {
  readonly queue: FileTaskQueue;
  readonly owner: TaskOwner;
  readonly #options: Required<Omit<TaskConsumerOptions, 'owner'>>;
  /**
   * The files of the tasks this consumer holds, by their name in active/: two files of one id (a power cut's or a
   * hand copy's leftover) are two claims, and each outcome must reach its own file.
   */
  readonly #held = new Map<string, HeldFile>();
  /** Which held file each handed-out claim is. */
  readonly #claims = new WeakMap<ClaimedTask, string>();
  readonly #index = new PendingIndex();
  /**
   * Names this consumer renamed out of pending/ since the last full listing. Our own rename fires a watch event
   * for the name; without this set the name would go back into the index and the next claim would hit ENOENT.
   * Names are never reused (a requeue takes a later name), so ignoring them is safe.
   */
  readonly #movedOut = new Set<string>();
  readonly #timers: NodeJS.Timeout[] = [];
  readonly #waiters = new Set<() => void>();
  #watcher: FSWatcher | undefined;
  #startedAt = new Date().toISOString();
  #closing: Promise<void> | undefined;
  #lastRescanMs = 0;
  /** Until when a claims hold (claims-hold.ts) stops this consumer's claims, as last read; 0 when none. */
  #heldUntilMs = 0;

  constructor(queue: FileTaskQueue, options: TaskConsumerOptions = {}) {
    this.queue = queue;
    this.owner = options.owner ?? newWorkerOwner();
    // Here, not at the first claim: the id goes into every active/ name this consumer makes.
    assertWorkerId(this.owner.id);
    this.#options = {
      heartbeatMs: options.heartbeatMs ?? 5_000,
      sweepIntervalMs: options.sweepIntervalMs ?? 15_000,
      rescanIntervalMs: options.rescanIntervalMs ?? 30_000,
      pollIntervalMs: options.pollIntervalMs ?? 1_000,
      pruneIntervalMs: options.pruneIntervalMs ?? 3_600_000,
    };
  }

  /** Registers the heartbeat, recovers what dead workers left, lists pending/ and starts watching it. */
  async start(): Promise<RecoveryReport> {
    this.#startedAt = new Date(this.queue.now()).toISOString();
    await this.extendLease();
    this.#every(this.#options.heartbeatMs, () => this.extendLease());
    // Watch before listing, so a file that arrives in between is seen by one or the other.
    try {
      this.#watcher = watch(this.queue.paths.pending, (_event, fileName) => {
        if (typeof fileName === 'string' && !this.#movedOut.has(fileName) && this.#index.add(fileName)) this.#wake();
      });
      this.#watcher.on('error', (error) => {
        this.queue.logger.warn(`watching pending/ failed (${error.message}); polling instead`);
        this.#watcher?.close();
        this.#watcher = undefined;
      });
    } catch (error) {
      this.queue.logger.warn(`cannot watch pending/ (${(error as Error).message}); polling instead`);
    }
    const report = await this.queue.recover({ skipOwner: this.owner.id });
    await this.rescan();
    this.#every(this.#options.sweepIntervalMs, () => this.#recover({ periodic: true }));
    this.#every(this.#options.rescanIntervalMs, () => this.rescan());
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

  /**
   * Lists pending/ in full and replaces the index with it. Files there whose names are not task names are moved
   * to failed/ with the reason, once they are a few seconds old (an editor may still be writing them).
   */
  async rescan(): Promise<void> {
    const nowMs = this.queue.now();
    this.#lastRescanMs = nowMs;
    const names = await readdir(this.queue.paths.pending);
    this.#movedOut.clear();
    this.#index.reset(names);
    for (const fileName of names) {
      if (decodeTaskName(fileName) || isScratchName(fileName)) continue;
      const file = path.join(this.queue.paths.pending, fileName);
      // lstat: a link is judged as itself. Directories, FIFOs and links go too: nothing in pending/ but tasks.
      const info = await lstat(file).catch(() => undefined);
      if (!info || nowMs - info.mtimeMs < 2_000) continue;
      const kind = info.isFile() ? 'the file' : `${describeFileKind(info)}, not a regular file; its`;
      await this.queue
        .quarantine(
          file,
          `${kind} name is not a task name: expected {priority}_{YYYYMMDDTHHMMSSmmmZ}_{id}--{fingerprint}--{type}.yaml`,
        )
        .catch((error: unknown) =>
          this.queue.logger.warn(`cannot move pending/${fileName} to failed/: ${(error as Error).message}`),
        );
    }
    if (this.#index.size > 0) this.#wake();
  }

  /** Number of names in the in-memory view of pending/ (for tests and diagnostics). */
  get indexedCount(): number {
    return this.#index.size;
  }

  /**
   * Claims the next ready task: `rename(pending/x, active/x@owner)`, nothing written. ENOENT means another worker
   * won it; the next name is tried. The attempt is counted in memory (the file keeps the attempts already spent) and
   * written when the task finishes, fails or goes back; recovery counts it when the owner dies instead. Files that
   * cannot be read as tasks are quarantined on the way and never returned.
   */
  async claim(options: ClaimOptions = {}): Promise<ClaimedTask | undefined> {
    for (;;) {
      if (this.#closing) return undefined;
      // Read before every claim while there is anything to claim: a backup holds the claims for a moment, and a
      // claim that began before the hold is taken is one its stable listing sees move (a syscall per claim).
      if (this.#index.size > 0 && (await this.#claimsHeld())) return undefined;
      await this.#removeSuperseded();
      const nowMs = this.queue.now();
      const fileName = this.#index.takeReady(nowMs, options.accept);
      if (fileName === undefined) return undefined;
      const name = decodeTaskName(fileName);
      if (!name) continue;
      // The claim is this one rename: the owner is in the name it gets, nothing is written.
      const activePath = path.join(this.queue.paths.active, activeFileName(fileName, this.owner.id));
      this.#movedOut.add(fileName);
      try {
        await this.queue.move(path.join(this.queue.paths.pending, fileName), activePath);
      } catch (error) {
        if (isMissing(error)) continue;
        throw error;
      }
      let task: Task;
      try {
        task = this.queue.parseTask(await readTaskText(activePath, this.queue.maxTaskBytes), name);
      } catch (error) {
        // Someone removed it by hand between our rename and our read: nothing left to run.
        if (isMissing(error)) continue;
        // Unreadable for any reason (bad YAML, too large, a directory, no permission): set aside, keep going.
        const reason = error instanceof TaskFileError ? error.message : `cannot read it: ${(error as Error).message}`;
        await this.queue.quarantine(activePath, reason);
        continue;
      }
      const startedAt = new Date(nowMs).toISOString();
      const claimed: Task = {
        ...task,
        // Started before and never finished: the previous worker died with it. Say so in the history.
        history:
          task.startedAt !== undefined && task.finishedAt === undefined
            ? [...task.history, ...attemptOf(task, startedAt, workerDiedError(task))]
            : task.history,
        attempts: task.attempts + 1,
        startedAt,
        worker: this.owner,
      };
      delete claimed.finishedAt;
      delete claimed.error;
      delete claimed.result;
      const handedOut: ClaimedTask = { id: claimed.id, task: claimed };
      const activeFile = path.basename(activePath);
      this.#held.set(activeFile, { name, fileName, path: activePath, parked: false });
      this.#claims.set(handedOut, activeFile);
      return handedOut;
    }
  }

  /** Whether a live claims hold is in force; remembers until when, so waitForWork sleeps instead of spinning. */
  async #claimsHeld(): Promise<boolean> {
    const hold = await readClaimsHold({ queueRoot: this.queue.paths.root, nowMs: this.queue.now() });
    this.#heldUntilMs = hold === undefined ? 0 : Date.parse(hold.until);
    return hold !== undefined;
  }

  /**
   * Removes the files of pending/ that the index set aside for a later version of the same task (see PendingIndex):
   * left where they are, a rescan would offer them again once the later one is claimed, and the task would run twice.
   */
  async #removeSuperseded(): Promise<void> {
    for (const fileName of this.#index.takeSuperseded()) {
      this.#movedOut.add(fileName);
      const name = decodeTaskName(fileName);
      await this.queue
        .removeStaleCopy(
          path.join(this.queue.paths.pending, fileName),
          `a later version of task ${name?.id} (${name?.type}) is in pending/; a power cut or a copy left this one`,
        )
        .catch((error: unknown) =>
          this.queue.logger.warn(`cannot remove pending/${fileName}: ${(error as Error).message}`),
        );
    }
  }

  /** Pending tasks of a type in this consumer's index (fed by the watcher and rescans). */
  pendingCount(type: string): number {
    return this.#index.count(type);
  }

  /** Renews this consumer's lease: its heartbeat file. */
  async extendLease(): Promise<void> {
    await this.queue.workers.heartbeat(this.owner, this.#startedAt);
  }

  /** Returns gone workers' tasks to pending/, leaving this consumer's own alone, and lists pending/ again if any. */
  recover(): Promise<RecoveryReport> {
    return this.#recover({ periodic: false });
  }

  async #recover(options: { periodic: boolean }): Promise<RecoveryReport> {
    const report = await this.queue.recover({ skipOwner: this.owner.id, periodic: options.periodic });
    if (report.requeued.length > 0) await this.rescan();
    return report;
  }

  /** Where a held task's file is (package-internal: recovery tests look at it). */
  fileOf(claimed: ClaimedTask): HeldFile {
    const key = this.#claims.get(claimed);
    let held = key === undefined ? undefined : this.#held.get(key);
    if (!held) {
      // A copy of the object handed out: found by its id, as long as that names one claim.
      const matches = [...this.#held.values()].filter((file) => file.name.id === claimed.id);
      if (matches.length === 1) held = matches[0];
    }
    if (!held) throw new Error(`task ${claimed.id} is not held by this consumer (${this.owner.id})`);
    return held;
  }

  /**
   * Forgets a held file once its task left active/, and removes its parked marker if it had one. Not durably: a
   * marker whose claim is gone can never match another claim (a task never enters active/ under the same name and
   * owner twice), and recovery sweeps it.
   */
  async #release(held: HeldFile): Promise<void> {
    this.#held.delete(path.basename(held.path));
    if (!held.parked) return;
    held.parked = false;
    await unlink(this.#markerOf(held)).catch((error: unknown) => {
      if (!isMissing(error)) {
        this.queue.logger.warn(`cannot remove the parked marker of task ${held.name.id}: ${(error as Error).message}`);
      }
    });
  }

  #markerOf(held: HeldFile): string {
    return path.join(this.queue.paths.parked, path.basename(held.path));
  }

  /**
   * Writes the claim's parked marker, `parked/{name}@{owner}.yaml`, atomically and durably (file and directory entry)
   * before it resolves: the worker gives the task's slot back only after it.
   */
  async park(claimed: ClaimedTask): Promise<void> {
    const held = this.fileOf(claimed);
    if (held.parked) return;
    held.parked = true;
    try {
      await writeFileDurably({
        tmpDir: this.queue.paths.tmp,
        target: this.#markerOf(held),
        text: `parkedAt: ${new Date(this.queue.now()).toISOString()}\n`,
        directorySyncs: this.queue.directorySyncs,
      });
    } catch (error) {
      held.parked = false;
      throw error;
    }
  }

  /** Removes the claim's parked marker, durably, before the task's code runs again. */
  async unpark(claimed: ClaimedTask): Promise<void> {
    const held = this.fileOf(claimed);
    if (!held.parked) return;
    try {
      await unlink(this.#markerOf(held));
    } catch (error) {
      if (!isMissing(error)) throw error;
    }
    held.parked = false;
    await this.queue.directorySyncs.sync(this.queue.paths.parked);
  }

  /**
   * Records the result and moves the task to done/: a result nested too deep or not plain JSON data fails the task
   * (unrecoverable) instead; a kept one is scrubbed of every loaded secret before it is written.
   */
  async complete(claimed: ClaimedTask, result: unknown): Promise<ResultOutcome> {
    const problem = resultProblem(result);
    if (typeof problem === 'string') {
      const error = new UnrecoverableError(problem);
      await this.fail(claimed, error);
      return { state: 'failed', error };
    }
    const task: Task = { ...claimed.task, finishedAt: new Date(this.queue.now()).toISOString(), result: problem.value };
    return { state: 'done', result: problem.value, recorded: await this.#finish(claimed, 'done', task) };
  }

  /**
   * Handles a handler's error: `DelayedError` puts the task back until its time without counting the attempt;
   * `UnrecoverableError`, or any error once attempts are spent, fails it; anything else retries it after the
   * backoff. Each attempt's error is kept in the task's history.
   */
  async fail(claimed: ClaimedTask, error: unknown): Promise<FailOutcome> {
    const decision = decideFailure(claimed.task, error, this.queue.policyFor(claimed.task.type), this.queue.now());
    if (decision.outcome === 'failed') {
      await this.#finish(claimed, 'failed', decision.task);
      return 'failed';
    }
    await this.#backToPending(claimed, decision.task, decision.readyAtMs);
    // One line per retry: debug, so an outage does not fill the console (the worker logs its start and end).
    this.queue.logger.debug?.(decision.message);
    return decision.outcome;
  }

  /** Returns a task to pending/ unrun, its attempt not counted: the worker is shutting down. */
  async release(claimed: ClaimedTask): Promise<void> {
    await this.#backToPending(
      claimed,
      { ...claimed.task, attempts: claimed.task.attempts - 1 },
      this.fileOf(claimed).name.readyAtMs,
    );
  }

  async #backToPending(claimed: ClaimedTask, task: Task, readyAtMs: number): Promise<void> {
    // Always a new name, strictly later than the current one, so this name never enters active/ again.
    const held = this.fileOf(claimed);
    const { name, fileName } = requeuedTaskName(held.name, readyAtMs);
    const next: Task = { ...task, readyAt: new Date(name.readyAtMs).toISOString() };
    delete next.startedAt;
    delete next.worker;
    delete next.finishedAt;
    // Written in full, and durably, to pending/ before active/x goes, as #finish does with done/x: a crash in between
    // leaves both, and recovery drops the active/ copy because the task is already elsewhere, so the attempt counted
    // here is never counted again. (The active file is never rewritten: what is in it is always the claim as it was made.)
    await this.queue.writeTo('pending', fileName, next);
    await this.queue.removeFile(held.path);
    await this.#release(held);
    this.#index.add(fileName);
  }

  async #finish(claimed: ClaimedTask, state: 'done' | 'failed', task: Task): Promise<boolean> {
    // done/x is written in full, and durably (file and name), before active/x goes: a power cut leaves one or both,
    // never neither, and recovery keeps done/x.
    const held = this.fileOf(claimed);
    await this.queue.writeTo(state, held.fileName, task);
    const removed = await this.queue.removeFile(held.path);
    await this.#release(held);
    if (!removed) {
      this.queue.logger.warn(
        `task ${task.id} (${task.type}) finished, but its active/ file had gone: this worker lost its lease (a stalled process?); the task may run twice`,
      );
    }
    return removed;
  }

  /**
   * Resolves when the watcher reports a new file, a delayed task's time comes (of an accepted type), or
   * `pollIntervalMs` passes.
   */
  async waitForWork(options: WaitForWorkOptions = {}): Promise<void> {
    if (options.signal?.aborted || this.#closing) return;
    const nowMs = this.queue.now();
    let timeoutMs = options.timeoutMs ?? this.#options.pollIntervalMs;
    // Only accepted types: a ready task of a type the caller holds back would otherwise wake it at once, forever.
    const nextReady = this.#index.nextReadyAtMs(options.accept);
    if (this.#heldUntilMs > nowMs) {
      // Claims are held: ready tasks must not end the wait at once (a busy loop); look again at the next poll.
      timeoutMs = Math.min(timeoutMs, this.#heldUntilMs - nowMs);
    } else if (nextReady !== undefined) timeoutMs = Math.min(timeoutMs, Math.max(0, nextReady - nowMs));
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
    // Nothing indexed: list the directory in case the watcher is not delivering (network filesystems).
    if (
      this.#index.size === 0 &&
      !this.#closing &&
      this.queue.now() - this.#lastRescanMs >= this.#options.pollIntervalMs
    ) {
      await this.rescan().catch((error: unknown) =>
        this.queue.logger.warn(`listing pending/ failed: ${(error as Error).message}`),
      );
    }
  }

  #wake(): void {
    for (const waiter of [...this.#waiters]) waiter();
  }

  /** Stops watching and heartbeats and removes the worker file. Tasks still held must be released first. */
  close(): Promise<void> {
    this.#closing ??= (async () => {
      for (const timer of this.#timers) clearInterval(timer);
      this.#watcher?.close();
      this.#wake();
      await this.queue.workers.remove(this.owner.id);
    })();
    return this.#closing;
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }
}

/**
 * A handler's result as a task keeps it, or why it cannot be kept. Depth first: zod recurses, and a hostile result
 * must cost a failed task, not the worker's stack; a done/ file nested past the reader's limit could never be read
 * back (task show, the API, result routes).
 */
export function resultProblem(result: unknown): { value: JsonValue } | string {
  if (valueNestingDepth(result, maxTaskNestingDepth) > maxTaskNestingDepth) {
    return `the handler returned a result nested more than ${maxTaskNestingDepth} levels deep; the limit is ${maxTaskNestingDepth} (maxTaskNestingDepth)`;
  }
  const checked = jsonValueSchema.safeParse(result ?? null);
  if (!checked.success) {
    return `the handler returned a result that is not plain JSON data: ${checked.error.issues[0]?.message}`;
  }
  // Scrubbed here, where it enters a Task: an echoed token must not reach done/, and rewrites need not rescan it.
  return { value: scrubSecretsDeep(checked.data) };
}
