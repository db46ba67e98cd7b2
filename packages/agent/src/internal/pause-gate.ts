/**
 * A gate that is open while running and closed while paused. Waiters are released together on resume, or rejected
 * with the signal's reason on abort, so a stopped loop never stays parked behind a pause.
 */
export class PauseGate {
  #paused = false;
  #waiters: Array<() => void> = [];

  get paused(): boolean {
    return this.#paused;
  }

  pause(): void {
    this.#paused = true;
  }

  resume(): void {
    this.#paused = false;
    const waiters = this.#waiters;
    this.#waiters = [];
    for (const release of waiters) release();
  }

  /** Resolves at once when open, otherwise on resume; rejects with `signal.reason` when the signal aborts first. */
  wait(signal: AbortSignal): Promise<void> {
    if (signal.aborted) return Promise.reject(signal.reason);
    if (!this.#paused) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      const onAbort = (): void => {
        this.#waiters = this.#waiters.filter((waiter) => waiter !== release);
        reject(signal.reason);
      };
      const release = (): void => {
        signal.removeEventListener('abort', onAbort);
        resolve();
      };
      signal.addEventListener('abort', onAbort, { once: true });
      this.#waiters.push(release);
    });
  }
}
