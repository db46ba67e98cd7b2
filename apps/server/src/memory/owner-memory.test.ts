import { dueStanding, type OwnerTask, tasksDue } from '@assistant/memory';
import { describe, expect, it } from 'vitest';
import { checkDue } from './owner-memory.ts';

function task(id: string, due: string | undefined, title = id): OwnerTask {
  return {
    path: `tasks/${id}.md`,
    id,
    title,
    ...(due === undefined ? {} : { due }),
    status: 'open',
    created_by: 'owner',
    about: [],
  };
}

// Monday 2026-11-30, 10:00 in Berlin (09:00 UTC).
const nowMs = Date.parse('2026-11-30T09:00:00Z');
const timeZone = 'Europe/Berlin';

describe('tasksDue', () => {
  const tasks = [
    task('undated', undefined),
    task('later', '2026-12-20'),
    task('sunday', '2026-12-06'),
    task('monday-next', '2026-12-07'),
    task('today', '2026-11-30'),
    task('past-instant', '2026-11-30T08:30:00Z'),
    task('later-today-instant', '2026-11-30T20:00:00Z'),
    task('yesterday', '2026-11-29'),
  ];
  const ids = (due: 'overdue' | 'today' | 'week' | 'all') =>
    tasksDue({ tasks, due, nowMs, timeZone }).map((found) => found.id);

  it('lists overdue days and past instants as overdue, and today as today with overdue first', () => {
    expect(ids('overdue')).toEqual(['yesterday', 'past-instant']);
    expect(ids('today')).toEqual(['yesterday', 'past-instant', 'later-today-instant', 'today']);
  });

  it('takes the week to the end of the sixth day from today, and all with undated tasks last', () => {
    expect(ids('week')).toEqual(['yesterday', 'past-instant', 'later-today-instant', 'today', 'sunday']);
    expect(ids('all')).toEqual([
      'yesterday',
      'past-instant',
      'later-today-instant',
      'today',
      'sunday',
      'monday-next',
      'later',
      'undated',
    ]);
  });

  it("reads today in the owner's time zone, not the machine's or UTC's", () => {
    // 23:30 UTC on the 29th is already the 30th in Berlin.
    const lateMs = Date.parse('2026-11-29T23:30:00Z');
    expect(dueStanding(task('x', '2026-11-30'), { nowMs: lateMs, timeZone })).toBe('today');
    expect(dueStanding(task('x', '2026-11-30'), { nowMs: lateMs, timeZone: 'UTC' })).toBe('week');
    expect(dueStanding(task('x', '2026-11-29'), { nowMs: lateMs, timeZone })).toBe('overdue');
  });
});

describe('checkDue', () => {
  it('takes a day or an instant with a zone, and names what it got and what is valid otherwise', () => {
    expect(checkDue('2026-12-01')).toBe('2026-12-01');
    expect(checkDue('2026-12-01T09:00:00Z')).toBe('2026-12-01T09:00:00Z');
    expect(checkDue('2026-12-01T09:00+01:00')).toBe('2026-12-01T09:00+01:00');
    expect(() => checkDue('friday')).toThrow(
      'due must be a day (2026-12-01) or an ISO instant with a zone (2026-12-01T09:00:00Z), got `friday`',
    );
    expect(() => checkDue('2026-13-45')).toThrow('got `2026-13-45`');
    expect(() => checkDue('2026-12-01T09:00:00')).toThrow('with a zone');
  });
});
