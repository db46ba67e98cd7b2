/** Throw from a handler to have the task retried after its backoff (while attempts remain). */
export class RetryableError extends Error {
  override name = 'RetryableError';
}

/** Throw from a handler to fail the task now, whatever attempts remain: retrying cannot help. */
export class UnrecoverableError extends Error {
  override name = 'UnrecoverableError';
}

/**
 * Throw from a handler to put the task back until `untilMs` without counting an attempt: the work is not due yet
 * (a rate-limited API said "retry after", a mailbox is locked).
 */
export class DelayedError extends Error {
  override name = 'DelayedError';
  readonly untilMs: number;

  constructor(untilMs: number, message = `delayed until ${new Date(untilMs).toISOString()}`) {
    super(message);
    this.untilMs = untilMs;
  }
}
