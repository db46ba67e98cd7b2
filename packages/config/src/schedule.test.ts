import { describe, expect, it } from 'vitest';
import { nextRuns, validateCron } from './schedule.ts';

describe('nextRuns', () => {
  it('keeps `every` schedules as true intervals from the last run', () => {
    const from = new Date('2026-01-05T10:00:00Z');
    const runs = nextRuns(
      { kind: 'every', everyMs: 30 * 60_000 },
      { from, count: 3, lastRunAt: new Date('2026-01-05T09:50:00Z') },
    );
    expect(runs.map((run) => run.toISOString())).toEqual([
      '2026-01-05T10:20:00.000Z',
      '2026-01-05T10:50:00.000Z',
      '2026-01-05T11:20:00.000Z',
    ]);
  });

  it('lists cron runs in working hours on weekdays', () => {
    // 2026-01-09 is a Friday: the runs after 18:00 skip the weekend.
    const runs = nextRuns(
      { kind: 'cron', expression: '0 8-18 * * 1-5', timezone: 'UTC' },
      { from: new Date('2026-01-09T17:30:00Z'), count: 3 },
    );
    expect(runs.map((run) => run.toISOString())).toEqual([
      '2026-01-09T18:00:00.000Z',
      '2026-01-12T08:00:00.000Z',
      '2026-01-12T09:00:00.000Z',
    ]);
  });

  it('honours a timezone', () => {
    const [run] = nextRuns(
      { kind: 'cron', expression: '0 8 * * *', timezone: 'Europe/Berlin' },
      { from: new Date('2026-07-01T00:00:00Z'), count: 1 },
    );
    expect(run?.toISOString()).toBe('2026-07-01T06:00:00.000Z');
  });
});

describe('validateCron', () => {
  it('accepts five and six field expressions', () => {
    expect(validateCron('0 8-18 * * 1-5')).toBeUndefined();
    expect(validateCron('*/10 * * * * *')).toBeUndefined();
  });

  it('explains what is wrong', () => {
    expect(validateCron('0 8 * *')).toMatch(/has 4 fields/);
    expect(validateCron('61 * * * *')).toMatch(/minute/);
    expect(validateCron('0 8 * * *', 'Mars/Olympus')).toMatch(/not a known time zone/);
  });
});
