// Housekeeping removes memory's consolidation markers (data/memory/consolidated/) of item notes that are gone, and
// keeps those of notes that exist. A real worker in this process, over markers consolidation itself wrote.
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { consolidateItem, itemForConsolidation, memoryStores } from '@assistant/memory';
import { FileNoteStore } from '@assistant/notes';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { loadTestRuntime } from './testing/load-test-runtime.ts';
import { runUntilIdle } from './testing/run-until-idle.ts';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'assistant-markers-prune-'));
  await writeFile(path.join(dir, 'config.yaml'), 'data_dir: ./data\nworker: {poll_interval: 50ms}\n');
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

const noAnswer = JSON.stringify({ people: [], facts: [], followups: [] });

describe('housekeeping and data/memory/consolidated', () => {
  it('removes the markers of item notes that are gone, keeps the others', async () => {
    const { config, registry, queue } = await loadTestRuntime(dir);
    const notes = new FileNoteStore({ root: config.paths.notes });
    const stores = memoryStores({ notes });
    const model = {
      name: 'none',
      contextWindow: 8_000,
      chat: async () => ({
        message: { role: 'assistant' as const, content: noAnswer, toolCalls: [] },
        finishReason: 'stop' as const,
        model: 'none',
      }),
    };
    for (const uid of [1, 2]) {
      const notePath = `email/personal/${uid}.md`;
      const note = await notes.create(notePath, {
        data: { from: `P${uid} <p${uid}@x.example>`, subject: 'S', content_hash: `h${uid}` },
        body: 'B',
      });
      const item = itemForConsolidation(note);
      if (!item) throw new Error('not an item');
      await consolidateItem({ stores, model, item, dataDir: config.paths.dataDir });
    }
    const markers = path.join(config.paths.dataDir, 'memory', 'consolidated');
    expect(await readdir(markers)).toHaveLength(2);
    await notes.delete('email/personal/2.md');
    const housekeeping = await queue.enqueue({ type: 'system.housekeeping.run', source: 'cli' });
    if (housekeeping.status !== 'enqueued') throw new Error(housekeeping.status);

    await runUntilIdle({ config, registry });

    const left = await readdir(markers);
    expect(left).toHaveLength(1);
    expect(JSON.parse(await readFile(path.join(markers, left[0] ?? ''), 'utf8'))).toMatchObject({
      source: 'email/personal/1.md',
      version: 'h1',
    });
    const record = await queue.get(housekeeping.task.id);
    expect(record?.task?.result).toMatchObject({ consolidationMarkers: 1 });
    const [logFile] = await readdir(config.paths.logs);
    const log = await readFile(path.join(config.paths.logs, logFile ?? ''), 'utf8');
    expect(log).toContain('removed 1 consolidation markers of notes that are gone');
    await queue.close();
  });
});
