import type { Logger } from 'pino';
import type { TaskOutcome } from './run-claimed-task.ts';

/** How many task types a summary line names; the rest are counted as `N other types`. */
const namedTypesMax = 4;

/**
 * The console's account of the tasks run, one INFO line per batch (when the worker has nothing left running) or per
 * interval while it stays busy, instead of a line per task (those are debug): `ran 80 tasks in 41s: 78 done,
 * 2 retrying (email.inbox.classify 20, email.inbox.collect 20, …)`. Failures keep their own WARN lines.
 */
export class TaskSummary {
  readonly #logger: Logger;
  readonly #nowMs: () => number;
  #sinceMs: number | undefined;
  #outcomes = new Map<TaskOutcome, number>();
  #types = new Map<string, number>();

  constructor(options: { logger: Logger; nowMs?: () => number }) {
    this.#logger = options.logger;
    this.#nowMs = options.nowMs ?? Date.now;
  }

  record(report: { type: string; outcome: TaskOutcome }): void {
    this.#sinceMs ??= this.#nowMs();
    this.#outcomes.set(report.outcome, (this.#outcomes.get(report.outcome) ?? 0) + 1);
    this.#types.set(report.type, (this.#types.get(report.type) ?? 0) + 1);
  }

  /** Logs what was recorded since the last line, and starts over; nothing when nothing ran. */
  flush(): void {
    if (this.#sinceMs === undefined) return;
    const total = [...this.#outcomes.values()].reduce((sum, count) => sum + count, 0);
    const outcomes = [...this.#outcomes].map(([outcome, count]) => `${count} ${outcome}`).join(', ');
    const types = [...this.#types].sort((left, right) => right[1] - left[1] || left[0].localeCompare(right[0]));
    const named = types.slice(0, namedTypesMax).map(([type, count]) => `${type} ${count}`);
    if (types.length > namedTypesMax) named.push(`${types.length - namedTypesMax} other types`);
    const tookMs = this.#nowMs() - this.#sinceMs;
    this.#logger.info(
      { tasks: total, outcomes: Object.fromEntries(this.#outcomes) },
      `ran ${total} ${total === 1 ? 'task' : 'tasks'} in ${formatSeconds(tookMs)}: ${outcomes} (${named.join(', ')})`,
    );
    this.#sinceMs = undefined;
    this.#outcomes = new Map();
    this.#types = new Map();
  }
}

function formatSeconds(durationMs: number): string {
  return durationMs < 1_000 ? `${durationMs}ms` : `${(durationMs / 1_000).toFixed(durationMs < 10_000 ? 1 : 0)}s`;
}
