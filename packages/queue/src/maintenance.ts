/**
 * Runs `action` every `intervalMs` (unref'd, so it never keeps a process alive), never two runs at once (a slow
 * store must not pile up sweeps), its errors logged as warnings; skipped while `stopped()`. Returns the timer.
 */
export function repeatMaintenance(options: {
  intervalMs: number;
  action: () => Promise<unknown>;
  stopped: () => boolean;
  warn: (message: string) => void;
}): NodeJS.Timeout {
  let running = false;
  const timer = setInterval(
    () => {
      if (running || options.stopped()) return;
      running = true;
      options
        .action()
        .catch((error: unknown) => options.warn(`queue maintenance failed: ${(error as Error).message}`))
        .finally(() => {
          running = false;
        });
    },
    Math.min(options.intervalMs, maxTimerMs),
  );
  timer.unref();
  return timer;
}

/** Node fires longer timers after 1 ms (with a TimeoutOverflowWarning), so every interval is capped at this. */
const maxTimerMs = 2_147_483_647;
