// Two processes append to the same daily log at once; every line must come out whole.
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { repoRoot, runNode } from './helpers/node-process.ts';
import { tempDir } from './helpers/temp-dir.ts';

describe('HumanLog across processes', () => {
  it('keeps 10,000 lines from two concurrent writers intact', async () => {
    await using dir = await tempDir();
    const writer = path.join(repoRoot, 'tests/fixtures/human-log-writer.ts');
    const runs = await Promise.all(['a', 'b'].map((name) => runNode({ args: [writer, dir.path, name, '5000'] })));
    for (const run of runs) {
      expect(run.stderr).toBe('');
      expect(run.code).toBe(0);
    }
    const text = await readFile(path.join(dir.path, '2026-11-22.md'), 'utf8');
    const lines = text.split('\n');
    expect(lines.pop()).toBe('');
    expect(lines).toHaveLength(10_000);
    const pattern = /^- 12:00:00 \*\*test\/([ab])\*\* line (\d+) x{200} \(\1\)$/;
    const seen = { a: new Set<number>(), b: new Set<number>() };
    for (const line of lines) {
      const match = pattern.exec(line);
      expect(match, line.slice(0, 80)).not.toBeNull();
      if (match) seen[match[1] === 'a' ? 'a' : 'b'].add(Number(match[2]));
    }
    expect(seen.a.size).toBe(5_000);
    expect(seen.b.size).toBe(5_000);
  });
});
