/** The longest delay `setTimeout` and `AbortSignal.timeout` honour: 2^31 - 1 ms, about 24.8 days. */
export const maxTimerDelayMs = 2_147_483_647;

/**
 * A delay that timers take as meant. Node turns a longer one into 1 ms (with a TimeoutOverflowWarning), so a
 * `timeout: 30d` policy would end every task at once; past the limit we wait the longest a timer can instead.
 */
export function timerDelayMs(delayMs: number): number {
  return Math.min(Math.max(0, delayMs), maxTimerDelayMs);
}
