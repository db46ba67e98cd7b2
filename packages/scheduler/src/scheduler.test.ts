import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { Schedule } from '@assistant/config';
import { FileHumanLog, FileNoteStore } from '@assistant/notes';
import { pino } from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { CircuitBreakers } from './circuit-breakers.ts';
import { type ScheduledJob, type ScheduledRun, Scheduler } from './scheduler.ts';
import { FakeClock } from './testing/index.ts';

const minute = 60_000;
const startMs = Date.parse('2026-03-02T09:00:00.000Z');
const every45m: Schedule = { kind: 'every', everyMs: 45 * minute };
const notePath = 'system/schedules/personal-mail.md';

let directory: string;
const schedulers: Scheduler[] = [];

beforeEach(async () => {
  directory = await mkdtemp(path.join(os.tmpdir(), 'assistant-scheduler-'));
});
afterEach(async () => {
  for (const scheduler of schedulers.splice(0)) await scheduler.close();
  await rm(directory, { recursive: true, force: true });
});

const logRecord = z.looseObject({ level: z.number(), msg: z.string() });
const warnLevel = 40;
const errorLevel = 50;

/** Shared by the schedulers of one test, as a restarted server shares the data directory and time goes on. */
function setup() {
  const clock = new FakeClock(startMs);
  const notes = new FileNoteStore({ root: path.join(directory, 'notes') });
  const humanLog = new FileHumanLog({ directory: path.join(directory, 'logs') });
  const records: z.infer<typeof logRecord>[] = [];
  const logger = pino({ level: 'info' }, { write: (line: string) => records.push(logRecord.parse(JSON.parse(line))) });
  const fires: Array<ScheduledRun & { atMinute: number }> = [];

  function job(overrides: Partial<ScheduledJob> = {}): ScheduledJob {
    return {
      id: 'personal-mail',
      schedule: every45m,
      description: 'personal-mail (email): inbox',
      taskTypes: ['email.inbox.check'],
      fire: async (run) => {
        fires.push({ ...run, atMinute: (clock.now() - startMs) / minute });
      },
      ...overrides,
    };
  }

  async function start(
    jobs: ScheduledJob[],
    breakers?: CircuitBreakers,
    paused?: (jobId: string) => Promise<string | undefined>,
  ): Promise<Scheduler> {
    const scheduler = new Scheduler({
      jobs,
      notes,
      humanLog,
      logger,
      clock,
      ...(breakers ? { breakers } : {}),
      ...(paused ? { paused } : {}),
    });
    schedulers.push(scheduler);
    await scheduler.start();
    return scheduler;
  }

  /**
   * Moves the fake clock to `minutes` after the start, one wake-up at a time; after each it waits until the
   * scheduler sleeps again, so a fire and its note write finish before time moves on.
   */
  async function runUntil(minutes: number): Promise<void> {
    const targetMs = startMs + minutes * minute;
    for (;;) {
      await clock.whenSleeping();
      const wakeAtMs = clock.nextWakeAtMs();
      if (wakeAtMs === undefined || wakeAtMs > targetMs) break;
      await clock.advanceTo(wakeAtMs);
    }
    await clock.advanceTo(targetMs);
  }

  const fireTimes = () => fires.map((fire) => fire.atMinute);
  return {
    clock,
    notes,
    humanLog,
    records,
    fires,
    fireTimes,
    job,
    start,
    runUntil,
    noteFile: path.join(notes.root, notePath),
  };
}

async function humanLines(): Promise<string[]> {
  const folder = path.join(directory, 'logs');
  const files = (await readdir(folder).catch(() => [])).sort();
  const texts = await Promise.all(files.map((file) => readFile(path.join(folder, file), 'utf8')));
  return texts.join('').split('\n').filter(Boolean);
}

const at = (minutes: number) => new Date(startMs + minutes * minute).toISOString();

describe('Scheduler', () => {
  it('skips the runs of a job the owner paused, tells the human log once, and fires again at the next slot after resume', async () => {
    const { fireTimes, job, start, runUntil } = setup();
    let pause: string | undefined = 'paused by cli at 2026-03-02T08:00:00.000Z: on holiday';
    const scheduler = await start([job()], undefined, async (jobId) => (jobId === 'personal-mail' ? pause : undefined));
    await runUntil(100);
    expect(fireTimes()).toEqual([]);
    expect(scheduler.status()[0]?.paused).toBe(pause);
    expect((await humanLines()).filter((line) => line.includes('skipping the scheduled runs'))).toHaveLength(1);
    pause = undefined;
    await runUntil(200);
    // Skipped runs are not fires: the resumed job keeps its 45-minute grid from the start and catches nothing up.
    expect(fireTimes()).toEqual([135, 180]);
  });

  it('fires an `every` job at once when it never fired, then at true 45-minute intervals', async () => {
    const { clock, fires, fireTimes, job, start, runUntil, notes } = setup();
    // Not on a 45-minute boundary of the clock: the interval counts from the first fire.
    await clock.advanceTo(startMs + 7 * minute + 13_000);
    const scheduler = await start([job()]);
    await runUntil(150);

    const firstMinute = 7 + 13 / 60;
    expect(fireTimes()).toEqual([0, 45, 90, 135].map((minutes) => firstMinute + minutes));
    expect(fires.map((fire) => fire.reason)).toEqual(['first_run', 'due', 'due', 'due']);
    expect(fires[1]).toMatchObject({
      scheduledAtMs: startMs + (firstMinute + 45) * minute,
      taskTypes: ['email.inbox.check'],
    });
    const note = await notes.read(notePath);
    expect(note?.data).toEqual({
      job: 'personal-mail',
      description: 'personal-mail (email): inbox',
      schedule: 'every 45m',
      last_fired_at: at(firstMinute + 135),
      next_run_at: at(firstMinute + 180),
    });
    expect(note?.body).toMatch(/edit `last_fired_at` by hand/);
    expect(scheduler.status()).toEqual([
      {
        id: 'personal-mail',
        description: 'personal-mail (email): inbox',
        schedule: every45m,
        lastFiredAt: at(firstMinute + 135),
        nextRunAt: at(firstMinute + 180),
      },
    ]);
    // Routine fires go to the logger only.
    expect(await humanLines()).toEqual([]);
  });

  it('neither fires nor doubles a run when restarted before the next one is due', async () => {
    const { clock, fires, fireTimes, job, start, runUntil } = setup();
    const first = await start([job()]);
    await runUntil(100);
    await first.close();
    expect(fireTimes()).toEqual([0, 45, 90]);

    await clock.advanceTo(startMs + 120 * minute);
    await start([job()]);
    await runUntil(200);
    expect(fireTimes()).toEqual([0, 45, 90, 135, 180]);
    expect(fires.slice(3).map((fire) => fire.reason)).toEqual(['due', 'due']);
  });

  it('fires exactly one catch-up run when restarted after missing one, then counts from it', async () => {
    const { clock, fires, fireTimes, job, start, runUntil } = setup();
    const first = await start([job()]);
    await runUntil(100);
    await first.close();

    // 135 was missed while nothing ran.
    await clock.advanceTo(startMs + 140 * minute);
    await start([job()]);
    await runUntil(240);
    expect(fireTimes()).toEqual([0, 45, 90, 140, 185, 230]);
    expect(fires[3]).toMatchObject({ reason: 'catch_up', scheduledAtMs: startMs + 140 * minute });
    const lines = await humanLines();
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain(
      `**scheduler** catch-up run of personal-mail (email): inbox (the run due at ${at(135)} was missed while the server was stopped)`,
    );
  });

  it('fires one catch-up run however many runs were missed', async () => {
    const { clock, fireTimes, job, start, runUntil } = setup();
    const first = await start([job()]);
    await runUntil(10);
    await first.close();

    await clock.advanceTo(startMs + 500 * minute);
    await start([job()]);
    await runUntil(550);
    expect(fireTimes()).toEqual([0, 500, 545]);
  });

  it('skips a missed run without firing when catchUp is false', async () => {
    const { clock, fires, fireTimes, job, start, runUntil } = setup();
    const schedule: Schedule = { ...every45m, catchUp: false };
    const first = await start([job({ schedule })]);
    await runUntil(100);
    await first.close();

    await clock.advanceTo(startMs + 140 * minute);
    await start([job({ schedule })]);
    await runUntil(230);
    expect(fireTimes()).toEqual([0, 45, 90, 180, 225]);
    expect(fires.map((fire) => fire.reason)).not.toContain('catch_up');
  });

  it('fires a cron job at the top of each hour, not at start', async () => {
    const { clock, fires, fireTimes, job, start, runUntil, notes } = setup();
    const schedule: Schedule = { kind: 'cron', expression: '0 * * * *', timezone: 'UTC' };
    await clock.advanceTo(startMs + 20 * minute);
    await start([job({ schedule })]);
    expect((await notes.read(notePath))?.data).toEqual({
      job: 'personal-mail',
      description: 'personal-mail (email): inbox',
      schedule: 'cron 0 * * * * (UTC)',
      next_run_at: at(60),
    });

    await runUntil(200);
    expect(fireTimes()).toEqual([60, 120, 180]);
    expect(fires.map((fire) => fire.reason)).toEqual(['due', 'due', 'due']);
  });

  it('catches up a cron job once after a restart that missed two runs', async () => {
    const { clock, fireTimes, job, start, runUntil } = setup();
    const schedule: Schedule = { kind: 'cron', expression: '0 * * * *', timezone: 'UTC' };
    const first = await start([job({ schedule })]);
    await runUntil(70);
    await first.close();

    await clock.advanceTo(startMs + 190 * minute);
    await start([job({ schedule })]);
    await runUntil(250);
    expect(fireTimes()).toEqual([60, 190, 240]);
  });

  it('counts from a last_fired_at a person wrote, keeping the keys they added', async () => {
    const { fires, fireTimes, job, start, runUntil, noteFile } = setup();
    await mkdir(path.dirname(noteFile), { recursive: true });
    await writeFile(
      noteFile,
      `---\n# moved back by hand\nlast_fired_at: ${at(-10)}\nowner_comment: keep me\n---\nMy own words.\n`,
    );
    await start([job()]);
    await runUntil(100);

    expect(fireTimes()).toEqual([35, 80]);
    expect(fires[0]?.reason).toBe('due');
    const text = await readFile(noteFile, 'utf8');
    expect(text).toContain('# moved back by hand\n');
    expect(text).toContain('owner_comment: keep me\n');
    expect(text).toContain(`last_fired_at: ${at(80)}\n`);
    expect(text.endsWith('---\nMy own words.\n')).toBe(true);
  });

  it('writes last_fired_at only after fire() has returned', async () => {
    const { notes, job, start, runUntil } = setup();
    const seenDuringFire: unknown[] = [];
    await start([
      job({
        fire: async () => {
          seenDuringFire.push((await notes.read(notePath))?.data.last_fired_at);
        },
      }),
    ]);
    await runUntil(50);
    expect(seenDuringFire).toEqual([undefined, at(0)]);
    expect((await notes.read(notePath))?.data.last_fired_at).toBe(at(45));
  });

  it('runs from memory and never overwrites a state note it cannot read', async () => {
    const { fireTimes, job, start, runUntil, noteFile, records } = setup();
    const broken = '---\nlast_fired_at: [unclosed\n---\nSomeone was editing this.\n';
    await mkdir(path.dirname(noteFile), { recursive: true });
    await writeFile(noteFile, broken);

    const scheduler = await start([job()]);
    await runUntil(100);
    expect(fireTimes()).toEqual([0, 45, 90]);
    expect(scheduler.status()[0]).toMatchObject({ lastFiredAt: at(90), nextRunAt: at(135) });
    expect(await readFile(noteFile, 'utf8')).toBe(broken);
    expect(records.filter((record) => record.level === warnLevel).map((record) => record.msg)).toEqual([
      `${notePath} cannot be read; personal-mail runs from memory until the server restarts, and the file is left as it is`,
    ]);
    expect((await humanLines())[0]).toContain(`**scheduler** ${notePath} cannot be read`);
  });

  it('keeps the schedule when fire() throws, and records no fire for it', async () => {
    const { fireTimes, fires, job, start, runUntil, notes, records } = setup();
    let calls = 0;
    await start([
      job({
        fire: async (run) => {
          calls += 1;
          if (calls === 1) throw new Error('queue directory missing');
          fires.push({ ...run, atMinute: (run.scheduledAtMs - startMs) / minute });
        },
      }),
    ]);
    await runUntil(10);
    expect(records.find((record) => record.level === errorLevel)?.msg).toBe(
      'personal-mail (email): inbox: fire() failed; the job keeps its schedule',
    );
    expect((await notes.read(notePath))?.data).not.toHaveProperty('last_fired_at');

    await runUntil(100);
    expect(calls).toBe(3);
    expect(fireTimes()).toEqual([45, 90]);
    expect((await notes.read(notePath))?.data.last_fired_at).toBe(at(90));
  });

  it('fires jobs due at the same time in job order', async () => {
    const { fires, job, start, runUntil } = setup();
    const order: string[] = [];
    const named = (id: string) =>
      job({
        id,
        description: id,
        fire: async (run) => {
          order.push(`${id}@${(run.scheduledAtMs - startMs) / minute}`);
        },
      });
    await start([named('c-job'), named('a-job'), named('b-job')]);
    await runUntil(50);
    expect(order).toEqual(['c-job@0', 'a-job@0', 'b-job@0', 'c-job@45', 'a-job@45', 'b-job@45']);
    expect(fires).toEqual([]);
  });

  it('skips a job whose breaker is open and resumes with a trial after the pause', async () => {
    const { clock, notes, humanLog, fires, fireTimes, job, start, runUntil } = setup();
    const breakers = new CircuitBreakers({ notes, settings: { failures: 2, pauseMs: 60 * minute }, humanLog, clock });
    await breakers.recordFailure('email.inbox.check', 'IMAP login failed');
    await breakers.recordFailure('email.inbox.check', 'IMAP login failed');

    const scheduler = await start(
      [
        job({
          fire: async (run) => {
            fires.push({ ...run, atMinute: (clock.now() - startMs) / minute });
            // The worker would record the trial task's outcome.
            await breakers.recordSuccess('email.inbox.check');
          },
        }),
      ],
      breakers,
    );
    await runUntil(50);
    expect(fireTimes()).toEqual([]);
    expect(scheduler.status()[0]).toMatchObject({
      nextRunAt: at(90),
      paused: `email.inbox.check: circuit open until ${at(60)}`,
    });
    // Skipped runs are not fires.
    expect((await notes.read(notePath))?.data).not.toHaveProperty('last_fired_at');

    await runUntil(140);
    expect(fireTimes()).toEqual([90, 135]);
    expect(fires.map((fire) => fire.reason)).toEqual(['due', 'due']);
    expect(scheduler.status()[0]).not.toHaveProperty('paused');
    const lines = await humanLines();
    expect(lines.filter((line) => line.includes('skipped the scheduled run of personal-mail'))).toHaveLength(2);
    expect(lines.some((line) => line.includes('trial run of email.inbox.check after a 1h pause'))).toBe(true);
    expect(lines.some((line) => line.includes('email.inbox.check succeeded again'))).toBe(true);
  });

  it('leaves out only the task types whose breaker is open', async () => {
    const { clock, notes, fires, job, start, runUntil } = setup();
    const breakers = new CircuitBreakers({ notes, settings: { failures: 1, pauseMs: 60 * minute }, clock });
    await breakers.recordFailure('github.issues.check', 'token expired');
    await start([job({ taskTypes: ['github.pulls.check', 'github.issues.check'] })], breakers);
    await runUntil(0);
    expect(fires).toMatchObject([{ reason: 'first_run', taskTypes: ['github.pulls.check'] }]);
    expect((await humanLines())[0]).toContain('left github.issues.check out of the run of personal-mail');
  });

  it('waits for a fire in progress when closed, and closes once', async () => {
    const { job, start, notes } = setup();
    const fireStarted = Promise.withResolvers<void>();
    const fireMayEnd = Promise.withResolvers<void>();
    const scheduler = await start([
      job({
        fire: async () => {
          fireStarted.resolve();
          await fireMayEnd.promise;
        },
      }),
    ]);
    await fireStarted.promise;
    let closed = false;
    const closing = scheduler.close().then(() => {
      closed = true;
    });
    expect(scheduler.close()).toBe(scheduler.close());
    await new Promise((resolve) => setImmediate(resolve));
    expect(closed).toBe(false);

    fireMayEnd.resolve();
    await closing;
    expect((await notes.read(notePath))?.data.last_fired_at).toBe(at(0));
    await expect(scheduler.start()).rejects.toThrow(/closed/);
  });

  it('refuses job ids that cannot name a note', () => {
    const { job, notes } = setup();
    expect(() => new Scheduler({ jobs: [job({ id: '../escape' })], notes, logger: pino({ level: 'silent' }) })).toThrow(
      'Expected a job id of lower-case letters, digits, `_` and `-`, got `../escape`',
    );
  });
});
