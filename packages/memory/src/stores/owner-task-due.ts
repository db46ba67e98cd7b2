import type { OwnerTask } from '../memory-types.ts';

// Where the owner's tasks stand against now, in the owner's time zone: one definition for the chat tool
// (`list_tasks`), the CLI (`assistant tasks`), REST (`/api/memory/tasks?due=`) and the dashboard.

/** `YYYY-MM-DD` of an instant in a time zone. */
export function dayIn(ms: number, timeZone: string): string {
  return new Intl.DateTimeFormat('en-CA', { timeZone, year: 'numeric', month: '2-digit', day: '2-digit' }).format(ms);
}

export const dueWindows = ['overdue', 'today', 'week', 'all'] as const;
export type DueWindow = (typeof dueWindows)[number];

function addDays(day: string, days: number): string {
  return new Date(Date.parse(`${day}T00:00:00Z`) + days * 86_400_000).toISOString().slice(0, 10);
}

/** The day a task is due in the owner's time zone (an instant is read in the zone). */
function dueDay(task: Pick<OwnerTask, 'due'>, timeZone: string): string | undefined {
  if (task.due === undefined) return undefined;
  if (task.due.length === 10) return task.due;
  const at = Date.parse(task.due);
  return Number.isFinite(at) ? dayIn(at, timeZone) : undefined;
}

/**
 * Where a task stands against now: `overdue` (a day before today, or an instant already past), `today`, `week`
 * (within the next six days), `later`, or `none` (no due date).
 */
export function dueStanding(
  task: Pick<OwnerTask, 'due'>,
  options: { nowMs: number; timeZone: string },
): 'overdue' | 'today' | 'week' | 'later' | 'none' {
  const day = dueDay(task, options.timeZone);
  if (day === undefined || task.due === undefined) return 'none';
  const today = dayIn(options.nowMs, options.timeZone);
  if (task.due.length > 10 ? Date.parse(task.due) < options.nowMs : day < today) return 'overdue';
  if (day === today) return 'today';
  if (day <= addDays(today, 6)) return 'week';
  return 'later';
}

/**
 * The tasks of a due window, soonest first (those without a date last): `overdue` only what is past; `today` what is
 * due by the end of today, overdue included (what must be done today); `week` by the end of the sixth day from today;
 * `all` everything.
 */
export function tasksDue(options: {
  tasks: readonly OwnerTask[];
  due: DueWindow;
  nowMs: number;
  timeZone: string;
}): OwnerTask[] {
  const allowed: Record<DueWindow, ReadonlySet<string>> = {
    overdue: new Set(['overdue']),
    today: new Set(['overdue', 'today']),
    week: new Set(['overdue', 'today', 'week']),
    all: new Set(['overdue', 'today', 'week', 'later', 'none']),
  };
  // A day without a time is due by its end: after that day's instants, which sort by their time in the zone.
  const clock = new Intl.DateTimeFormat('en-GB', {
    timeZone: options.timeZone,
    hour: '2-digit',
    minute: '2-digit',
    second: '2-digit',
    hourCycle: 'h23',
  });
  const key = (task: OwnerTask) => {
    const day = dueDay(task, options.timeZone);
    if (day === undefined || task.due === undefined) return '9999-99-99';
    return task.due.length === 10 ? `${day}T99` : `${day}T${clock.format(Date.parse(task.due))}`;
  };
  return options.tasks
    .filter((task) => allowed[options.due].has(dueStanding(task, options)))
    .sort((a, b) => key(a).localeCompare(key(b)) || a.title.localeCompare(b.title));
}
