import type { Logger } from 'pino';

/** Time on top of the grace period for releasing stopped tasks and closing files. */
const shutdownMarginMs = 3_000;

export interface ExitAfterShutdownGraceOptions {
  /** The process's shutdown signal (aborted on the first SIGINT or SIGTERM). */
  signal: AbortSignal;
  /** How long running work may take to finish once `signal` aborts (`worker.shutdown_grace`). */
  graceMs: number;
  /** Added to the grace before the process is ended. @default shutdownMarginMs (3 s) */
  marginMs?: number;
  logger: Logger;
  /** @default process.exit */
  exit?: (code: number) => never | undefined;
}

/**
 * The backstop behind a graceful shutdown: once `signal` aborts, the process ends `graceMs + marginMs` later even
 * if something still holds it open — a handler that ignores its AbortSignal and keeps a timer or socket alive, a
 * read that never returns. The graceful path (stop claiming, let tasks finish within the grace, return the rest to
 * pending/) runs first and normally ends the process well before; the timer is unref'd so it never holds the process
 * open itself. A task this cuts short stays in active/, and recovery returns it to pending/. Returns a disposer.
 */
export function exitAfterShutdownGrace(options: ExitAfterShutdownGraceOptions): Disposable {
  const { signal, logger } = options;
  const deadlineMs = options.graceMs + (options.marginMs ?? shutdownMarginMs);
  const exit = options.exit ?? ((code: number) => process.exit(code));
  const arm = () => {
    const timer = setTimeout(() => {
      logger.error(`still running ${deadlineMs}ms after ${String(signal.reason)}; exiting now`);
      exit(1);
    }, deadlineMs);
    timer.unref();
  };
  if (signal.aborted) arm();
  else signal.addEventListener('abort', arm, { once: true });
  return {
    // Only stops listening: a timer already armed stays armed, because the moment the caller is done is exactly
    // when a leftover timer or socket would keep the process alive.
    [Symbol.dispose]() {
      signal.removeEventListener('abort', arm);
    },
  };
}
