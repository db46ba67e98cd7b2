import type { QueuePolicy } from './queue-config.ts';

/**
 * How long to wait before attempt `attempt + 1` after attempt `attempt` (1-based) failed: `fixed` waits `delay`
 * every time; `exponential` waits delay, 2×delay, 4×delay…; both are capped at `max`.
 */
export function backoffDelayMs(backoff: QueuePolicy['backoff'], attempt: number): number {
  if (backoff.type === 'fixed') return Math.min(backoff.delayMs, backoff.maxMs);
  const exponent = Math.max(0, attempt - 1);
  // 2 ** 1024 is Infinity, which min() caps correctly; no overflow to worry about.
  return Math.min(backoff.delayMs * 2 ** exponent, backoff.maxMs);
}
