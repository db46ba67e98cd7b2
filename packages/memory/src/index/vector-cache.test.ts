import { appendFile, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { cacheFileName, VectorCache } from './vector-cache.ts';

let directory: string;
beforeEach(async () => {
  directory = await mkdtemp(path.join(os.tmpdir(), 'assistant-vector-cache-'));
});
afterEach(async () => {
  await rm(directory, { recursive: true, force: true });
});

const vector = (...values: number[]) => Float32Array.from(values);

describe('VectorCache', () => {
  it('names its file after the model, readable and distinct', () => {
    expect(cacheFileName('nomic-embed-text')).toMatch(/^vectors-nomic-embed-text-[0-9a-f]{8}\.jsonl$/);
    expect(cacheFileName('org/Model:Q4')).toMatch(/^vectors-org_model_q4-[0-9a-f]{8}\.jsonl$/);
    expect(cacheFileName('a/b')).not.toBe(cacheFileName('a:b'));
  });

  it("reads another writer's appends, and starts a fresh line after a writer that crashed mid-line", async () => {
    const one = new VectorCache({ directory, model: 'm' });
    const two = new VectorCache({ directory, model: 'm' });
    await one.append([{ hash: 'h1', vector: vector(1, 0) }]);
    await two.sync();
    expect(Array.from(two.get('h1') ?? [])).toEqual([1, 0]);
    // A crash half-way through a line.
    await appendFile(one.file, '{"hash":"h2","vec');
    await two.sync();
    expect(two.get('h2')).toBeUndefined();
    await two.append([{ hash: 'h3', vector: vector(0, 1) }]);
    const lines = (await readFile(one.file, 'utf8')).split('\n');
    expect(lines.at(-2)).toMatch(/^\{"hash":"h3"/);
    const three = new VectorCache({ directory, model: 'm' });
    await three.sync();
    expect([three.get('h1'), three.get('h2'), three.get('h3')].map((found) => found !== undefined)).toEqual([
      true,
      false,
      true,
    ]);
    expect(three.skippedLines).toBe(1);
  });

  it("ignores a file whose header names another model, and one deleted under it (another process's rebuild)", async () => {
    const cache = new VectorCache({ directory, model: 'm' });
    await writeFile(
      cache.file,
      '{"format":"assistant-memory-vectors","version":1,"model":"other"}\n{"hash":"h","vector":"AACAPw=="}\n',
    );
    await cache.sync();
    expect(cache.size).toBe(0);
    await rm(cache.file);
    const fresh = new VectorCache({ directory, model: 'm' });
    await fresh.append([{ hash: 'h', vector: vector(1) }]);
    await cache.sync();
    expect(cache.size).toBe(1);
    await new VectorCache({ directory, model: 'm' }).drop();
    await cache.sync();
    expect(cache.size).toBe(0);
  });

  it('compacts to the live vectors when the dead outnumber them, and another reader follows the new file', async () => {
    const cache = new VectorCache({ directory, model: 'm' });
    const reader = new VectorCache({ directory, model: 'm' });
    await cache.append(Array.from({ length: 1200 }, (_, index) => ({ hash: `h${index}`, vector: vector(index) })));
    await reader.sync();
    const live = new Set(['h1', 'h2']);
    expect(await cache.compact(new Set(Array.from({ length: 600 }, (_, index) => `h${index}`)))).toBe(false);
    const before = (await stat(cache.file)).size;
    expect(await cache.compact(live)).toBe(true);
    expect((await stat(cache.file)).size).toBeLessThan(before / 100);
    expect(cache.size).toBe(2);
    await reader.sync();
    expect(reader.size).toBe(2);
    expect(Array.from(reader.get('h2') ?? [])).toEqual([2]);
  });
});
