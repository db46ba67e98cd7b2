import { createHash } from 'node:crypto';
import path from 'node:path';
import type { EventLedger, EventRecord } from '@assistant/events';
import type { HumanLog, NoteStore } from '@assistant/notes';
import {
  type EnqueueOptions,
  type EnqueueOutcome,
  type TaskQueue,
  taskFingerprint,
  taskIdTimeMs,
} from '@assistant/queue';
import { type AskHook, checkFastPath, decideHook } from '../decide-hook.ts';
import type { CompiledHook, HookDecision } from '../hook-types.ts';
import { performHookActions } from '../perform-hook-actions.ts';
import { createJsonOnce, hooksDataDir, jsonFiles, readJson, removeFile, writeJsonAtomic } from './hook-files.ts';

/** After this many errors in a row a hook's breaker opens… */
export const hookBreakerFailures = 5;
/** …and lets one event through again (half-open) after this long. */
export const hookBreakerPauseMs = 5 * 60_000;
/** A timer this late when the runner starts came due while Assistant was down: `catch_up` says what to do. */
const missedGraceMs = 2_000;
/** The first wait before a firing or timer that failed (the queue or the disk refused) is tried again; doubling. */
const firstRetryMs = 1_000;
const maxRetryMs = 60_000;

export interface HookRunnerLogger {
  info(message: string, details?: Record<string, unknown>): void;
  warn(message: string, details?: Record<string, unknown>): void;
}

export interface HookRunnerOptions {
  dataDir: string;
  hooks: readonly CompiledHook[];
  ledger: EventLedger;
  queue: Pick<TaskQueue, 'enqueue' | 'list'>;
  notes: NoteStore;
  humanLog?: Pick<HumanLog, 'write'>;
  /** `approvals.expires`. */
  approvalExpiresMs: number;
  /** The owner's time zone: `notify at:` and `time.tick`'s weekday and hour. */
  timeZone: string;
  /** The slow path (`askHook` bound to the hook's model and the file cache). Absent: hooks with `ask:` never fire. */
  ask?: AskHook;
  logger: HookRunnerLogger;
  /** @default () => Date.now() */
  now?: () => number;
  /** Emit `time.tick` every minute. @default true when a hook listens to it */
  ticks?: boolean;
}

/** A firing record, `data/hooks/firings/<hook>/<firing>.json` (`once.json` for a one-shot hook). */
export interface FiringRecord {
  hook: string;
  version: string;
  firing: string;
  event: string;
  event_type: string;
  state: 'planned' | 'done' | 'abandoned';
  planned_at: string;
  done_at?: string;
  /** For a timer's firing: when it was due. */
  due_at?: string;
  tasks?: { type: string; task: string; summary: string }[];
  approval?: string;
  reason?: string;
}

/** A durable timer, `data/hooks/timers/<hook>--<key>.json`: `debounce:` and `for:` wait on these across restarts. */
export interface TimerRecord {
  hook: string;
  version: string;
  kind: 'debounce' | 'for';
  key: string;
  /** The event the timer fires with (for `debounce:`, the last of the burst). */
  event: string;
  /** When the condition began to hold (`for:`), or the burst's first event (`debounce:`). */
  since: string;
  due_at: string;
}

interface BreakerState {
  failures: number;
  opened_at?: string;
}

/** A hook's state as `assistant hooks ls`, `GET /api/hooks`, `/health` and the dashboard show it. */
export interface HookState {
  name: string;
  on: string;
  enabled: boolean;
  once: boolean;
  /** A one-shot hook that fired: it never fires again. */
  firedOnce: boolean;
  lastFiredAt?: string;
  firings: number;
  breaker: { state: 'closed' | 'open' | 'half-open'; failures: number; openedAt?: string };
  timers: { key: string; kind: string; dueAt: string }[];
  missed: number;
}

const safeName = (name: string) => name.replace(/[^A-Za-z0-9_.-]/g, '_');
const hashOf = (...parts: string[]) => createHash('sha256').update(parts.join('\0')).digest('hex').slice(0, 16);

/** The firing of `hook` for `event` (and a timer's due time): the same firing whoever computes it, however often. */
export function firingIdOf(hook: CompiledHook, event: EventRecord, dueAt?: string): string {
  return `f-${hashOf(hook.name, event.id, dueAt ?? '')}`;
}

function paths(dataDir: string) {
  const root = hooksDataDir(dataDir);
  return {
    root,
    cursor: path.join(root, 'cursor.json'),
    breakers: path.join(root, 'breakers.json'),
    firings: (hook: string) => path.join(root, 'firings', safeName(hook)),
    firing: (hook: string, firing: string) => path.join(root, 'firings', safeName(hook), `${firing}.json`),
    timers: path.join(root, 'timers'),
    timer: (hook: string, key: string) => path.join(root, 'timers', `${safeName(hook)}--${hashOf(key)}.json`),
    missed: (hook: string, firing: string) => path.join(root, 'missed', `${safeName(hook)}--${firing}.json`),
    missedDir: path.join(root, 'missed'),
  };
}

/**
 * Runs the hooks in the worker: reads the ledger from `data/hooks/cursor.json`, decides each hook of each event's
 * type (fast path, then `ask:`), and fires exactly once per firing id. A firing is an O_EXCL record created (and
 * fsynced) before its actions are performed: whoever creates it performs them, nobody else ever does, and a crash in
 * between leaves it `planned`, which the next start performs again, finding the tasks it already enqueued (decision
 * 0046). `once: true` fires through `once.json`, so the hook's disabled state and its only firing are one file.
 */
export class HookRunner {
  readonly #options: HookRunnerOptions;
  readonly #paths: ReturnType<typeof paths>;
  readonly #byType = new Map<string, CompiledHook[]>();
  readonly #byName = new Map<string, CompiledHook>();
  #breakers: Record<string, BreakerState> = {};
  #timer: NodeJS.Timeout | undefined;
  #tick: NodeJS.Timeout | undefined;
  /**
   * After a failure (an enqueue the queue refused, a disk error): the timer files that failed, whether a firing may be
   * left `planned`, and when the next try is due. The retry comes by the timer `#armTimers` sets, with a doubling
   * wait, so an outage of some minutes strands nothing until a restart, and a lasting one does not spin.
   */
  readonly #failedTimers = new Set<string>();
  #recoveryNeeded = false;
  #failures = 0;
  #retryAtMs = 0;
  #controller = new AbortController();
  #running: Promise<void> | undefined;
  /** Serialises event handling, timers and recovery: one firing decision at a time. */
  #queue: Promise<void> = Promise.resolve();

  constructor(options: HookRunnerOptions) {
    this.#options = options;
    this.#paths = paths(options.dataDir);
    for (const hook of options.hooks) {
      this.#byName.set(hook.name, hook);
      const list = this.#byType.get(hook.on) ?? [];
      list.push(hook);
      this.#byType.set(hook.on, list);
    }
  }

  #now(): number {
    return (this.#options.now ?? Date.now)();
  }

  /** Recovers planned firings and missed timers, then follows the ledger until `stop`. */
  async start(): Promise<void> {
    this.#breakers = (await readJson<Record<string, BreakerState>>(this.#paths.breakers)) ?? {};
    await this.#serial(async () => {
      if (!(await this.#recoverFirings())) {
        this.#recoveryNeeded = true;
        this.#failed();
      }
    });
    await this.#serial(() => this.#catchUpTimers());
    await this.#armTimers();
    const saved = await readJson<{ cursor?: string }>(this.#paths.cursor);
    // A first start reacts to what happens from now on, not to the whole history in the ledger.
    const after = saved?.cursor ?? (await this.#options.ledger.end());
    if (!saved?.cursor) await writeJsonAtomic(this.#paths.cursor, { cursor: after });
    const ticks = this.#options.ticks ?? this.#byType.has('time.tick');
    if (ticks) this.#scheduleTick();
    this.#running = this.#follow(after).catch((error: unknown) => {
      if (!this.#controller.signal.aborted) this.#options.logger.warn('the hook runner stopped', { err: error });
    });
  }

  async stop(): Promise<void> {
    this.#controller.abort();
    clearTimeout(this.#timer);
    clearTimeout(this.#tick);
    await this.#running;
    await this.#queue;
  }

  #serial(work: () => Promise<void>): Promise<void> {
    const next = this.#queue.then(work);
    this.#queue = next.catch(() => {});
    return next;
  }

  async #follow(after: string): Promise<void> {
    for await (const event of this.#options.ledger.follow({ after, signal: this.#controller.signal })) {
      await this.#serial(() => this.#handle(event));
      // No fsync: the cursor only saves re-reading; firing twice is prevented by the firing records.
      await writeJsonAtomic(this.#paths.cursor, { cursor: event.cursor }, { sync: false });
    }
  }

  /** Every hook of the event's type decides; each error counts toward that hook's breaker only. */
  async #handle(event: EventRecord): Promise<void> {
    for (const hook of this.#byType.get(event.type) ?? []) {
      if (!hook.enabled) continue;
      // A hook never reacts to its own firing.
      if (event.type === 'hook.fired' && event.data.hook === hook.name) continue;
      if (!this.#breakerAllows(hook)) {
        await this.#options.humanLog?.write({
          source: `hooks/${hook.name}`,
          message: `skipped ${event.type} ${event.id}: its breaker is open after ${hookBreakerFailures} errors in a row`,
        });
        continue;
      }
      try {
        await this.#consider(hook, event);
        await this.#breakerResult(hook, undefined);
      } catch (error) {
        await this.#breakerResult(hook, error);
        // A firing whose actions failed is left `planned`: the retry performs it (its record says it was decided).
        // One that failed before its record (its `ask:` model) counts toward the breaker only, as it always did.
        this.#options.logger.warn(
          `hook ${hook.name} failed on ${event.type} ${event.id}; a firing it recorded is performed after a wait`,
          { err: error },
        );
        this.#recoveryNeeded = true;
        this.#failed();
        await this.#armTimers();
      }
    }
  }

  /** Notes a failed try: the next comes after a doubling wait (1 s, 2 s, … 60 s). */
  #failed(): void {
    this.#retryAtMs = this.#now() + Math.min(maxRetryMs, firstRetryMs * 2 ** this.#failures);
    this.#failures += 1;
  }

  async #consider(hook: CompiledHook, event: EventRecord): Promise<void> {
    if (hook.once && (await readJson(this.#paths.firing(hook.name, 'once')))) return;
    const decision = await decideHook({
      hook,
      event,
      nowMs: this.#now(),
      ...(this.#options.ask ? { ask: this.#options.ask } : {}),
    });
    if (!decision.fire) return;
    if (hook.count) {
      const seen = await this.#countMatching(hook, event);
      // The event that reaches the threshold fires; later ones in the same window do not fire again.
      if (seen !== hook.count.atLeast) return;
    }
    const key = keyOf(hook, event);
    if (hook.debounceMs !== undefined) {
      const file = this.#paths.timer(hook.name, key);
      const existing = await readJson<TimerRecord>(file);
      const timer: TimerRecord = {
        hook: hook.name,
        version: hook.version,
        kind: 'debounce',
        key,
        event: event.id,
        since: existing?.since ?? event.at,
        due_at: new Date(Date.parse(event.at) + hook.debounceMs).toISOString(),
      };
      await writeJsonAtomic(file, timer);
      await this.#armTimers();
      return;
    }
    if (hook.forMs !== undefined) {
      const file = this.#paths.timer(hook.name, key);
      if (await readJson<TimerRecord>(file)) return;
      await writeJsonAtomic(file, {
        hook: hook.name,
        version: hook.version,
        kind: 'for',
        key,
        event: event.id,
        since: event.at,
        due_at: new Date(Date.parse(event.at) + hook.forMs).toISOString(),
      } satisfies TimerRecord);
      await this.#armTimers();
      return;
    }
    await this.#fire(hook, event, decision);
  }

  /**
   * Matching events of the hook's type within its window, up to and including `event` in ledger order, with the same
   * `per` value. Ledger order, not `at` order: an event's `at` is stamped before the append lock, so concurrent
   * writers can append a later `at` first, and bounding by `until: event.at` would then leave every event of a burst
   * short of the threshold.
   */
  async #countMatching(hook: CompiledHook, event: EventRecord): Promise<number> {
    const count = hook.count;
    if (!count) return 0;
    const since = new Date(Date.parse(event.at) - count.withinMs).toISOString();
    const perValue = count.per === undefined ? undefined : JSON.stringify(event.data[count.per]);
    let seen = 0;
    let after: string | undefined;
    for (;;) {
      const page = await this.#options.ledger.list({
        types: [hook.on],
        since,
        limit: 1000,
        ...(after ? { after } : {}),
      });
      for (const candidate of page.events) {
        if (perValue !== undefined && JSON.stringify(candidate.data[count.per as string]) !== perValue) continue;
        if (!checkFastPath({ hook, event: candidate, nowMs: this.#now() }).passed) continue;
        seen += 1;
        if (candidate.id === event.id) return seen;
      }
      if (!page.next) return seen;
      after = page.next;
    }
  }

  /**
   * Fires: creates the firing record (O_EXCL, fsynced), performs the actions, marks it done and writes `hook.fired`.
   * A record that exists already means the firing happened (or is being recovered): nothing is done twice.
   */
  async #fire(hook: CompiledHook, event: EventRecord, decision: HookDecision, dueAt?: string): Promise<boolean> {
    const firing = firingIdOf(hook, event, dueAt);
    const file = this.#paths.firing(hook.name, hook.once ? 'once' : firing);
    const record: FiringRecord = {
      hook: hook.name,
      version: hook.version,
      firing,
      event: event.id,
      event_type: event.type,
      state: 'planned',
      planned_at: new Date(this.#now()).toISOString(),
      ...(dueAt === undefined ? {} : { due_at: dueAt }),
    };
    if (!(await createJsonOnce(file, record))) return false;
    await this.#perform(hook, event, decision, record, file, this.#options.queue);
    return true;
  }

  async #perform(
    hook: CompiledHook,
    event: EventRecord,
    decision: HookDecision,
    record: FiringRecord,
    file: string,
    queue: Pick<TaskQueue, 'enqueue'>,
  ): Promise<void> {
    const result = await performHookActions({
      decision,
      hook,
      event,
      firingId: record.firing,
      timeZone: this.#options.timeZone,
      nowMs: this.#now(),
      deps: {
        queue,
        notes: this.#options.notes,
        ...(this.#options.humanLog ? { humanLog: this.#options.humanLog } : {}),
        approvalExpiresMs: this.#options.approvalExpiresMs,
      },
    });
    await writeJsonAtomic(file, {
      ...record,
      state: 'done',
      done_at: new Date(this.#now()).toISOString(),
      tasks: result.enqueued,
      ...(result.approval ? { approval: result.approval.id } : {}),
    } satisfies FiringRecord);
    await this.#options.ledger.emit({
      type: 'hook.fired',
      source: 'hooks',
      nativeId: record.firing,
      causedBy: [event.id],
      data: { hook: hook.name, event: event.id, firing: record.firing },
    });
    this.#options.logger.info(`hook ${hook.name} fired on ${event.type} ${event.id}`, {
      hook: hook.name,
      firing: record.firing,
      tasks: result.enqueued.map((entry) => entry.task),
    });
  }

  /**
   * Firings left `planned` by a crash between their record and their actions: performed now, through a queue that
   * answers "duplicate" for a task this firing enqueued already (found by its fingerprint among the tasks created
   * since the record, in any state), so none is enqueued twice.
   */
  async #recoverFirings(): Promise<boolean> {
    let failed = false;
    for (const hook of this.#options.hooks) {
      for (const file of await jsonFiles(this.#paths.firings(hook.name))) {
        const record = await readJson<FiringRecord>(file);
        if (record?.state !== 'planned') continue;
        const event = await this.#options.ledger.get(record.event);
        const abandon = async (reason: string) => {
          await writeJsonAtomic(file, { ...record, state: 'abandoned', reason } satisfies FiringRecord);
          this.#options.logger.warn(`hook ${hook.name}: a firing cut by a crash was not performed: ${reason}`);
          await this.#options.humanLog?.write({
            source: `hooks/${hook.name}`,
            message: `a firing cut by a crash was not performed: ${reason}`,
          });
        };
        if (!event) {
          await abandon(`its event ${record.event} is no longer in the ledger`);
          continue;
        }
        if (record.version !== hook.version) {
          await abandon('the hook was changed since it fired');
          continue;
        }
        const { cursor: _cursor, ...plain } = event as EventRecord & { cursor?: string };
        try {
          const decision = await decideHook({
            hook: { ...hook, enabled: true },
            event: plain,
            nowMs: this.#now(),
            ...(this.#options.ask ? { ask: this.#options.ask } : {}),
          });
          await this.#perform(hook, plain, decision, record, file, this.#onceQueue(Date.parse(record.planned_at)));
        } catch (error) {
          // Stays `planned`; the other firings are performed meanwhile, and this one after a wait.
          this.#options.logger.warn(`hook ${hook.name}: a planned firing failed again; trying it later`, {
            err: error,
          });
          failed = true;
        }
      }
    }
    return !failed;
  }

  /** The queue, except that a task already created since `sinceMs` with the same type and payload is a duplicate. */
  #onceQueue(sinceMs: number): Pick<TaskQueue, 'enqueue'> {
    const queue = this.#options.queue;
    return {
      enqueue: async (options: EnqueueOptions): Promise<EnqueueOutcome> => {
        const fingerprint = taskFingerprint(options.type, options.payload ?? null);
        for (const state of ['pending', 'active', 'done', 'failed'] as const) {
          for (const entry of await queue.list({ state })) {
            const name = entry.name;
            if (!name || name.fingerprint !== fingerprint || taskIdTimeMs(name.id) < sinceMs - 1_000) continue;
            return { status: 'duplicate', reason: `enqueued before the crash (${name.id})`, existing: name.id };
          }
        }
        return queue.enqueue(options);
      },
    };
  }

  /** Timers due while Assistant was down: `catch_up` fires each, the last one, or none — and records the others. */
  async #catchUpTimers(): Promise<void> {
    const startMs = this.#now();
    const byHook = new Map<string, { file: string; timer: TimerRecord }[]>();
    for (const file of await jsonFiles(this.#paths.timers)) {
      const timer = await readJson<TimerRecord>(file);
      if (!timer || Date.parse(timer.due_at) > startMs - missedGraceMs) continue;
      const list = byHook.get(timer.hook) ?? [];
      list.push({ file, timer });
      byHook.set(timer.hook, list);
    }
    for (const [name, timers] of byHook) {
      const hook = this.#byName.get(name);
      timers.sort((left, right) => left.timer.due_at.localeCompare(right.timer.due_at));
      const mode = hook?.catchUp ?? 'skip';
      const firing = mode === 'all' ? timers : mode === 'once' ? timers.slice(-1) : [];
      for (const entry of timers) {
        if (firing.includes(entry)) continue;
        await this.#recordMissed(name, entry.timer, hook ? `catch_up: ${mode}` : 'the hook no longer exists');
        await removeFile(entry.file);
      }
      for (const entry of firing) await this.#tryDueTimer(entry.file);
    }
    if (this.#failedTimers.size > 0) this.#failed();
  }

  async #recordMissed(hook: string, timer: TimerRecord, why: string): Promise<void> {
    const id = `m-${hashOf(hook, timer.key, timer.due_at)}`;
    await writeJsonAtomic(this.#paths.missed(hook, id), {
      ...timer,
      missed_at: new Date(this.#now()).toISOString(),
      why,
    });
    await this.#options.humanLog?.write({
      source: `hooks/${hook}`,
      message: `did not fire the timer due ${timer.due_at} (${timer.kind}, ${timer.key}): it came due while Assistant was down`,
      reason: why,
    });
  }

  /** Sets one timeout for the earliest timer; each firing re-arms it. */
  async #armTimers(): Promise<void> {
    clearTimeout(this.#timer);
    if (this.#controller.signal.aborted) return;
    // A retry of what failed is due at `#retryAtMs`, like a timer.
    let earliest: number | undefined = this.#recoveryNeeded ? this.#retryAtMs : undefined;
    for (const file of await jsonFiles(this.#paths.timers)) {
      const timer = await readJson<TimerRecord>(file);
      if (!timer) continue;
      const due = this.#failedTimers.has(file)
        ? Math.max(Date.parse(timer.due_at), this.#retryAtMs)
        : Date.parse(timer.due_at);
      if (earliest === undefined || due < earliest) earliest = due;
    }
    if (earliest === undefined) return;
    const delay = Math.max(0, Math.min(earliest - this.#now(), 2 ** 31 - 1));
    this.#timer = setTimeout(() => {
      void this.#serial(() => this.#dueTimers()).catch((error: unknown) =>
        this.#options.logger.warn('a hook timer failed', { err: error }),
      );
    }, delay);
  }

  /**
   * Fires the timers that are due, and retries what failed once its wait is over. One that fails does not stop the
   * others, and every pass ends by arming the next timer (a timer that fires a millisecond early only re-arms).
   */
  async #dueTimers(): Promise<void> {
    const nowMs = this.#now();
    const retrying = nowMs >= this.#retryAtMs;
    let failed = false;
    if (this.#recoveryNeeded && retrying) {
      this.#recoveryNeeded = false;
      if (!(await this.#recoverFirings())) {
        this.#recoveryNeeded = true;
        failed = true;
      }
    }
    const files = await jsonFiles(this.#paths.timers);
    const present = new Set(files);
    for (const file of this.#failedTimers) if (!present.has(file)) this.#failedTimers.delete(file);
    for (const file of files) {
      if (this.#failedTimers.has(file) && !retrying) continue;
      const timer = await readJson<TimerRecord>(file);
      if (timer && Date.parse(timer.due_at) <= nowMs && !(await this.#tryDueTimer(file))) failed = true;
    }
    if (failed) this.#failed();
    else if (retrying && !this.#recoveryNeeded && this.#failedTimers.size === 0) this.#failures = 0;
    await this.#armTimers();
  }

  /** `#dueTimer`, with a failure logged and the timer kept for a retry (its firing, if recorded, left `planned`). */
  async #tryDueTimer(file: string): Promise<boolean> {
    try {
      await this.#dueTimer(file);
      this.#failedTimers.delete(file);
      return true;
    } catch (error) {
      this.#options.logger.warn('a hook timer failed; trying it again later', { err: error, timer: file });
      this.#failedTimers.add(file);
      // Its firing may have been recorded before the action failed: the retry performs it from the record.
      this.#recoveryNeeded = true;
      return false;
    }
  }

  /**
   * A timer came due: `debounce:` fires with the burst's last event; `for:` fires when the condition still holds
   * (the latest event of its key since it began still passes the fast path). The firing record comes first, the
   * timer's removal after: a crash in between finds the firing done and only removes the timer.
   */
  async #dueTimer(file: string): Promise<void> {
    const timer = await readJson<TimerRecord>(file);
    if (!timer) return;
    const hook = this.#byName.get(timer.hook);
    if (!hook || hook.version !== timer.version || !hook.enabled) {
      await this.#recordMissed(
        timer.hook,
        timer,
        hook ? 'the hook was changed or disabled' : 'the hook no longer exists',
      );
      await removeFile(file);
      return;
    }
    try {
      let event: EventRecord | undefined = await this.#options.ledger.get(timer.event);
      if (timer.kind === 'for' && event) event = await this.#latestOfKey(hook, timer, event);
      if (event) {
        const { cursor: _cursor, ...plain } = event as EventRecord & { cursor?: string };
        const decision = await decideHook({
          hook,
          event: plain,
          nowMs: this.#now(),
          ...(this.#options.ask ? { ask: this.#options.ask } : {}),
        });
        if (decision.fire) await this.#fire(hook, plain, decision, timer.due_at);
        else if (timer.kind === 'for') {
          await this.#options.humanLog?.write({
            source: `hooks/${hook.name}`,
            message: `did not fire: the condition held from ${timer.since} but not until ${timer.due_at}`,
            reason: decision.reason,
          });
        }
      }
      await removeFile(file);
      await this.#breakerResult(hook, undefined);
    } catch (error) {
      await this.#breakerResult(hook, error);
      // The timer stays: `#dueTimers` tries it again after a wait (and the next start, after a crash).
      throw error;
    }
  }

  /** The latest event of the hook's type and the timer's key since the timer began (the condition's current state). */
  async #latestOfKey(hook: CompiledHook, timer: TimerRecord, first: EventRecord): Promise<EventRecord> {
    let latest = first;
    let after: string | undefined;
    for (;;) {
      const page = await this.#options.ledger.list({
        types: [hook.on],
        since: timer.since,
        limit: 1000,
        ...(after ? { after } : {}),
      });
      for (const candidate of page.events) if (keyOf(hook, candidate) === timer.key) latest = candidate;
      if (!page.next) return latest;
      after = page.next;
    }
  }

  #scheduleTick(): void {
    const nowMs = this.#now();
    const next = Math.floor(nowMs / 60_000) * 60_000 + 60_000;
    this.#tick = setTimeout(() => {
      void this.#emitTick(next).finally(() => {
        if (!this.#controller.signal.aborted) this.#scheduleTick();
      });
    }, next - nowMs);
  }

  async #emitTick(minuteMs: number): Promise<void> {
    const minute = new Date(minuteMs).toISOString();
    const parts = Object.fromEntries(
      new Intl.DateTimeFormat('en-GB', {
        timeZone: this.#options.timeZone,
        weekday: 'long',
        hour: 'numeric',
        minute: 'numeric',
        hourCycle: 'h23',
      })
        .formatToParts(new Date(minuteMs))
        .map((part) => [part.type, part.value]),
    );
    await this.#options.ledger
      .emit({
        type: 'time.tick',
        source: 'clock',
        nativeId: minute,
        data: {
          minute,
          weekday: String(parts.weekday).toLowerCase(),
          hour: Number(parts.hour),
          minute_of_hour: Number(parts.minute),
        },
      })
      .catch((error: unknown) => this.#options.logger.warn('could not write time.tick', { err: error }));
  }

  #breakerAllows(hook: CompiledHook): boolean {
    const state = this.#breakers[hook.name];
    if (!state?.opened_at) return true;
    return this.#now() - Date.parse(state.opened_at) >= hookBreakerPauseMs;
  }

  async #breakerResult(hook: CompiledHook, error: unknown): Promise<void> {
    const previous = this.#breakers[hook.name] ?? { failures: 0 };
    if (error === undefined) {
      if (previous.failures === 0) return;
      this.#breakers[hook.name] = { failures: 0 };
      if (previous.opened_at) this.#options.logger.info(`hook ${hook.name}: its breaker closed`);
    } else {
      const failures = previous.failures + 1;
      const opens = failures >= hookBreakerFailures;
      this.#breakers[hook.name] = {
        failures,
        ...(opens ? { opened_at: new Date(this.#now()).toISOString() } : {}),
      };
      const message = error instanceof Error ? error.message : String(error);
      this.#options.logger.warn(`hook ${hook.name} failed (${failures} in a row): ${message}`, { hook: hook.name });
      if (opens && !previous.opened_at) {
        await this.#options.humanLog?.write({
          source: `hooks/${hook.name}`,
          message: `breaker opened after ${failures} errors in a row; tried again in ${hookBreakerPauseMs / 60_000} minutes`,
          reason: message,
        });
      }
    }
    await writeJsonAtomic(this.#paths.breakers, this.#breakers, { sync: false });
  }
}

/** The key a hook's timers and counts are kept per: the `count.per` field's value, or one for the whole hook. */
function keyOf(hook: CompiledHook, event: EventRecord): string {
  const per = hook.count?.per;
  return per === undefined ? '*' : `${per}=${JSON.stringify(event.data[per] ?? null)}`;
}

/** Each hook's state from `data/hooks/`, for the CLI, the REST API, `/health` and the dashboard. */
export async function readHookStates(options: {
  dataDir: string;
  hooks: readonly CompiledHook[];
  now?: () => number;
}): Promise<HookState[]> {
  const files = paths(options.dataDir);
  const breakers = (await readJson<Record<string, BreakerState>>(files.breakers)) ?? {};
  const timers = (await Promise.all((await jsonFiles(files.timers)).map((file) => readJson<TimerRecord>(file)))).filter(
    (timer): timer is TimerRecord => timer !== undefined,
  );
  const missed = await jsonFiles(files.missedDir);
  const nowMs = (options.now ?? Date.now)();
  const states: HookState[] = [];
  for (const hook of options.hooks) {
    const firings = (
      await Promise.all((await jsonFiles(files.firings(hook.name))).map((file) => readJson<FiringRecord>(file)))
    ).filter((record): record is FiringRecord => record !== undefined);
    const last = firings
      .map((record) => record.done_at ?? record.planned_at)
      .sort()
      .at(-1);
    const breaker = breakers[hook.name] ?? { failures: 0 };
    const openedMs = breaker.opened_at === undefined ? undefined : Date.parse(breaker.opened_at);
    const firedOnce = hook.once && firings.some((record) => record.state !== 'abandoned');
    states.push({
      name: hook.name,
      on: hook.on,
      enabled: hook.enabled && !firedOnce,
      once: hook.once,
      firedOnce,
      ...(last === undefined ? {} : { lastFiredAt: last }),
      firings: firings.length,
      breaker: {
        state: openedMs === undefined ? 'closed' : nowMs - openedMs >= hookBreakerPauseMs ? 'half-open' : 'open',
        failures: breaker.failures,
        ...(breaker.opened_at === undefined ? {} : { openedAt: breaker.opened_at }),
      },
      timers: timers
        .filter((timer) => timer.hook === hook.name)
        .map((timer) => ({ key: timer.key, kind: timer.kind, dueAt: timer.due_at })),
      missed: missed.filter((file) => path.basename(file).startsWith(`${safeName(hook.name)}--`)).length,
    });
  }
  return states;
}
