import type { Clock } from '../clock.ts';

interface Sleeper {
  wakeAtMs: number;
  /** Insertion order: sleepers due at the same time wake in the order they started sleeping. */
  sequence: number;
  wake: () => void;
}

/**
 * A clock for tests: time stands still until the test moves it with `advance` or `advanceTo`, which wake the
 * sleepers whose time has come, earliest first. Tests wait for the code under test to go back to sleep with
 * `whenSleeping` instead of waiting on real time.
 */
export class FakeClock implements Clock {
  #nowMs: number;
  #sequence = 0;
  readonly #sleepers: Sleeper[] = [];
  readonly #sleepingWaiters: Array<{ count: number; resolve: () => void }> = [];

  /** @param startMs the fake time at the start, in ms since the epoch. @default 0 */
  constructor(startMs = 0) {
    this.#nowMs = startMs;
  }

  now(): number {
    return this.#nowMs;
  }

  sleep(ms: number, signal: AbortSignal): Promise<void> {
    if (signal.aborted || ms <= 0) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const sleeper: Sleeper = {
        wakeAtMs: this.#nowMs + ms,
        sequence: this.#sequence++,
        wake: () => {
          signal.removeEventListener('abort', sleeper.wake);
          const index = this.#sleepers.indexOf(sleeper);
          if (index !== -1) this.#sleepers.splice(index, 1);
          resolve();
        },
      };
      signal.addEventListener('abort', sleeper.wake, { once: true });
      this.#sleepers.push(sleeper);
      this.#notifySleepingWaiters();
    });
  }

  /** How many `sleep` calls are waiting. */
  get sleeperCount(): number {
    return this.#sleepers.length;
  }

  /** When the earliest sleeper wakes, or undefined when nothing sleeps. */
  nextWakeAtMs(): number | undefined {
    return this.#earliest()?.wakeAtMs;
  }

  /** Resolves once at least `count` `sleep` calls are waiting: the code under test has gone quiet. */
  whenSleeping(count = 1): Promise<void> {
    if (this.#sleepers.length >= count) return Promise.resolve();
    return new Promise((resolve) => this.#sleepingWaiters.push({ count, resolve }));
  }

  /** Moves time forward by `ms`; see `advanceTo`. */
  advance(ms: number): Promise<void> {
    return this.advanceTo(this.#nowMs + ms);
  }

  /**
   * Moves time forward to `targetMs`, waking each sleeper whose time has come in time order, with `now()` at its
   * wake time. After each wake-up the pending microtasks run, so promise chains started by one wake-up settle
   * before the next. Work that waits on I/O does not; step with `nextWakeAtMs` and `whenSleeping` for that.
   */
  async advanceTo(targetMs: number): Promise<void> {
    if (targetMs < this.#nowMs) {
      throw new RangeError(`Expected a time at or after ${this.#nowMs}, got ${targetMs}: a clock does not go back`);
    }
    for (let next = this.#earliest(); next !== undefined && next.wakeAtMs <= targetMs; next = this.#earliest()) {
      this.#nowMs = Math.max(this.#nowMs, next.wakeAtMs);
      next.wake();
      // setImmediate runs after the whole microtask queue has drained, including microtasks queued by microtasks.
      await new Promise((resolve) => setImmediate(resolve));
    }
    this.#nowMs = targetMs;
  }

  #earliest(): Sleeper | undefined {
    let earliest: Sleeper | undefined;
    for (const sleeper of this.#sleepers) {
      if (
        earliest === undefined ||
        sleeper.wakeAtMs < earliest.wakeAtMs ||
        (sleeper.wakeAtMs === earliest.wakeAtMs && sleeper.sequence < earliest.sequence)
      ) {
        earliest = sleeper;
      }
    }
    return earliest;
  }

  #notifySleepingWaiters(): void {
    for (const waiter of [...this.#sleepingWaiters]) {
      if (this.#sleepers.length < waiter.count) continue;
      this.#sleepingWaiters.splice(this.#sleepingWaiters.indexOf(waiter), 1);
      waiter.resolve();
    }
  }
}
