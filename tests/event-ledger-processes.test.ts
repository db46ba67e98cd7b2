// Two processes append to the same event ledger at once: every line comes out whole, and an event both report
// (the same type, source and native id) is stored once.
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { EventLedger } from '@assistant/events';
import { describe, expect, it } from 'vitest';
import { repoRoot, runNode } from './helpers/node-process.ts';
import { tempDir } from './helpers/temp-dir.ts';

describe('EventLedger across processes', () => {
  it('stores each id once and every line whole when two writers append the same and their own events', async () => {
    await using dir = await tempDir();
    const directory = path.join(dir.path, 'events');
    const writer = path.join(repoRoot, 'tests/fixtures/event-ledger-writer.ts');
    const count = 400;
    const runs = await Promise.all(
      ['a', 'b'].map((name) => runNode({ args: [writer, directory, name, String(count)] })),
    );
    for (const run of runs) {
      expect(run.stderr).toBe('');
      expect(run.code).toBe(0);
    }
    // Each shared id was stored by one writer and found stored by the other.
    const duplicates = runs.map((run) => Number(run.stdout.trim()));
    expect(duplicates.reduce((sum, value) => sum + value, 0)).toBe(count / 2);

    const ledger = new EventLedger({ directory });
    const days = await ledger.days();
    const lines = (await Promise.all(days.map((day) => readFile(path.join(directory, `${day}.jsonl`), 'utf8'))))
      .join('')
      .split('\n')
      .filter((line) => line !== '');
    const ids = lines.map((line) => (JSON.parse(line) as { id: string }).id);
    expect(ids).toHaveLength(count / 2 + count);
    expect(new Set(ids).size).toBe(ids.length);
    const all = await ledger.list({ limit: 10_000 });
    expect(all.events.map((event) => event.id)).toEqual(ids);
  });
});
