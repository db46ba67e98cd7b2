import type { LoadedConfig } from '@assistant/config';

/** The longest the server waits for listeners and webhook handlers after the shutdown signal. */
const maxServerGraceMs = 10_000;

/**
 * How long listeners and webhook handlers get to return after the shutdown signal before the server stops without
 * them: 10 s, or `worker.shutdown_grace` when that is shorter. `assistant start` kills its children
 * `worker.shutdown_grace` + 5 s after the signal, so the server's own backstop (this grace plus its margin) ends it
 * first, with its log line, whatever a handler does with its signal.
 */
export function serverShutdownGraceMs(config: Pick<LoadedConfig, 'worker'>): number {
  return Math.min(maxServerGraceMs, config.worker.shutdownGraceMs);
}
