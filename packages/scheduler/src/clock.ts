/**
 * Wall-clock time and waiting, behind an interface so the scheduler and circuit breakers can be tested with a
 * fake clock instead of real waits.
 */
export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number;
  /**
   * Resolves once `ms` milliseconds have passed on this clock, or as soon as `signal` aborts (without throwing:
   * callers check `signal.aborted` themselves, so a shutdown is not an error).
   */
  sleep(ms: number, signal: AbortSignal): Promise<void>;
}

/** Node's largest timer delay; a longer one fires after 1 ms instead. */
const maxTimerDelayMs = 2 ** 31 - 1;

/**
 * How long one timer may run before the wall clock is read again. Node's timers count monotonic time, which
 * stops while the machine is suspended; waking every minute means a run due during a suspend fires within a
 * minute of waking instead of a whole suspend later. Always below `maxTimerDelayMs`.
 */
const wallClockCheckMs = 60_000;

/** The real clock: `Date.now()` and `setTimeout`. */
export const systemClock: Clock = {
  now: () => Date.now(),
  async sleep(ms: number, signal: AbortSignal): Promise<void> {
    const wakeAtMs = Date.now() + ms;
    // Loop because a timer may fire a little early, and because long waits are cut into chunks.
    while (!signal.aborted) {
      const remainingMs = wakeAtMs - Date.now();
      if (remainingMs <= 0) return;
      await new Promise<void>((resolve) => {
        const done = () => {
          clearTimeout(timer);
          signal.removeEventListener('abort', done);
          resolve();
        };
        const timer = setTimeout(done, Math.min(remainingMs, wallClockCheckMs, maxTimerDelayMs));
        signal.addEventListener('abort', done, { once: true });
      });
    }
  },
};
