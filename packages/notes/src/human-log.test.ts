import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { FileHumanLog } from './human-log.ts';

describe('FileHumanLog', () => {
  it('writes one readable line per event into the day’s file, flattening line breaks', async () => {
    const directory = await mkdtemp(path.join(os.tmpdir(), 'assistant-log-'));
    try {
      const log = new FileHumanLog({ directory });
      const at = new Date(2026, 10, 22, 14, 3, 22);
      await log.write({
        source: 'email/inbox',
        message: 'archived "Weekly digest"\nfrom news@example.com',
        reason: 'rule "archive newsletters": human < 0.2',
        link: 'notes/email/personal/1 2.md',
        at,
      });
      await log.write({ source: 'queue', message: 'pruned 3 done tasks', at });
      expect(await readFile(path.join(directory, '2026-11-22.md'), 'utf8')).toBe(
        '- 14:03:22 **email/inbox** archived "Weekly digest" from news@example.com (rule "archive newsletters": human < 0.2) [→](notes/email/personal/1%202.md)\n' +
          '- 14:03:22 **queue** pruned 3 done tasks\n',
      );
    } finally {
      await rm(directory, { recursive: true, force: true });
    }
  });

  it('writes lines that come together in the order they came, each write returning once its line is in the file', async () => {
    const directory = await mkdtemp(path.join(os.tmpdir(), 'assistant-log-'));
    try {
      const log = new FileHumanLog({ directory });
      const at = new Date(2026, 10, 22, 14, 3, 22);
      const file = path.join(directory, '2026-11-22.md');
      const first = Array.from({ length: 5 }, (_, index) => log.write({ source: 'a', message: `line ${index}`, at }));
      await first[0];
      // The first line is in the file when its write returns (the others may be too).
      expect(await readFile(file, 'utf8')).toMatch(/^- 14:03:22 \*\*a\*\* line 0\n/);
      const second = Array.from({ length: 5 }, (_, index) => log.write({ source: 'b', message: `line ${index}`, at }));
      await Promise.all([...first, ...second]);
      const lines = (await readFile(file, 'utf8')).trim().split('\n');
      expect(lines).toEqual([
        ...Array.from({ length: 5 }, (_, index) => `- 14:03:22 **a** line ${index}`),
        ...Array.from({ length: 5 }, (_, index) => `- 14:03:22 **b** line ${index}`),
      ]);
    } finally {
      await rm(directory, { recursive: true, force: true });
    }
  });

  it('fails every write of a batch that cannot be appended, and writes the next ones', async () => {
    const directory = await mkdtemp(path.join(os.tmpdir(), 'assistant-log-'));
    try {
      const log = new FileHumanLog({ directory });
      const at = new Date(2026, 10, 22, 14, 3, 22);
      // The day's file is a directory: no append can work.
      await mkdir(path.join(directory, '2026-11-22.md'));
      const writes = [1, 2, 3].map((index) => log.write({ source: 'x', message: `${index}`, at }));
      for (const write of writes) await expect(write).rejects.toThrow(/EISDIR/);
      await log.write({ source: 'x', message: 'next day', at: new Date(2026, 10, 23, 9, 0, 0) });
      expect(await readFile(path.join(directory, '2026-11-23.md'), 'utf8')).toBe('- 09:00:00 **x** next day\n');
    } finally {
      await rm(directory, { recursive: true, force: true });
    }
  });

  it('removes the day files older than the retention, keeping today, the days within it and any other file', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'assistant-human-log-prune-'));
    try {
      const log = new FileHumanLog({ directory: dir });
      const names = ['2026-11-26.md', '2026-11-27.md', '2026-11-28.md', '2026-11-29.md', '2025-01-01.md'];
      for (const name of [...names, 'notes.md', '2026-11-01.md.bak'])
        await writeFile(path.join(dir, name), '- a line\n');
      // Noon on the 29th, local time: with 2 days, the 27th, 28th and 29th stay.
      expect(await log.prune({ retentionDays: 2, now: new Date(2026, 10, 29, 12) })).toBe(2);
      expect((await readdir(dir)).sort()).toEqual(
        ['2026-11-01.md.bak', '2026-11-27.md', '2026-11-28.md', '2026-11-29.md', 'notes.md'].sort(),
      );
      expect(await log.prune({ retentionDays: 2, now: new Date(2026, 10, 29, 12) })).toBe(0);
      expect(await new FileHumanLog({ directory: path.join(dir, 'none') }).prune({ retentionDays: 1 })).toBe(0);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
