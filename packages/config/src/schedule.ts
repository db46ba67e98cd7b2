import { Cron } from 'croner';

/** When an integration's entry tasks run: a true interval, or a cron expression. */
export type Schedule = (
  | { kind: 'every'; everyMs: number }
  | { kind: 'cron'; expression: string; timezone?: string }
) & {
  /**
   * Whether a run missed while nothing was running (the server was stopped) is enqueued once on start.
   * @default true
   */
  catchUp?: boolean;
};

/** Why a cron expression is invalid, or undefined when it is valid. */
export function validateCron(expression: string, timezone?: string): string | undefined {
  const fields = expression.trim().split(/\s+/);
  if (fields.length !== 5 && fields.length !== 6) {
    return `\`${expression}\` has ${fields.length} fields; a cron expression has 5 (minute hour day month weekday) or 6 (with seconds first)`;
  }
  if (timezone !== undefined) {
    try {
      new Intl.DateTimeFormat('en-US', { timeZone: timezone });
    } catch {
      return `\`${timezone}\` is not a known time zone: use an IANA name such as Europe/Berlin or UTC`;
    }
  }
  try {
    new Cron(expression, { paused: true, ...(timezone ? { timezone } : {}) }).stop();
    return undefined;
  } catch (error) {
    return `\`${expression}\` is not a valid cron expression: ${error instanceof Error ? error.message : String(error)}`;
  }
}

export interface NextRunsOptions {
  /** How many run times to return. @default 5 */
  count?: number;
  /** Compute runs after this instant. @default now */
  from?: Date;
  /**
   * For `every` schedules: when the entry task last ran. Intervals are true intervals, counted from the last run,
   * not aligned to the clock. @default from
   */
  lastRunAt?: Date;
}

/** The next times a schedule fires, for `assistant config check` output and the scheduler. */
export function nextRuns(schedule: Schedule, options: NextRunsOptions = {}): Date[] {
  const count = options.count ?? 5;
  const from = options.from ?? new Date();
  if (schedule.kind === 'every') {
    const runs: Date[] = [];
    let next = (options.lastRunAt ?? from).getTime() + schedule.everyMs;
    // Straight to the first run after `from`: a 1s schedule last run a year ago must not step 31 million times.
    if (next <= from.getTime()) next += (Math.floor((from.getTime() - next) / schedule.everyMs) + 1) * schedule.everyMs;
    for (let index = 0; index < count; index++) runs.push(new Date(next + index * schedule.everyMs));
    return runs;
  }
  const cron = new Cron(schedule.expression, {
    paused: true,
    ...(schedule.timezone ? { timezone: schedule.timezone } : {}),
  });
  try {
    return cron.nextRuns(count, from);
  } finally {
    cron.stop();
  }
}
