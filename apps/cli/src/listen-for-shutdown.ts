const shutdownSignals = ['SIGINT', 'SIGTERM'] as const;
type ShutdownSignal = (typeof shutdownSignals)[number];

export interface ShutdownListener extends Disposable {
  /** Aborts on the first SIGINT or SIGTERM; its `reason` is the signal's name. */
  signal: AbortSignal;
}

export interface ListenForShutdownOptions {
  /** Called for a signal that arrives while already stopping. */
  onRepeat?: (signal: ShutdownSignal) => void;
}

/**
 * Turns SIGINT and SIGTERM into an AbortSignal. Later signals are not fatal: a Ctrl-C reaches every process in
 * the terminal's group and again through `assistant start`, and the repeat must not cut a graceful stop short.
 */
export function listenForShutdown(options: ListenForShutdownOptions = {}): ShutdownListener {
  const controller = new AbortController();
  const listener = (signal: ShutdownSignal) => {
    if (controller.signal.aborted) options.onRepeat?.(signal);
    else controller.abort(signal);
  };
  for (const name of shutdownSignals) process.on(name, listener);
  return {
    signal: controller.signal,
    [Symbol.dispose]() {
      for (const name of shutdownSignals) process.off(name, listener);
    },
  };
}
