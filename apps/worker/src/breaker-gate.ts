import type { BreakerState, CircuitBreakers } from '@assistant/scheduler';
import type { Logger } from 'pino';

/** How often the breaker notes are listed again: another worker or the owner may have changed them. */
const refreshIntervalMs = 3_000;

/**
 * The worker's view of the type breakers, for claims: a claim filter is synchronous, so it reads this cache, which
 * is listed from the notes every few seconds and updated by every outcome and trial this worker records. A type
 * whose breaker is open is not claimed until its `retry_at`; then one task is claimed and goes through
 * `CircuitBreakers.claimTrial`, which lets exactly one worker run it as the trial.
 */
export class BreakerGate {
  readonly #breakers: CircuitBreakers;
  readonly #logger: Logger;
  readonly #onChange: () => void;
  /** Types whose breaker is not closed, by type. Closed ones are left out: they hold nothing. */
  #states = new Map<string, BreakerState>();
  #timer: NodeJS.Timeout | undefined;
  #refreshing = false;

  constructor(options: { breakers: CircuitBreakers; logger: Logger; onChange: () => void }) {
    this.#breakers = options.breakers;
    this.#logger = options.logger;
    this.#onChange = options.onChange;
  }

  /** Lists the notes now and then every few seconds until `stop()`. */
  async start(): Promise<void> {
    await this.refresh();
    this.#timer = setInterval(() => void this.refresh(), refreshIntervalMs);
    this.#timer.unref();
  }

  stop(): void {
    clearInterval(this.#timer);
  }

  async refresh(): Promise<void> {
    if (this.#refreshing) return;
    this.#refreshing = true;
    try {
      const next = new Map<string, BreakerState>();
      for (const state of await this.#breakers.list()) if (state.state !== 'closed') next.set(state.taskType, state);
      const changed = !sameStates(this.#states, next);
      this.#states = next;
      if (changed) this.#onChange();
    } catch (error) {
      // The last view stays: a note folder that cannot be listed must not stop the worker.
      this.#logger.warn({ err: error }, 'could not list the circuit breaker notes');
    } finally {
      this.#refreshing = false;
    }
  }

  /** The breakers that are not closed, as this worker sees them now. */
  states(): BreakerState[] {
    return [...this.#states.values()];
  }

  /** Takes a state this worker just read or wrote (an outcome, a trial). */
  update(taskType: string, state: BreakerState | undefined): void {
    const before = this.#states.get(taskType);
    const after = state === undefined || state.state === 'closed' ? undefined : state;
    if (after) this.#states.set(taskType, after);
    else this.#states.delete(taskType);
    // Every success reports a closed breaker: only a change of what holds claims is news.
    if (before?.updatedAt !== after?.updatedAt || before?.state !== after?.state) this.#onChange();
  }

  /**
   * Why the type is not claimed at `nowMs`, or undefined when it may be: open before its `retry_at`, or half-open
   * with a trial claimed that has neither reported nor run past its `retry_at`.
   */
  held(taskType: string, nowMs: number): string | undefined {
    const state = this.#states.get(taskType);
    if (!state || state.retryAt === undefined) return undefined;
    // A half-open breaker whose trial the scheduler let through but no worker has claimed: claim it now.
    if (state.state === 'half_open' && state.trialClaimedAt === undefined) return undefined;
    if (nowMs >= Date.parse(state.retryAt)) return undefined;
    return state.state === 'open'
      ? `breaker open until ${state.retryAt}`
      : `breaker open until ${state.retryAt} (a trial is running)`;
  }

  /** A claimed task of this type must go through `claimTrial` before it runs. */
  needsTrial(taskType: string): boolean {
    return this.#states.has(taskType);
  }

  /** The earliest `retry_at` after `nowMs`, when the loop must look again. */
  nextRetryAtMs(nowMs: number): number | undefined {
    let earliest: number | undefined;
    for (const state of this.#states.values()) {
      if (state.retryAt === undefined) continue;
      const retryAtMs = Date.parse(state.retryAt);
      if (retryAtMs > nowMs && (earliest === undefined || retryAtMs < earliest)) earliest = retryAtMs;
    }
    return earliest;
  }
}

function sameStates(left: ReadonlyMap<string, BreakerState>, right: ReadonlyMap<string, BreakerState>): boolean {
  if (left.size !== right.size) return false;
  for (const [type, state] of left) {
    const other = right.get(type);
    if (!other || other.updatedAt !== state.updatedAt || other.state !== state.state) return false;
  }
  return true;
}
