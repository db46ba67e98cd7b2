import { mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { FileHumanLog, FileNoteStore } from '@assistant/notes';
import { pino } from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { type CircuitBreakerSettings, CircuitBreakers } from './circuit-breakers.ts';
import { FakeClock } from './testing/index.ts';

const startMs = Date.parse('2026-03-02T09:00:00.000Z');
const type = 'email.inbox.check';
const notePath = `system/circuit-breakers/${type}.md`;

let directory: string;

beforeEach(async () => {
  directory = await mkdtemp(path.join(os.tmpdir(), 'assistant-breakers-'));
});
afterEach(async () => {
  await rm(directory, { recursive: true, force: true });
});

const logRecord = z.looseObject({ level: z.number(), msg: z.string() });

function setup(settings: CircuitBreakerSettings = { failures: 3, pauseMs: 60_000 }) {
  const clock = new FakeClock(startMs);
  const notes = new FileNoteStore({ root: path.join(directory, 'notes') });
  const humanLog = new FileHumanLog({ directory: path.join(directory, 'logs') });
  const records: z.infer<typeof logRecord>[] = [];
  const logger = pino({ level: 'info' }, { write: (line: string) => records.push(logRecord.parse(JSON.parse(line))) });
  const breakers = new CircuitBreakers({ notes, settings, humanLog, clock, logger });
  return { clock, notes, breakers, records, noteFile: path.join(notes.root, notePath) };
}

async function humanLines(): Promise<string[]> {
  const folder = path.join(directory, 'logs');
  const files = (await readdir(folder).catch(() => [])).sort();
  const texts = await Promise.all(files.map((file) => readFile(path.join(folder, file), 'utf8')));
  return texts.join('').split('\n').filter(Boolean);
}

async function failTimes(breakers: CircuitBreakers, count: number) {
  for (let index = 1; index <= count; index++) await breakers.recordFailure(type, `boom ${index}`);
}

describe('CircuitBreakers', () => {
  it('stays closed below the failure threshold and opens at it, pausing scheduled runs', async () => {
    const { breakers, notes } = setup();
    await failTimes(breakers, 2);
    expect(await breakers.allowScheduled(type)).toEqual({ allowed: true, trial: false });
    expect((await notes.read(notePath))?.data).toMatchObject({ state: 'closed', consecutive_failures: 2 });

    const opened = await breakers.recordFailure(type, 'boom 3');
    expect(opened).toEqual({
      taskType: type,
      state: 'open',
      consecutiveFailures: 3,
      openedAt: '2026-03-02T09:00:00.000Z',
      retryAt: '2026-03-02T09:01:00.000Z',
      lastError: 'boom 3',
      updatedAt: '2026-03-02T09:00:00.000Z',
    });
    expect((await notes.read(notePath))?.data).toEqual({
      task_type: type,
      state: 'open',
      consecutive_failures: 3,
      opened_at: '2026-03-02T09:00:00.000Z',
      retry_at: '2026-03-02T09:01:00.000Z',
      last_error: 'boom 3',
      updated_at: '2026-03-02T09:00:00.000Z',
    });
    expect(await breakers.allowScheduled(type)).toEqual({
      allowed: false,
      trial: false,
      reason: 'circuit open until 2026-03-02T09:01:00.000Z',
    });
    const lines = await humanLines();
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(
      /\*\*circuit-breaker\*\* paused email\.inbox\.check for 1m after 3 consecutive failures: none of its tasks is claimed or scheduled until then \(boom 3\)$/,
    );
  });

  it('resets the failure count when an attempt succeeds', async () => {
    const { breakers } = setup();
    await failTimes(breakers, 2);
    expect(await breakers.recordSuccess(type)).toMatchObject({ state: 'closed', consecutiveFailures: 0 });
    const afterTwoMore = await (async () => {
      await failTimes(breakers, 1);
      return breakers.recordFailure(type, 'again');
    })();
    expect(afterTwoMore).toMatchObject({ state: 'closed', consecutiveFailures: 2, lastError: 'again' });
    expect(await humanLines()).toEqual([]);
  });

  it('lets one trial through after the pause and closes when the trial succeeds', async () => {
    const { breakers, clock, notes } = setup();
    await failTimes(breakers, 3);
    await clock.advance(59_999);
    expect((await breakers.allowScheduled(type)).allowed).toBe(false);

    await clock.advance(1);
    expect(await breakers.allowScheduled(type)).toEqual({ allowed: true, trial: true });
    expect((await notes.read(notePath))?.data).toMatchObject({
      state: 'half_open',
      retry_at: '2026-03-02T09:02:00.000Z',
    });
    // While the trial is out, no other scheduled run goes through.
    expect(await breakers.allowScheduled(type)).toMatchObject({ allowed: false, trial: false });

    expect(await breakers.recordSuccess(type)).toMatchObject({ state: 'closed', consecutiveFailures: 0 });
    const data = (await notes.read(notePath))?.data;
    expect(data).toMatchObject({ state: 'closed', consecutive_failures: 0 });
    expect(data).not.toHaveProperty('retry_at');
    expect(data).not.toHaveProperty('last_error');
    expect(await breakers.allowScheduled(type)).toEqual({ allowed: true, trial: false });
    const lines = await humanLines();
    expect(lines[1]).toMatch(/trial run of email\.inbox\.check after a 1m pause$/);
    expect(lines[2]).toMatch(/email\.inbox\.check succeeded again; its tasks run again$/);
  });

  it('reopens with a new pause when the trial fails', async () => {
    const { breakers, clock } = setup();
    await failTimes(breakers, 3);
    await clock.advance(60_000);
    expect((await breakers.allowScheduled(type)).trial).toBe(true);
    await clock.advance(5_000);

    const reopened = await breakers.recordFailure(type, 'still down');
    expect(reopened).toMatchObject({
      state: 'open',
      consecutiveFailures: 4,
      openedAt: '2026-03-02T09:01:05.000Z',
      retryAt: '2026-03-02T09:02:05.000Z',
    });
    expect(await breakers.allowScheduled(type)).toMatchObject({ allowed: false });
    expect((await humanLines()).at(-1)).toMatch(
      /trial run of email\.inbox\.check failed; paused again for 1m \(still down\)$/,
    );
  });

  it('allows another trial when the last one has not reported within the pause', async () => {
    const { breakers, clock } = setup();
    await failTimes(breakers, 3);
    await clock.advance(60_000);
    expect((await breakers.allowScheduled(type)).trial).toBe(true);
    await clock.advance(59_999);
    expect((await breakers.allowScheduled(type)).allowed).toBe(false);
    await clock.advance(1);
    expect(await breakers.allowScheduled(type)).toEqual({ allowed: true, trial: true });
  });

  it('lets a worker claim exactly one trial task after the pause, and no other until the trial reports or its pause ends', async () => {
    const { breakers, clock, notes } = setup();
    expect(await breakers.claimTrial(type)).toEqual({ allowed: true, trial: false });
    await failTimes(breakers, 3);
    expect(await breakers.claimTrial(type)).toMatchObject({
      allowed: false,
      reason: 'circuit open until 2026-03-02T09:01:00.000Z',
      state: { state: 'open' },
    });
    await clock.advance(60_000);
    expect(await breakers.claimTrial(type)).toMatchObject({
      allowed: true,
      trial: true,
      state: { state: 'half_open', trialClaimedAt: '2026-03-02T09:01:00.000Z', retryAt: '2026-03-02T09:02:00.000Z' },
    });
    expect((await notes.read(notePath))?.data).toMatchObject({
      state: 'half_open',
      trial_claimed_at: '2026-03-02T09:01:00.000Z',
    });
    // A second worker (or the same one) claiming another task of the type is told to hold it.
    expect(await breakers.claimTrial(type)).toMatchObject({ allowed: false, trial: false });
    expect(await breakers.allowScheduled(type)).toMatchObject({ allowed: false });
    await clock.advance(60_000);
    expect(await breakers.claimTrial(type)).toMatchObject({ allowed: true, trial: true });
    expect(await breakers.recordSuccess(type)).toMatchObject({ state: 'closed' });
    expect((await notes.read(notePath))?.data).not.toHaveProperty('trial_claimed_at');
    expect(await breakers.claimTrial(type)).toMatchObject({ allowed: true, trial: false, state: { state: 'closed' } });
  });

  it('lets a worker claim the trial the scheduler let through, once', async () => {
    const { breakers, clock } = setup();
    await failTimes(breakers, 3);
    await clock.advance(60_000);
    expect(await breakers.allowScheduled(type)).toEqual({ allowed: true, trial: true });
    await clock.advance(1_000);
    expect(await breakers.claimTrial(type)).toMatchObject({ allowed: true, trial: true });
    expect(await breakers.claimTrial(type)).toMatchObject({ allowed: false });
    // Told once, by the scheduler's trial.
    expect((await humanLines()).filter((line) => line.includes('trial run of'))).toHaveLength(1);
  });

  it('writes no note when a success finds the type closed with no failures', async () => {
    const { breakers, noteFile } = setup();
    await breakers.recordSuccess(type);
    await breakers.recordSuccess(type);
    await expect(stat(noteFile)).rejects.toMatchObject({ code: 'ENOENT' });

    await breakers.recordFailure(type, 'once');
    await breakers.recordSuccess(type);
    const before = await stat(noteFile, { bigint: true });
    for (let index = 0; index < 3; index++) await breakers.recordSuccess(type);
    const after = await stat(noteFile, { bigint: true });
    expect([after.ino, after.mtimeNs]).toEqual([before.ino, before.mtimeNs]);
  });

  it('notices a note changed by someone else although it knew the type was closed', async () => {
    const { breakers, noteFile, notes } = setup();
    await breakers.recordSuccess(type);
    // Another process (or a person) opens the breaker.
    const other = new CircuitBreakers({ notes, settings: { failures: 1, pauseMs: 60_000 } });
    await other.recordFailure(type, 'from the other worker');
    expect(await breakers.recordSuccess(type)).toMatchObject({ state: 'closed', consecutiveFailures: 0 });
    expect(await readFile(noteFile, 'utf8')).toMatch(/^state: closed$/m);
  });

  it('lists every task type with a note, leaving out broken ones', async () => {
    const { breakers, notes, records } = setup();
    await failTimes(breakers, 3);
    await breakers.recordFailure('github.pulls.check', 'rate limited');
    await writeFile(path.join(notes.root, 'system/circuit-breakers/chat.poll.md'), '---\nstate: [unclosed\n---\n');

    const states = await breakers.list();
    expect(states.map((state) => [state.taskType, state.state, state.consecutiveFailures])).toEqual([
      [type, 'open', 3],
      ['github.pulls.check', 'closed', 1],
    ]);
    expect(records.some((record) => record.msg.includes('chat.poll.md cannot be read'))).toBe(true);
  });

  it('treats a broken note as closed, reports it once and never overwrites it', async () => {
    const { breakers, noteFile, records } = setup({ failures: 1, pauseMs: 60_000 });
    await breakers.recordFailure(type, 'boom');
    const broken = '---\nstate: open\nconsecutive_failures: [oops\n---\nMy notes.\n';
    await writeFile(noteFile, broken);

    expect(await breakers.allowScheduled(type)).toEqual({ allowed: true, trial: false });
    await breakers.recordFailure(type, 'boom again');
    await breakers.recordSuccess(type);
    expect(await readFile(noteFile, 'utf8')).toBe(broken);
    expect(records.filter((record) => record.msg.includes('cannot be read'))).toHaveLength(1);
  });

  it('treats a note with invalid values as broken and leaves it alone', async () => {
    const { breakers, noteFile, records } = setup();
    await breakers.recordFailure(type, 'boom');
    const edited = (await readFile(noteFile, 'utf8')).replace('state: closed', 'state: sleeping');
    await writeFile(noteFile, edited);

    expect(await breakers.allowScheduled(type)).toEqual({ allowed: true, trial: false });
    await failTimes(breakers, 3);
    expect(await readFile(noteFile, 'utf8')).toBe(edited);
    expect(records.find((record) => record.msg.includes('cannot be read'))?.problem).toMatch(/`state`/);
  });

  it('keeps the last error to one line of at most 300 characters', async () => {
    const { breakers } = setup();
    const state = await breakers.recordFailure(type, `first line\n  second line ${'x'.repeat(400)}`);
    expect(state.lastError).toHaveLength(300);
    expect(state.lastError).toMatch(/^first line second line x+…$/);
  });
});
