import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { strippedTypeScript } from './typescript-cache.js';

const source = [
  "import type { Thing } from './thing.ts';",
  'interface Shape { side: number }',
  'export function area(shape: Shape): number {',
  '  return shape.side * shape.side; // — a comment with a dash',
  '}',
  'export const unit = area({ side: 1 } as Shape);',
  '',
].join('\n');

describe('the stripped TypeScript cache', () => {
  let directory = '';
  const before = process.env.ASSISTANT_TYPESCRIPT_CACHE;
  beforeEach(async () => {
    directory = await mkdtemp(path.join(os.tmpdir(), 'assistant-ts-cache-'));
    process.env.ASSISTANT_TYPESCRIPT_CACHE = directory;
  });
  afterEach(async () => {
    if (before === undefined) delete process.env.ASSISTANT_TYPESCRIPT_CACHE;
    else process.env.ASSISTANT_TYPESCRIPT_CACHE = before;
    await rm(directory, { recursive: true, force: true });
  });

  it('strips types to blanks, keeping every line and column, and serves the same text from its entry next time', () => {
    const first = strippedTypeScript('file:///app/area.ts', source);
    expect(first.cached).toBe(false);
    expect(first.code).not.toMatch(/interface|: number|as Shape|import type/);
    expect(first.code.split('\n').map((line) => line.length)).toEqual(source.split('\n').map((line) => line.length));
    expect(first.code.indexOf('return shape.side')).toBe(source.indexOf('return shape.side'));
    const second = strippedTypeScript('file:///app/area.ts', source);
    expect(second).toEqual({ code: first.code, cached: true });
  });

  it('strips again when the source changed, and keeps one entry per file', async () => {
    strippedTypeScript('file:///app/area.ts', source);
    const changed = source.replace('shape.side * shape.side', 'shape.side ** 2');
    const again = strippedTypeScript('file:///app/area.ts', changed);
    expect(again.cached).toBe(false);
    expect(again.code).toContain('shape.side ** 2');
    expect(strippedTypeScript('file:///app/area.ts', changed).cached).toBe(true);
    expect(await readdir(directory)).toHaveLength(1);
    // The same text at another place is another entry: a cached file never stands for a different path.
    expect(strippedTypeScript('file:///app/other.ts', changed).cached).toBe(false);
    expect(await readdir(directory)).toHaveLength(2);
  });

  it('never serves an entry cut short or without the hash of this source, and writes it again', async () => {
    const { code } = strippedTypeScript('file:///app/area.ts', source);
    const [entry] = await readdir(directory);
    const file = path.join(directory, entry ?? '');
    const text = await readFile(file, 'utf8');
    await writeFile(file, text.slice(0, -10));
    expect(strippedTypeScript('file:///app/area.ts', source)).toEqual({ code, cached: false });
    await writeFile(file, 'export const evil = 1;');
    expect(strippedTypeScript('file:///app/area.ts', source)).toEqual({ code, cached: false });
    expect(await readFile(file, 'utf8')).toBe(text);
  });

  it('still strips when its directory cannot be written', async () => {
    const blocked = path.join(directory, 'file');
    await writeFile(blocked, '');
    process.env.ASSISTANT_TYPESCRIPT_CACHE = path.join(blocked, 'cache');
    const result = strippedTypeScript('file:///app/area.ts', source);
    expect(result.cached).toBe(false);
    expect(result.code).toContain('return shape.side');
  });
});
