import { mkdtemp, readFile, rm } from 'node:fs/promises';
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
});
