import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { loadConfig } from '@assistant/config';
import { FileNoteStore } from '@assistant/notes';
import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createWorkerMemory } from './worker-memory.ts';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'worker-memory-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function memoryFor(configText: string) {
  const configPath = path.join(dir, 'config.yaml');
  await writeFile(configPath, configText);
  const { config } = await loadConfig({ configPath });
  const notes = new FileNoteStore({ root: config.paths.notes });
  const lines: string[] = [];
  const logger = pino({ level: 'info' }, { write: (line: string) => void lines.push(line) });
  return { memory: createWorkerMemory({ config, notes, localNotes: notes, logger }), lines };
}

describe("the worker's memory", () => {
  it('starts one index for the whole process on first use, and closes it at shutdown', async () => {
    const { memory } = await memoryFor(
      'data_dir: ./data\nllms:\n  default: {base_url: "http://127.0.0.1:9/v1", model: m}\nmemory: {context: {facts: 3}}\n',
    );
    expect(memory.context.consolidate).toEqual(['email', 'github', 'chat']);
    expect(memory.context.context).toEqual({ facts: 3, guidance: 2 });
    const [first, second] = await Promise.all([memory.context.index(), memory.context.index()]);
    expect(first).toBe(second);
    expect(await memory.context.index()).toBe(first);
    // The hashing embedder when config.yaml has no `embeddings:`.
    expect(first.status().model).toMatch(/^hashing-v1-/);
    await memory.close();
    await expect(memory.context.index()).rejects.toThrow(/closed/);
  });

  it('consolidates nothing, and says so once, when the implied default profile does not exist', async () => {
    // No model at all: said at info, since nothing of the installation uses one.
    const bare = await memoryFor('data_dir: ./data\n');
    expect(bare.memory.context.consolidate).toEqual([]);
    const [line] = bare.lines.filter((text) => text.includes('memory: nothing is consolidated'));
    expect(line).toContain('there is no LLM profile `default`');
    expect(JSON.parse(line ?? '{}').level).toBe(30);
    await bare.memory.close();
    // Models, but not the implied default: a warning, the owner likely expected consolidation.
    const other = await memoryFor('data_dir: ./data\nllms:\n  local: {base_url: "http://127.0.0.1:9/v1", model: m}\n');
    const [warning] = other.lines.filter((text) => text.includes('memory: nothing is consolidated'));
    expect(JSON.parse(warning ?? '{}').level).toBe(40);
    await other.memory.close();
  });

  it('uses the embeddings endpoint config.yaml names, recording its model', async () => {
    const { memory } = await memoryFor(
      'data_dir: ./data\nllms:\n  default: {base_url: "http://127.0.0.1:9/v1", model: m}\nembeddings: {base_url: "http://127.0.0.1:9/v1", model: nomic-embed-text}\n',
    );
    expect((await memory.context.index()).status().model).toBe('nomic-embed-text');
    await memory.close();
  });
});
