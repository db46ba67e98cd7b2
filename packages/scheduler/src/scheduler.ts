import { formatDuration, nextRuns, type Schedule } from '@assistant/config';
import { BrokenNoteError, type FrontmatterData, type HumanLog, type Note, type NoteStore } from '@assistant/notes';
import { isTaskType } from '@assistant/queue';
import type { Logger } from 'pino';
import type { CircuitBreakers } from './circuit-breakers.ts';
import { type Clock, systemClock } from './clock.ts';

/** Why a job fires: its time came, it missed a run while the server was stopped, or it never fired before. */
export type ScheduledRunReason = 'due' | 'catch_up' | 'first_run';

/** One firing of a job, as `ScheduledJob.fire` receives it. */
export interface ScheduledRun {
  /** The time the run was scheduled for, in ms since the epoch; for catch-up and first runs, the start time. */
  scheduledAtMs: number;
  reason: ScheduledRunReason;
  /** The job's task types whose circuit breaker lets them run, in the job's order; never empty. */
  taskTypes: string[];
}

/** Something the scheduler fires on a schedule: usually one integration instance's entry tasks. */
export interface ScheduledJob {
  /** Stable, `[a-z0-9_-]+`, e.g. the integration instance name `personal-mail`; names the state note. */
  id: string;
  schedule: Schedule;
  /** For people reading logs: `personal-mail (email): inbox`. */
  description: string;
  /** The entry task types this job enqueues, e.g. `['email.inbox.check']`. */
  taskTypes: string[];
  /**
   * Enqueues the entry tasks for `run.taskTypes` (the job's types minus those whose breaker is open). Must not
   * throw for policy rejections such as dedup or rate limits: those are normal outcomes, so it returns.
   */
  fire(run: ScheduledRun): Promise<void>;
}

export interface SchedulerOptions {
  /** Fired in this order when several are due at the same time. Ids must be unique. */
  jobs: ScheduledJob[];
  /** Where each job's state note `system/schedules/{id}.md` lives. */
  notes: NoteStore;
  /** Where catch-up runs, runs skipped for open breakers and unreadable state notes are told to the owner. @default none */
  humanLog?: HumanLog;
  logger: Pick<Logger, 'info' | 'warn' | 'error'>;
  /** @default systemClock */
  clock?: Clock;
  /** Asked before each run which task types may be enqueued. @default every type may */
  breakers?: CircuitBreakers;
  /**
   * Asked before each run whether the owner paused the job (`assistant pause schedule|instance`): why, or undefined.
   * A paused run is skipped like one whose breakers are all open: not a fire, so nothing is caught up on resume.
   * A paused job that cannot be asked about runs. @default nothing is paused
   */
  paused?: (jobId: string) => Promise<string | undefined>;
}

/** One job as `Scheduler.status()` reports it; times are ISO strings. */
export interface ScheduledJobStatus {
  id: string;
  description: string;
  schedule: Schedule;
  /** The last time `fire()` completed, from the state note or this process. */
  lastFiredAt?: string;
  /** Absent when a cron expression has no future run. */
  nextRunAt?: string;
  /** Why the last run left out some or all task types: `email.inbox.check: circuit open until …`. */
  paused?: string;
}

/** Folder of the schedule state notes, relative to the notes root. */
export const scheduleFolder = 'system/schedules';
const jobIdPattern = /^[a-z0-9_-]+$/;
const humanLogSource = 'scheduler';

const noteBody = `This file is written by Assistant's scheduler. It records when this scheduled job last fired, so that
a restart of the server neither skips a run nor repeats one. You may edit \`last_fired_at\` by hand (an ISO time
such as 2026-03-02T08:00:00Z): the server reads it when it starts. Keys you add are kept.
`;

/** A job and what the scheduler knows about it in this process. */
interface JobRuntime {
  job: ScheduledJob;
  notePath: string;
  /** The state note could not be read: it is never written, and the job runs from memory until a restart. */
  noteBroken: boolean;
  lastFiredAtMs?: number;
  /** Undefined when a cron expression has no future run. */
  nextRunAtMs?: number;
  nextReason: ScheduledRunReason;
  /** For a catch-up run: the run time that was missed. */
  missedAtMs?: number;
  paused?: string;
  /** The owner's pause last seen for this job, so the human log is told once when it starts, not at every run. */
  ownerPause?: string;
}

/**
 * Fires jobs on their schedules from one timer loop, remembering each job's last fire in a note so that a
 * restart neither skips nor doubles a run: a run missed while the server was stopped fires once on start.
 */
export class Scheduler {
  readonly #jobs: JobRuntime[];
  readonly #notes: NoteStore;
  readonly #humanLog: HumanLog | undefined;
  readonly #logger: Pick<Logger, 'info' | 'warn' | 'error'>;
  readonly #clock: Clock;
  readonly #breakers: CircuitBreakers | undefined;
  readonly #paused: ((jobId: string) => Promise<string | undefined>) | undefined;
  readonly #stopping = new AbortController();
  #starting: Promise<void> | undefined;
  #loop: Promise<void> | undefined;
  #closing: Promise<void> | undefined;

  constructor(options: SchedulerOptions) {
    const seen = new Set<string>();
    for (const job of options.jobs) {
      validateJob(job);
      if (seen.has(job.id)) throw new RangeError(`Expected unique job ids, got \`${job.id}\` twice`);
      seen.add(job.id);
    }
    this.#jobs = options.jobs.map((job) => ({
      job,
      notePath: `${scheduleFolder}/${job.id}.md`,
      noteBroken: false,
      nextReason: 'due',
    }));
    this.#notes = options.notes;
    this.#humanLog = options.humanLog;
    this.#logger = options.logger;
    this.#clock = options.clock ?? systemClock;
    this.#breakers = options.breakers;
    this.#paused = options.paused;
  }

  /**
   * Reads each job's state note, works out its next run (a missed one fires now), and starts the timer loop.
   * Resolves once the loop runs; calling it again returns the same promise.
   */
  start(): Promise<void> {
    if (this.#closing) return Promise.reject(new Error('The scheduler was closed; create a new one to start again'));
    this.#starting ??= this.#start();
    return this.#starting;
  }

  /** Stops the timer loop, waiting for a `fire()` in progress to finish. Idempotent. */
  close(): Promise<void> {
    this.#closing ??= (async () => {
      this.#stopping.abort();
      // A failed start was already reported to whoever called start().
      await this.#starting?.catch(() => {});
      await this.#loop;
    })();
    return this.#closing;
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }

  /** Every job with its last and next run, in job order. */
  status(): ScheduledJobStatus[] {
    return this.#jobs.map((runtime) => ({
      id: runtime.job.id,
      description: runtime.job.description,
      schedule: runtime.job.schedule,
      ...(runtime.lastFiredAtMs === undefined ? {} : { lastFiredAt: iso(runtime.lastFiredAtMs) }),
      ...(runtime.nextRunAtMs === undefined ? {} : { nextRunAt: iso(runtime.nextRunAtMs) }),
      ...(runtime.paused === undefined ? {} : { paused: runtime.paused }),
    }));
  }

  async #start(): Promise<void> {
    const nowMs = this.#clock.now();
    for (const runtime of this.#jobs) await this.#plan(runtime, nowMs);
    if (this.#stopping.signal.aborted) return;
    this.#loop = this.#run();
  }

  /** Works out a job's first run in this process from its state note. */
  async #plan(runtime: JobRuntime, nowMs: number): Promise<void> {
    const { job } = runtime;
    let note: Note | undefined;
    try {
      note = await this.#notes.read(runtime.notePath);
    } catch (error) {
      if (!(error instanceof BrokenNoteError)) throw error;
      await this.#reportBrokenNote(runtime, error, nowMs);
    }
    const lastFiredAtMs = note === undefined ? undefined : this.#readLastFiredAt(note);
    if (lastFiredAtMs !== undefined) {
      runtime.lastFiredAtMs = lastFiredAtMs;
      const dueAtMs = runAfter(job.schedule, lastFiredAtMs, lastFiredAtMs);
      if (dueAtMs === undefined || dueAtMs >= nowMs) {
        this.#setNext(runtime, dueAtMs, 'due');
      } else if (job.schedule.catchUp === false) {
        this.#setNext(runtime, runAfter(job.schedule, nowMs, lastFiredAtMs), 'due');
        this.#logger.info(
          { job: job.id, missedAt: iso(dueAtMs), nextRunAt: optionalIso(runtime.nextRunAtMs) },
          `${job.description}: skipping the run missed while the server was stopped (catch_up: false)`,
        );
      } else {
        // However many runs were missed, one catches up: each run covers everything since the last.
        this.#setNext(runtime, nowMs, 'catch_up');
        runtime.missedAtMs = dueAtMs;
      }
    } else if (job.schedule.kind === 'every') {
      this.#setNext(runtime, nowMs, 'first_run');
    } else {
      this.#setNext(runtime, runAfter(job.schedule, nowMs, nowMs), 'due');
    }
    if (runtime.nextRunAtMs === undefined) {
      this.#logger.warn({ job: job.id }, `${job.description}: the schedule has no future run; the job never fires`);
    }
    await this.#saveState(runtime, { fired: false, current: note });
  }

  /** `last_fired_at` from the note; a value that is not a time is reported and treated as "never fired". */
  #readLastFiredAt(note: Note): number | undefined {
    const value = note.data.last_fired_at;
    if (value === undefined || value === null) return undefined;
    const timeMs = typeof value === 'string' ? Date.parse(value) : Number.NaN;
    if (Number.isNaN(timeMs)) {
      this.#logger.warn(
        { note: note.path, value },
        `${note.path}: \`last_fired_at\` should be a time such as 2026-03-02T08:00:00Z, got \`${String(value)}\` (${typeof value}); treating the job as never fired`,
      );
      return undefined;
    }
    return timeMs;
  }

  /** The timer loop: sleep until the earliest run, fire every job that is due, repeat until closed. */
  async #run(): Promise<void> {
    const signal = this.#stopping.signal;
    try {
      while (!signal.aborted) {
        const dueAtMs = Math.min(...this.#jobs.map((runtime) => runtime.nextRunAtMs ?? Number.POSITIVE_INFINITY));
        if (dueAtMs === Number.POSITIVE_INFINITY) return;
        const waitMs = dueAtMs - this.#clock.now();
        if (waitMs > 0) {
          await this.#clock.sleep(waitMs, signal);
          continue;
        }
        const nowMs = this.#clock.now();
        // sort() is stable: jobs due at the same time keep their order.
        const due = this.#jobs
          .filter((runtime) => runtime.nextRunAtMs !== undefined && runtime.nextRunAtMs <= nowMs)
          .sort((first, second) => (first.nextRunAtMs ?? 0) - (second.nextRunAtMs ?? 0));
        for (const runtime of due) {
          if (signal.aborted) return;
          await this.#runJob(runtime);
        }
      }
    } catch (error) {
      // #runJob catches everything it can; this is a bug, and a stopped scheduler must at least say so.
      this.#logger.error({ err: error }, 'the scheduler stopped after an unexpected error');
    }
  }

  /** Fires one due job, or skips it when every task type's breaker is open. Never throws. */
  async #runJob(runtime: JobRuntime): Promise<void> {
    const { job } = runtime;
    const scheduledAtMs = runtime.nextRunAtMs ?? this.#clock.now();
    const reason = runtime.nextReason;
    const nowMs = this.#clock.now();
    try {
      const ownerPause = await this.#ownerPause(job);
      if (ownerPause !== undefined) {
        // A skipped run is not a fire: last_fired_at stays, and the job waits for its next slot.
        this.#setNext(runtime, runAfter(job.schedule, nowMs, runtime.lastFiredAtMs ?? scheduledAtMs), 'due');
        runtime.paused = ownerPause;
        this.#logger.info(
          { job: job.id, reason, nextRunAt: optionalIso(runtime.nextRunAtMs) },
          `${job.description}: skipped the scheduled run; ${ownerPause}`,
        );
        if (runtime.ownerPause !== ownerPause) {
          await this.#tellOwner(
            { message: `skipping the scheduled runs of ${job.description}`, reason: ownerPause },
            nowMs,
          );
        }
        runtime.ownerPause = ownerPause;
        await this.#saveState(runtime, { fired: false });
        return;
      }
      delete runtime.ownerPause;
      const { allowed, refused } = await this.#allowedTaskTypes(job, nowMs);
      const pausedText = refused.map((entry) => `${entry.taskType}: ${entry.reason}`).join('; ');
      if (allowed.length === 0) {
        // A skipped run is not a fire: last_fired_at stays, and the job waits for its next slot.
        this.#setNext(runtime, runAfter(job.schedule, nowMs, runtime.lastFiredAtMs ?? scheduledAtMs), 'due');
        runtime.paused = pausedText;
        this.#logger.info(
          { job: job.id, reason, nextRunAt: optionalIso(runtime.nextRunAtMs), refused },
          `${job.description}: skipped the scheduled run; circuit open`,
        );
        await this.#tellOwner(
          { message: `skipped the scheduled run of ${job.description}`, reason: pausedText },
          nowMs,
        );
        await this.#saveState(runtime, { fired: false });
        return;
      }
      if (refused.length > 0) {
        runtime.paused = pausedText;
        this.#logger.info({ job: job.id, refused }, `${job.description}: leaving out task types whose circuit is open`);
        await this.#tellOwner(
          {
            message: `left ${refused.map((entry) => entry.taskType).join(', ')} out of the run of ${job.description}`,
            reason: pausedText,
          },
          nowMs,
        );
      } else {
        delete runtime.paused;
      }
      if (reason === 'catch_up') {
        const missed = runtime.missedAtMs === undefined ? 'a run' : `the run due at ${iso(runtime.missedAtMs)}`;
        await this.#tellOwner(
          {
            message: `catch-up run of ${job.description}`,
            reason: `${missed} was missed while the server was stopped`,
          },
          nowMs,
        );
      }
      // The next run is set before fire(), so neither a throwing fire() nor a failed note write repeats this run
      // in a loop: `every` counts from this fire, cron takes its next time after it.
      this.#setNext(runtime, runAfter(job.schedule, nowMs, nowMs), 'due');
      this.#logger.info(
        { job: job.id, reason, scheduledAt: iso(scheduledAtMs), taskTypes: allowed },
        `${job.description}: firing (${reason})`,
      );
      try {
        await job.fire({ scheduledAtMs, reason, taskTypes: allowed });
      } catch (error) {
        // Nothing is recorded: as far as the note knows, this run did not happen, so a restart catches it up.
        this.#logger.error(
          { err: error, job: job.id, nextRunAt: optionalIso(runtime.nextRunAtMs) },
          `${job.description}: fire() failed; the job keeps its schedule`,
        );
        return;
      }
      // last_fired_at is written after fire(), never before. A crash between the two fires this run again on
      // restart, and the queue's dedup policy absorbs the duplicate; writing first could record a run whose
      // tasks were never enqueued, and that run would be skipped without anyone noticing.
      runtime.lastFiredAtMs = nowMs;
      await this.#saveState(runtime, { fired: true });
    } catch (error) {
      this.#logger.error({ err: error, job: job.id }, `${job.description}: the scheduled run failed`);
      // Whatever failed, the job must move past this run, or the loop would retry it at once, for ever.
      if (runtime.nextRunAtMs !== undefined && runtime.nextRunAtMs <= nowMs) {
        this.#setNext(runtime, runAfter(job.schedule, nowMs, runtime.lastFiredAtMs ?? scheduledAtMs), 'due');
      }
    }
  }

  /** Why the owner paused the job, or undefined; a pause state that cannot be read lets the job run, as a breaker's. */
  async #ownerPause(job: ScheduledJob): Promise<string | undefined> {
    if (!this.#paused) return undefined;
    try {
      return await this.#paused(job.id);
    } catch (error) {
      this.#logger.error({ err: error, job: job.id }, `could not read whether ${job.id} is paused; running it`);
      return undefined;
    }
  }

  /** Splits a job's task types into those its breakers allow now and those refused, with why. */
  async #allowedTaskTypes(
    job: ScheduledJob,
    nowMs: number,
  ): Promise<{ allowed: string[]; refused: Array<{ taskType: string; reason: string }> }> {
    const allowed: string[] = [];
    const refused: Array<{ taskType: string; reason: string }> = [];
    for (const taskType of job.taskTypes) {
      if (!this.#breakers) {
        allowed.push(taskType);
        continue;
      }
      try {
        const permission = await this.#breakers.allowScheduled(taskType, nowMs);
        if (permission.allowed) allowed.push(taskType);
        else refused.push({ taskType, reason: permission.reason ?? 'circuit open' });
      } catch (error) {
        // A breaker that cannot be read must not stop scheduled work: it protects, it is not the work.
        this.#logger.error({ err: error, taskType }, `could not check the circuit breaker of ${taskType}; running it`);
        allowed.push(taskType);
      }
    }
    return { allowed, refused };
  }

  #setNext(runtime: JobRuntime, nextRunAtMs: number | undefined, reason: ScheduledRunReason): void {
    if (nextRunAtMs === undefined) delete runtime.nextRunAtMs;
    else runtime.nextRunAtMs = nextRunAtMs;
    runtime.nextReason = reason;
    if (reason !== 'catch_up') delete runtime.missedAtMs;
  }

  /**
   * Writes the job's keys into its state note, creating it when missing; other keys a person added are kept.
   * `last_fired_at` is written only after a fire, so a hand-edited value stays until the job fires again.
   * `current` is the note as just read: when it already says all of this, nothing is written.
   */
  async #saveState(runtime: JobRuntime, options: { fired: boolean; current?: Note | undefined }): Promise<void> {
    if (runtime.noteBroken) return;
    const { job } = runtime;
    const data: FrontmatterData = {
      job: job.id,
      description: job.description,
      schedule: describeSchedule(job.schedule),
      ...(options.fired && runtime.lastFiredAtMs !== undefined ? { last_fired_at: iso(runtime.lastFiredAtMs) } : {}),
      ...(runtime.nextRunAtMs === undefined ? {} : { next_run_at: iso(runtime.nextRunAtMs) }),
    };
    const current = options.current;
    if (current && Object.entries(data).every(([key, value]) => current.data[key] === value)) return;
    try {
      try {
        await this.#notes.update(runtime.notePath, { set: data });
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
        await this.#notes.create(runtime.notePath, { data, body: noteBody });
      }
    } catch (error) {
      if (error instanceof BrokenNoteError) {
        await this.#reportBrokenNote(runtime, error, this.#clock.now());
        return;
      }
      this.#logger.error(
        { err: error, job: job.id, note: runtime.notePath },
        `${job.description}: could not write the schedule state note`,
      );
    }
  }

  async #reportBrokenNote(runtime: JobRuntime, error: BrokenNoteError, nowMs: number): Promise<void> {
    runtime.noteBroken = true;
    const message = `${runtime.notePath} cannot be read; ${runtime.job.id} runs from memory until the server restarts, and the file is left as it is`;
    this.#logger.warn({ job: runtime.job.id, note: runtime.notePath, problem: error.message }, message);
    await this.#tellOwner({ message, reason: error.message }, nowMs);
  }

  async #tellOwner(entry: { message: string; reason?: string }, nowMs: number): Promise<void> {
    if (!this.#humanLog) return;
    try {
      await this.#humanLog.write({ source: humanLogSource, ...entry, at: new Date(nowMs) });
    } catch (error) {
      this.#logger.error({ err: error }, 'could not write a scheduler line to the human log');
    }
  }
}

/** Refuses jobs that could not be scheduled or named, saying what was received. */
function validateJob(job: ScheduledJob): void {
  if (!jobIdPattern.test(job.id)) {
    throw new RangeError(`Expected a job id of lower-case letters, digits, \`_\` and \`-\`, got \`${job.id}\``);
  }
  if (job.schedule.kind === 'every' && !(Number.isInteger(job.schedule.everyMs) && job.schedule.everyMs > 0)) {
    throw new RangeError(
      `Expected \`everyMs\` of job ${job.id} to be whole milliseconds above 0, got ${job.schedule.everyMs}`,
    );
  }
  if (job.taskTypes.length === 0) throw new RangeError(`Expected job ${job.id} to enqueue at least one task type`);
  for (const taskType of job.taskTypes) {
    if (!isTaskType(taskType)) {
      throw new RangeError(
        `Expected task types of lower-case dot-separated words such as \`email.inbox.check\` in job ${job.id}, got \`${taskType}\``,
      );
    }
  }
}

/**
 * The first run strictly after `afterMs`. `every` runs lie on the grid `anchorMs + k × everyMs`, so passing the
 * last fire as the anchor keeps a true interval.
 */
function runAfter(schedule: Schedule, afterMs: number, anchorMs: number): number | undefined {
  const [next] = nextRuns(schedule, { count: 1, from: new Date(afterMs), lastRunAt: new Date(anchorMs) });
  return next?.getTime();
}

/** `every 45m`, `cron 0 8 * * * (Europe/Berlin)`: the schedule as config.yaml says it. */
function describeSchedule(schedule: Schedule): string {
  const text =
    schedule.kind === 'every'
      ? `every ${formatDuration(schedule.everyMs)}`
      : `cron ${schedule.expression}${schedule.timezone ? ` (${schedule.timezone})` : ''}`;
  return schedule.catchUp === false ? `${text}, no catch-up` : text;
}

function iso(timeMs: number): string {
  return new Date(timeMs).toISOString();
}

function optionalIso(timeMs: number | undefined): string | undefined {
  return timeMs === undefined ? undefined : iso(timeMs);
}
