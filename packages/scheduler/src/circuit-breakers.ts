import { statSync } from 'node:fs';
import path from 'node:path';
import { formatDuration } from '@assistant/config';
import {
  BrokenNoteError,
  type FileNoteStore,
  type FrontmatterData,
  type HumanLog,
  type HumanLogEntry,
  type Note,
  NoteConflictError,
} from '@assistant/notes';
import { isTaskType } from '@assistant/queue';
import { type Logger, pino } from 'pino';
import { z } from 'zod';
import { type Clock, systemClock } from './clock.ts';

/** When a task type's breaker opens and for how long; `circuit_breaker` in config.yaml. */
export interface CircuitBreakerSettings {
  /** Consecutive failed attempts of one task type that pause it (claims and scheduled runs). Config default 5. */
  failures: number;
  /** How long the type stays paused before a trial run, and how long a trial may take to report. Config default 300_000. */
  pauseMs: number;
}

/**
 * One task type's breaker as its note records it. `closed`: its tasks run and its scheduled runs go ahead. `open`:
 * workers claim none of its tasks and the scheduler enqueues none until `retryAt`. `half_open`: one trial is let
 * through (a scheduled run, and the one task a worker claims as the trial); its outcome closes or reopens the
 * breaker, and if it never reports, another trial is let through at `retryAt`.
 */
export type BreakerState = {
  taskType: string;
  state: 'closed' | 'open' | 'half_open';
  consecutiveFailures: number;
  /** ISO time the breaker last opened. */
  openedAt?: string;
  /** ISO time from which a (further) trial run is allowed. */
  retryAt?: string;
  /** The last failure's message: one line, at most 300 characters. */
  lastError?: string;
  /** Half-open: ISO time a worker claimed the trial task; until `retryAt` no other task of the type is claimed. */
  trialClaimedAt?: string;
  updatedAt: string;
};

/** Whether the scheduler may enqueue a task type now. */
export interface ScheduledRunPermission {
  allowed: boolean;
  /** The run is the trial that decides whether an open breaker closes. */
  trial: boolean;
  /** Why the run is not allowed: `circuit open until 2026-03-02T10:05:00.000Z`. */
  reason?: string;
}

export interface CircuitBreakersOptions {
  notes: FileNoteStore;
  settings: CircuitBreakerSettings;
  /** Where openings, trials and recoveries are told to the owner. @default none */
  humanLog?: HumanLog;
  /** @default systemClock */
  clock?: Clock;
  /** Where broken breaker notes are reported. @default a silent logger */
  logger?: Pick<Logger, 'info' | 'warn' | 'error'>;
}

/** Folder of the breaker notes, relative to the notes root. */
export const circuitBreakerFolder = 'system/circuit-breakers';
const humanLogSource = 'circuit-breaker';
const maxErrorLength = 300;
/** Retries of a read-modify-write that lost a race with another process; each loss means someone else progressed. */
const maxWriteAttempts = 20;

const isoTime = z
  .string()
  .refine((value) => !Number.isNaN(Date.parse(value)), 'must be a date such as 2026-03-02T10:05:00Z');

const breakerNoteSchema = z.object({
  state: z.enum(['closed', 'open', 'half_open']),
  consecutive_failures: z.int().nonnegative(),
  opened_at: isoTime.optional(),
  retry_at: isoTime.optional(),
  last_error: z.string().optional(),
  trial_claimed_at: isoTime.optional(),
  updated_at: isoTime,
});

const noteBody = `This file is written by Assistant's circuit breaker for one task type. After repeated failures it
pauses that type (\`state: open\` until \`retry_at\`): workers claim none of its tasks, whoever enqueued them
(schedules, manual runs, other stages), and the scheduler enqueues none; they wait in pending/. Then one task runs
as a trial (\`half_open\`); a success closes the breaker again, a failure pauses the type again. Deleting this
file closes the breaker.
`;

/** What the breaker note says, or why it says nothing usable. */
type LoadedBreaker = { kind: 'missing' } | { kind: 'broken' } | { kind: 'present'; note: Note; state: BreakerState };

/** A decision over the current state: the state to write (none: nothing changes), the result and a human log line. */
interface BreakerDecision<Result> {
  next?: BreakerState;
  result: Result;
  human?: Omit<HumanLogEntry, 'source' | 'at'>;
}

/**
 * Per-task-type circuit breakers kept as notes, so the worker (which records outcomes) and the server (which
 * asks before scheduled runs) share them through the filesystem. Every change is a compare-and-swap on the note:
 * when another process changed it since it was read, the change is decided again on the newer state.
 */
export class CircuitBreakers {
  readonly #notes: FileNoteStore;
  readonly #settings: CircuitBreakerSettings;
  readonly #humanLog: HumanLog | undefined;
  readonly #clock: Clock;
  readonly #logger: Pick<Logger, 'info' | 'warn' | 'error'>;
  /**
   * Task types known closed with no failures, with the version of the note (or its absence) that said so. Every
   * success would otherwise read the note; a `stat` is enough to notice that another process or a person changed it.
   */
  readonly #knownClosed = new Map<string, { version: string; state: BreakerState }>();
  /** Broken notes already reported, by path and what is wrong, so one bad file is not reported on every run. */
  readonly #reported = new Set<string>();

  constructor(options: CircuitBreakersOptions) {
    if (!Number.isInteger(options.settings.failures) || options.settings.failures < 1) {
      throw new RangeError(
        `Expected \`failures\` to be a whole number of at least 1, got ${options.settings.failures}`,
      );
    }
    if (!Number.isInteger(options.settings.pauseMs) || options.settings.pauseMs < 0) {
      throw new RangeError(
        `Expected \`pauseMs\` to be whole milliseconds of at least 0, got ${options.settings.pauseMs}`,
      );
    }
    this.#notes = options.notes;
    this.#settings = { ...options.settings };
    this.#humanLog = options.humanLog;
    this.#clock = options.clock ?? systemClock;
    this.#logger = options.logger ?? pino({ level: 'silent' });
  }

  /** Records a failed attempt of a task type (the worker calls this for every one). Returns the state after it. */
  async recordFailure(taskType: string, message: string): Promise<BreakerState> {
    this.#knownClosed.delete(taskType);
    const lastError = oneLine(message);
    return this.#change(taskType, (current, nowMs): BreakerDecision<BreakerState> => {
      const now = new Date(nowMs).toISOString();
      const failures = (current?.consecutiveFailures ?? 0) + 1;
      const pause = formatDuration(this.#settings.pauseMs);
      const retryAt = new Date(nowMs + this.#settings.pauseMs).toISOString();
      if (current?.state === 'half_open') {
        const next = open(taskType, failures, now, retryAt, lastError);
        const line = `trial run of ${taskType} failed; paused again for ${pause}`;
        return { next, result: next, human: { message: line, reason: lastError } };
      }
      if (current?.state === 'open') {
        // Attempts of tasks enqueued before the breaker opened (or manually) still fail; the pause stays as it was.
        const next: BreakerState = { ...current, consecutiveFailures: failures, lastError, updatedAt: now };
        return { next, result: next };
      }
      if (failures >= this.#settings.failures) {
        const next = open(taskType, failures, now, retryAt, lastError);
        const line = `paused ${taskType} for ${pause} after ${failures} consecutive failures: none of its tasks is claimed or scheduled until then`;
        return { next, result: next, human: { message: line, reason: lastError } };
      }
      const next: BreakerState = {
        taskType,
        state: 'closed',
        consecutiveFailures: failures,
        lastError,
        updatedAt: now,
      };
      return { next, result: next };
    });
  }

  /**
   * Records a successful attempt (the worker calls this for every one). Writes nothing when the type is already
   * closed with no failures, which is almost always: a note is written only when a failure streak ends.
   */
  async recordSuccess(taskType: string): Promise<BreakerState> {
    assertTaskType(taskType);
    const version = await this.#version(taskType);
    const known = this.#knownClosed.get(taskType);
    if (known && known.version === version) return known.state;
    return this.#change(taskType, (current, nowMs): BreakerDecision<BreakerState> => {
      if (current === undefined || (current.state === 'closed' && current.consecutiveFailures === 0)) {
        const state = current ?? closed(taskType, new Date(nowMs).toISOString());
        // The version was taken before the read: if the note changed in between, the next success reads again.
        this.#knownClosed.set(taskType, { version, state });
        return { result: state };
      }
      const next = closed(taskType, new Date(nowMs).toISOString());
      const human =
        current.state === 'closed' ? undefined : { message: `${taskType} succeeded again; its tasks run again` };
      return { next, result: next, ...(human ? { human } : {}) };
    });
  }

  /**
   * Whether the scheduler may enqueue a task type at `nowMs`. An open breaker whose pause is over becomes
   * half-open and lets this one run through as a trial; while a trial is out, no other run is allowed until a
   * further pause has passed, so a trial task that is lost cannot keep the type paused forever.
   */
  async allowScheduled(taskType: string, nowMs: number = this.#clock.now()): Promise<ScheduledRunPermission> {
    return this.#change(
      taskType,
      (current): BreakerDecision<ScheduledRunPermission> => {
        if (current === undefined || current.state === 'closed') return { result: { allowed: true, trial: false } };
        const retryAtMs = current.retryAt === undefined ? nowMs : Date.parse(current.retryAt);
        if (nowMs < retryAtMs) {
          const reason =
            current.state === 'open'
              ? `circuit open until ${current.retryAt}`
              : `trial run in progress; another trial from ${current.retryAt}`;
          return { result: { allowed: false, trial: false, reason } };
        }
        // A scheduled trial is enqueued, not claimed: the first worker to claim a task of the type takes it as the
        // trial (claimTrial), so no `trialClaimedAt` yet.
        const { trialClaimedAt: _claimed, ...rest } = current;
        const next: BreakerState = {
          ...rest,
          state: 'half_open',
          retryAt: new Date(nowMs + this.#settings.pauseMs).toISOString(),
          updatedAt: new Date(nowMs).toISOString(),
        };
        return { next, result: { allowed: true, trial: true }, human: { message: this.#trialMessage(current) } };
      },
      nowMs,
    );
  }

  /**
   * Whether a worker that has just claimed a task of the type may run it, at `nowMs`: always while the breaker is
   * closed; while it is open past its pause, or half-open with no trial claimed yet (the scheduler let a trial run
   * through) or with a trial that has not reported within the pause, the task becomes the trial and
   * `trialClaimedAt` is written, so that of several workers exactly one runs it. `state` is the breaker after the
   * decision (undefined when the type has no readable note), for the worker's cached view.
   */
  async claimTrial(
    taskType: string,
    nowMs: number = this.#clock.now(),
  ): Promise<ScheduledRunPermission & { state?: BreakerState }> {
    return this.#change(
      taskType,
      (current): BreakerDecision<ScheduledRunPermission & { state?: BreakerState }> => {
        if (current === undefined || current.state === 'closed') {
          return { result: { allowed: true, trial: false, ...(current ? { state: current } : {}) } };
        }
        const retryAtMs = current.retryAt === undefined ? nowMs : Date.parse(current.retryAt);
        const unclaimedTrial = current.state === 'half_open' && current.trialClaimedAt === undefined;
        if (nowMs < retryAtMs && !unclaimedTrial) {
          const reason =
            current.state === 'open'
              ? `circuit open until ${current.retryAt}`
              : `trial run in progress; another trial from ${current.retryAt}`;
          return { result: { allowed: false, trial: false, reason, state: current } };
        }
        const now = new Date(nowMs).toISOString();
        const next: BreakerState = {
          ...current,
          state: 'half_open',
          retryAt: new Date(nowMs + this.#settings.pauseMs).toISOString(),
          trialClaimedAt: now,
          updatedAt: now,
        };
        // The scheduler already told the owner about the trial it let through.
        const human = unclaimedTrial && nowMs < retryAtMs ? undefined : { message: this.#trialMessage(current) };
        return { next, result: { allowed: true, trial: true, state: next }, ...(human ? { human } : {}) };
      },
      nowMs,
    );
  }

  #trialMessage(current: BreakerState): string {
    const pause = formatDuration(this.#settings.pauseMs);
    return current.state === 'open'
      ? `trial run of ${current.taskType} after a ${pause} pause`
      : `another trial run of ${current.taskType}: the last one did not report within ${pause}`;
  }

  /** Every task type that has a breaker note, sorted by type. Broken notes are reported and left out. */
  async list(): Promise<BreakerState[]> {
    const states: BreakerState[] = [];
    for (const notePath of await this.#notes.list(circuitBreakerFolder)) {
      const taskType = path.posix.basename(notePath, '.md');
      if (path.posix.dirname(notePath) !== circuitBreakerFolder || !isTaskType(taskType)) continue;
      const loaded = await this.#load(taskType);
      if (loaded.kind === 'present') states.push(loaded.state);
    }
    return states;
  }

  /**
   * Reads the note, decides, and writes the decision based on what was read. A write that lost a race (another
   * process changed or created the note meanwhile) is decided again on the newer state.
   */
  async #change<Result>(
    taskType: string,
    decide: (current: BreakerState | undefined, nowMs: number) => BreakerDecision<Result>,
    nowMs?: number,
  ): Promise<Result> {
    assertTaskType(taskType);
    const notePath = noteFor(taskType);
    for (let attempt = 1; ; attempt++) {
      const loaded = await this.#load(taskType);
      const atMs = nowMs ?? this.#clock.now();
      // A broken note is the owner's to fix: the breaker counts as closed and the note is left as it is.
      if (loaded.kind === 'broken') return decide(undefined, atMs).result;
      const decision = decide(loaded.kind === 'present' ? loaded.state : undefined, atMs);
      if (decision.next === undefined) return decision.result;
      try {
        if (loaded.kind === 'missing') {
          await this.#notes.create(notePath, { data: withoutUndefined(toData(decision.next)), body: noteBody });
        } else {
          await this.#notes.update(notePath, { set: toData(decision.next), basedOn: loaded.note });
        }
      } catch (error) {
        if (attempt < maxWriteAttempts && lostRace(error)) continue;
        throw error;
      }
      if (decision.human) await this.#tellOwner({ ...decision.human, at: new Date(atMs) });
      return decision.result;
    }
  }

  async #load(taskType: string): Promise<LoadedBreaker> {
    const notePath = noteFor(taskType);
    let note: Note | undefined;
    try {
      note = await this.#notes.read(notePath);
    } catch (error) {
      if (!(error instanceof BrokenNoteError)) throw error;
      this.#reportBroken(notePath, error.message, error.message);
      return { kind: 'broken' };
    }
    if (note === undefined) return { kind: 'missing' };
    const parsed = breakerNoteSchema.safeParse(note.data);
    if (!parsed.success) {
      const problems = parsed.error.issues
        .map((issue) => `\`${issue.path.join('.') || '(frontmatter)'}\` ${issue.message}`)
        .join('; ');
      this.#reportBroken(notePath, `${notePath}: ${problems}`, note.hash);
      return { kind: 'broken' };
    }
    const data = parsed.data;
    const state: BreakerState = {
      taskType,
      state: data.state,
      consecutiveFailures: data.consecutive_failures,
      ...(data.opened_at === undefined ? {} : { openedAt: data.opened_at }),
      ...(data.retry_at === undefined ? {} : { retryAt: data.retry_at }),
      ...(data.last_error === undefined ? {} : { lastError: data.last_error }),
      ...(data.trial_claimed_at === undefined ? {} : { trialClaimedAt: data.trial_claimed_at }),
      updatedAt: data.updated_at,
    };
    return { kind: 'present', note, state };
  }

  /** The note's identity on disk: every write renames a new file into place, so the inode changes with it. */
  async #version(taskType: string): Promise<string> {
    // Synchronous, and no error for a missing note (the usual case: a type that never failed): asked after every
    // successful task, and one stat(2) on this thread costs less than a trip through the pool and an ENOENT error.
    const info = statSync(path.join(this.#notes.root, noteFor(taskType)), { bigint: true, throwIfNoEntry: false });
    return info ? `${info.ino}:${info.mtimeNs}:${info.size}` : 'missing';
  }

  #reportBroken(notePath: string, message: string, identity: string): void {
    const key = `${notePath}\0${identity}`;
    if (this.#reported.has(key)) return;
    this.#reported.add(key);
    this.#logger.warn(
      { note: notePath, problem: message },
      `circuit breaker note ${notePath} cannot be read; treating the breaker as closed and leaving the file as it is`,
    );
  }

  async #tellOwner(entry: Omit<HumanLogEntry, 'source'>): Promise<void> {
    if (!this.#humanLog) return;
    try {
      await this.#humanLog.write({ source: humanLogSource, ...entry });
    } catch (error) {
      // The breaker's state is already written; a log line that could not be written must not undo that.
      this.#logger.error({ err: error }, 'could not write the human log line for a circuit breaker');
    }
  }
}

function noteFor(taskType: string): string {
  return `${circuitBreakerFolder}/${taskType}.md`;
}

function assertTaskType(taskType: string): void {
  if (!isTaskType(taskType)) {
    throw new RangeError(
      `Expected a task type of lower-case dot-separated words such as \`email.inbox.check\`, got \`${taskType}\``,
    );
  }
}

function closed(taskType: string, updatedAt: string): BreakerState {
  return { taskType, state: 'closed', consecutiveFailures: 0, updatedAt };
}

function open(taskType: string, failures: number, now: string, retryAt: string, lastError: string): BreakerState {
  return { taskType, state: 'open', consecutiveFailures: failures, openedAt: now, retryAt, lastError, updatedAt: now };
}

/** The note's frontmatter for a state; `undefined` removes a key that no longer applies. */
function toData(state: BreakerState): FrontmatterData {
  return {
    task_type: state.taskType,
    state: state.state,
    consecutive_failures: state.consecutiveFailures,
    opened_at: state.openedAt,
    retry_at: state.retryAt,
    last_error: state.lastError,
    trial_claimed_at: state.trialClaimedAt,
    updated_at: state.updatedAt,
  };
}

function withoutUndefined(data: FrontmatterData): FrontmatterData {
  return Object.fromEntries(Object.entries(data).filter(([, value]) => value !== undefined));
}

/** One line of at most 300 characters, so a stack trace or a long response body cannot swamp the note. */
function oneLine(message: string): string {
  const line = message.replace(/\s+/g, ' ').trim();
  return line.length <= maxErrorLength ? line : `${line.slice(0, maxErrorLength - 1)}…`;
}

/** Errors that mean another writer got there first: decide again on what it wrote. */
function lostRace(error: unknown): boolean {
  if (error instanceof NoteConflictError || error instanceof BrokenNoteError) return true;
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  // EEXIST: someone created the note after we found none; ENOENT: someone deleted it after we read it.
  return code === 'EEXIST' || code === 'ENOENT';
}
