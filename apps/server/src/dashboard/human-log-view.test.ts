import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { FileHumanLog } from '@assistant/notes';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  dashboardHrefOf,
  logDates,
  parseLogDate,
  parseLogLine,
  readLogAfter,
  readLogBefore,
  renderLogLine,
} from './human-log-view.ts';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'assistant-log-view-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('parseLogLine', () => {
  it('reads the fields FileHumanLog writes, including a reason and a link', async () => {
    const log = new FileHumanLog({ directory: dir });
    const at = new Date(2026, 10, 23, 14, 3, 22);
    await log.write({
      source: 'email/inbox',
      message: 'archived "Weekly (digest)" from news@example.com',
      reason: 'rule "archive (newsletters)": human < 0.2',
      link: 'email/inbox/2026/weekly digest.md',
      at,
    });
    await log.write({ source: 'queue', message: 'plain (not a reason)x', at });
    const [first = '', second = ''] = (
      await import('node:fs/promises').then((fs) => fs.readFile(log.fileFor(at), 'utf8'))
    ).split('\n');
    expect(parseLogLine(first)).toEqual({
      time: '14:03:22',
      source: 'email/inbox',
      message: 'archived "Weekly (digest)" from news@example.com',
      reason: 'rule "archive (newsletters)": human < 0.2',
      link: 'email/inbox/2026/weekly%20digest.md',
    });
    expect(parseLogLine(second)).toMatchObject({
      source: 'queue',
      message: 'plain (not a reason)x',
      reason: undefined,
    });
    expect(parseLogLine('written by hand')).toMatchObject({ time: undefined, message: 'written by hand' });
  });

  it('renders every part as text: markup in a subject stays inert', () => {
    const line = parseLogLine(
      '- 10:00:00 **<b>x</b>** subject <script>alert(1)</script> "><img src=x onerror=alert(1)> ("><svg onload=alert(1)>) [→](<script>)',
    );
    const rendered = renderLogLine(line).toString();
    expect(rendered).not.toContain('<script>');
    expect(rendered).not.toContain('<img');
    expect(rendered).not.toContain('<svg');
    expect(rendered).not.toContain('<b>');
    expect(rendered).toContain('&lt;script&gt;alert(1)&lt;/script&gt;');
  });
});

describe('dashboardHrefOf', () => {
  it('links task ids to their page and note paths to theirs, and nothing else', () => {
    expect(dashboardHrefOf('01jabcdefghjkmnpqrstvwxyz0')).toBe('/tasks/01jabcdefghjkmnpqrstvwxyz0');
    expect(dashboardHrefOf('approvals/a%20b.md')).toBe('/notes/approvals/a%20b.md');
    expect(dashboardHrefOf('email/inbox/x.md')).toBe('/notes/email/inbox/x.md');
    for (const bad of [
      'javascript:alert(1)',
      'https://evil.test/',
      '../../etc/passwd',
      '/etc/passwd',
      'a/../b',
      '%E0%A4%A',
    ]) {
      expect(dashboardHrefOf(bad), bad).toBeUndefined();
    }
  });
});

describe('parseLogDate', () => {
  it('takes real days only', () => {
    expect(parseLogDate('2026-02-28')?.getDate()).toBe(28);
    for (const bad of ['2026-02-30', '2026-2-3', '../../x', '2026-02-28/../x', '', undefined]) {
      expect(parseLogDate(bad), String(bad)).toBeUndefined();
    }
  });
});

describe('reading a log by byte offsets', () => {
  const lines = (from: number, to: number) =>
    Array.from({ length: to - from }, (_, index) => `- 10:00:00 **test** line ${from + index}\n`).join('');

  it('reads the last lines, pages back from an offset, and goes on after one', async () => {
    const file = path.join(dir, '2026-11-23.md');
    await writeFile(file, lines(0, 500));
    const last = await readLogBefore(file, { maxLines: 200, maxBytes: 4_096 });
    expect(last.lines.at(-1)?.message).toBe('line 499');
    expect(last.lines.length).toBeLessThanOrEqual(200);
    expect(last.endOffset).toBe(last.fileSize);
    const earlier = await readLogBefore(file, { maxLines: 10, beforeOffset: last.startOffset });
    expect(earlier.lines.at(-1)?.message).toBe(`line ${499 - last.lines.length}`);
    expect(earlier.lines).toHaveLength(10);
    const all = await readLogBefore(file, { maxLines: 1_000 });
    expect(all.lines).toHaveLength(500);
    expect(all.startOffset).toBe(0);

    await writeFile(file, `${lines(0, 500)}${lines(500, 503)}- 10:00:01 **test** half`, { flag: 'w' });
    const after = await readLogAfter(file, { afterOffset: last.endOffset, maxLines: 200 });
    expect(after.lines.map((line) => line.message)).toEqual(['line 500', 'line 501', 'line 502']);
    expect(after.skipped).toBe(false);
    // The half-written line is not read until its newline is there.
    const nothing = await readLogAfter(file, { afterOffset: after.endOffset, maxLines: 200 });
    expect(nothing.lines).toEqual([]);
    expect(nothing.endOffset).toBe(after.endOffset);
    const flood = await readLogAfter(file, { afterOffset: 0, maxLines: 5 });
    expect(flood.lines.map((line) => line.message)).toEqual([
      'line 498',
      'line 499',
      'line 500',
      'line 501',
      'line 502',
    ]);
    expect(flood.skipped).toBe(true);
  });

  it('answers an empty chunk for a day without a log, and lists the days that have one', async () => {
    expect(await readLogBefore(path.join(dir, 'none.md'), { maxLines: 5 })).toMatchObject({ lines: [], fileSize: 0 });
    await writeFile(path.join(dir, '2026-11-22.md'), '');
    await writeFile(path.join(dir, '2026-11-23.md'), '');
    await writeFile(path.join(dir, 'notes.md'), '');
    expect(await logDates(dir)).toEqual(['2026-11-23', '2026-11-22']);
    expect(await logDates(path.join(dir, 'missing'))).toEqual([]);
  });
});
