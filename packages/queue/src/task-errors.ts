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

/** How long after its creation a task may keep waiting out a dependency's outage (a model, an MCP server, GitHub). */
const outageWaitLimitMs = 24 * 60 * 60_000;

/**
 * A dependency of the task is down: a DelayedError until `untilMs` (no attempt spent) while the task is less than a
 * day old, so an outage of minutes or hours strands nothing; undefined after that, so one that never ends fails the
 * task the normal way instead of keeping it pending forever.
 */
export function outageDelay(
  task: { createdAt: string },
  untilMs: number,
  message: string,
  nowMs: number = Date.now(),
): DelayedError | undefined {
  const createdAtMs = Date.parse(task.createdAt);
  if (Number.isFinite(createdAtMs) && nowMs - createdAtMs >= outageWaitLimitMs) return undefined;
  return new DelayedError(untilMs, message);
}
