// The lean restart of the server and the worker (packages/process/src/lean-start.ts): the process replaces itself,
// same pid, with one started with the worker's V8 flags, its TypeScript from Assistant's stripped cache and with two
// malloc arenas, and takes what it added back out of the environment its children inherit, leaving what the owner set
// alone.
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import * as z from 'zod';
import { repoRoot, startNode } from './helpers/node-process.ts';
import { type TempDir, tempDir } from './helpers/temp-dir.ts';

const reportSchema = z.object({
  pid: z.number(),
  compileCacheDir: z.string().nullable(),
  nodeCompileCache: z.string().nullable(),
  mallocArenaMax: z.string().nullable(),
  added: z.string().nullable(),
  execArgv: z.array(z.string()),
});

/** An entry point that restarts lean and then says, in one line, what it runs with. */
async function writeEntry(dir: TempDir, call: 'leanStart' | 'openCompileCache' = 'leanStart'): Promise<string> {
  const memoryFlags = pathToFileURL(path.join(repoRoot, 'packages/process/src/lean-start.ts')).href;
  const entry = path.join(dir.path, 'entry.mjs');
  await writeFile(
    entry,
    `import module from 'node:module';
const { ${call} } = await import(${JSON.stringify(memoryFlags)});
${call}();
const value = (name) => process.env[name] ?? null;
process.stdout.write(JSON.stringify({
  pid: process.pid,
  compileCacheDir: module.getCompileCacheDir() ?? null,
  nodeCompileCache: value('NODE_COMPILE_CACHE'),
  mallocArenaMax: value('MALLOC_ARENA_MAX'),
  added: value('ASSISTANT_LEAN_START'),
  execArgv: process.execArgv,
}) + '\\n');
`,
  );
  return entry;
}

const workerFlags = ['--optimize-for-size', '--semi-space-growth-factor=1'];
const cacheHook = path.join(repoRoot, 'packages/process/src/typescript-cache-hook.js');

async function run(
  dir: TempDir,
  env: Record<string, string | undefined>,
  nodeArgs: readonly string[] = [],
  call: 'leanStart' | 'openCompileCache' = 'leanStart',
) {
  const child = startNode({ args: [...nodeArgs, await writeEntry(dir, call)], env });
  const exit = await child.exited;
  expect(exit.stderr).toBe('');
  expect(exit.code).toBe(0);
  const lines = exit.stdout.trim().split('\n');
  // One line: the first image never got past leanStart.
  expect(lines).toHaveLength(1);
  return { pid: child.child.pid, report: reportSchema.parse(JSON.parse(lines[0] ?? '')) };
}

describe('leanStart', () => {
  it('restarts the same pid with the V8 flags, the stripped TypeScript cache and two arenas, leaving no variable to children', async () => {
    await using dir = await tempDir();
    const { pid, report } = await run(dir, {
      NODE_COMPILE_CACHE: undefined,
      MALLOC_ARENA_MAX: undefined,
      NODE_DISABLE_COMPILE_CACHE: undefined,
    });
    expect(report.pid).toBe(pid);
    // On the command line, so they are in place before V8 sets up the heap (never set at run time: decision 0016),
    // and the hook before the entry point loads (decision 0083). Node's compile cache is not opened: its entries
    // stayed in memory for the life of the process.
    expect(report.execArgv).toEqual([...workerFlags, '--import', cacheHook]);
    expect(report).toMatchObject({ compileCacheDir: null, nodeCompileCache: null, mallocArenaMax: null, added: null });
  });

  it("keeps the owner's own settings, and takes out only what it added", async () => {
    await using dir = await tempDir();
    const { report } = await run(dir, {
      NODE_COMPILE_CACHE: undefined,
      MALLOC_ARENA_MAX: '8',
      NODE_DISABLE_COMPILE_CACHE: '1',
    });
    // Restarted for the flags alone: the cache the owner turned off stays off, and their arena count stays.
    expect(report.execArgv).toEqual(workerFlags);
    expect(report).toMatchObject({ compileCacheDir: null, nodeCompileCache: null, mallocArenaMax: '8', added: null });
  });

  it('leaves alone a process that already runs as it would restart', async () => {
    await using dir = await tempDir();
    const cache = path.join(dir.path, 'cache');
    const args = [...workerFlags, '--import', cacheHook];
    const { report } = await run(dir, { NODE_COMPILE_CACHE: cache, MALLOC_ARENA_MAX: '2' }, args);
    expect(report.execArgv).toEqual(args);
    expect(report).toMatchObject({ nodeCompileCache: cache, mallocArenaMax: '2', added: null });
  });

  it("loads TypeScript from the stripped cache: the first start fills it, the next never starts Node's stripper", async () => {
    await using dir = await tempDir();
    const cache = path.join(dir.path, 'stripped');
    await dir.write('package.json', '{"type": "module"}\n');
    await dir.write(
      'area.ts',
      'interface Shape { side: number }\nexport const area = (shape: Shape): number => shape.side ** 2;\nexport const where = new Error().stack?.split("\\n")[1];\n',
    );
    const memoryFlags = pathToFileURL(path.join(repoRoot, 'packages/process/src/lean-start.ts')).href;
    const entry = await dir.write(
      'entry.ts',
      `const { leanStart } = await import(${JSON.stringify(memoryFlags)});
leanStart();
const { area, where } = await import('./area.ts');
const stripper = process.moduleLoadList.some((name: string) => name.includes('amaro'));
process.stdout.write(JSON.stringify({ area: area({ side: 3 }), where, stripper, execArgv: process.execArgv }) + '\\n');
`,
    );
    const env = {
      ASSISTANT_TYPESCRIPT_CACHE: cache,
      NODE_COMPILE_CACHE: undefined,
      NODE_DISABLE_COMPILE_CACHE: undefined,
    };
    const starts = [];
    for (let start = 0; start < 2; start += 1) {
      const exit = await startNode({ args: [entry], env }).exited;
      expect(exit.stderr).toBe('');
      expect(exit.code).toBe(0);
      starts.push(JSON.parse(exit.stdout.trim()));
    }
    for (const report of starts) {
      expect(report.area).toBe(9);
      // Line and column as in the TypeScript: types became blanks.
      expect(report.where).toContain(`${pathToFileURL(path.join(dir.path, 'area.ts')).href}:3:22`);
      expect(report.execArgv).toContain(cacheHook);
    }
    expect(starts.map((report) => report.stripper)).toEqual([true, false]);
  });
});

// What every command that runs and exits calls first (apps/cli/src/main.ts): the cache without the restart.
describe('openCompileCache', () => {
  const unset = { NODE_COMPILE_CACHE: undefined, MALLOC_ARENA_MAX: undefined, NODE_DISABLE_COMPILE_CACHE: undefined };

  it('opens the compile cache in this process, changing nothing its children inherit', async () => {
    await using dir = await tempDir();
    const { pid, report } = await run(dir, unset, [], 'openCompileCache');
    expect(report.pid).toBe(pid);
    expect(report.execArgv).toEqual([]);
    expect(report.compileCacheDir).toContain(path.join(repoRoot, 'node_modules/.cache/assistant-compile-cache'));
    expect(report).toMatchObject({ nodeCompileCache: null, mallocArenaMax: null, added: null });
  });

  it('leaves the cache off when the owner turned it off, and leaves an open one alone', async () => {
    await using dir = await tempDir();
    const off = await run(dir, { ...unset, NODE_DISABLE_COMPILE_CACHE: '1' }, [], 'openCompileCache');
    expect(off.report.compileCacheDir).toBeNull();
    const cache = path.join(dir.path, 'cache');
    const own = await run(dir, { ...unset, NODE_COMPILE_CACHE: cache }, [], 'openCompileCache');
    expect(own.report.compileCacheDir).toContain(cache);
  });
});
