// The queue's file layout (paths, task file names, moves, rewrites, quarantine) is private to packages/queue:
// everything else speaks the interfaces of `@assistant/queue` (TaskQueue, TaskConsumer, TaskEvents,
// WorkerDirectory), so a second backend can replace the file one. This test fails when code outside the package
// reaches for the layout: a deep import, a relative path into the package, or a name of the file backend.
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import * as queuePackage from '@assistant/queue';
import { describe, expect, it } from 'vitest';
import { repoRoot } from './helpers/node-process.ts';

const queueDirectory = path.join(repoRoot, 'packages', 'queue');

/** Names of the file backend that must not leave the package. */
const forbiddenNames = [
  'encodeTaskName',
  'decodeTaskName',
  'decodeStateName',
  'formatNameTimestamp',
  'requeuedTaskName',
  'idMarker',
  'queuePaths',
  'QueuePaths',
  'reasonSuffix',
  'isScratchName',
  'WorkerRegistry',
  'FileWorkerDirectory',
  'FileTaskQueue',
  'FileTaskConsumer',
  'FileTaskEvents',
  'FileEntry',
  'FileRecord',
  'PendingIndex',
  'writeFileDurably',
  'syncDirectory',
  'stringifyTask',
  'readTaskText',
];

/** The entry points other code may import. */
const allowedSpecifiers = new Set(['@assistant/queue', '@assistant/queue/testing']);

async function sourceFiles(): Promise<string[]> {
  const files: string[] = [];
  for (const group of ['apps', 'packages', 'integrations', 'tests', 'bench']) {
    const entries = await readdir(path.join(repoRoot, group), { recursive: true, withFileTypes: true }).catch(() => []);
    for (const entry of entries) {
      if (!entry.isFile() || !/\.(ts|mts|js|mjs)$/.test(entry.name)) continue;
      const file = path.join(entry.parentPath, entry.name);
      if (file.includes(`${path.sep}node_modules${path.sep}`)) continue;
      if (file.startsWith(queueDirectory + path.sep)) continue;
      // This file holds the reaches it checks for, as examples.
      if (file === import.meta.filename) continue;
      files.push(file);
    }
  }
  return files;
}

// `import … from 'x'`, `export … from 'x'`, `import('x')`, `import 'x'`: the specifier, and the braces before it.
const importPattern =
  /(?:\b(?:import|export)\s*(type\s+)?(\{[^}]*\}|\*\s+as\s+\w+|\w+)?\s*from\s*|\bimport\s*\(\s*|^\s*import\s+)['"]([^'"\s]+)['"]/gm;

/** Problems with the imports of one file's text; `file` is the path used to resolve relative imports. */
function boundaryProblems(file: string, text: string): string[] {
  const problems: string[] = [];
  const shown = path.relative(repoRoot, file);
  for (const match of text.matchAll(importPattern)) {
    const imported = match[2] ?? '';
    const specifier = match[3] ?? '';
    if (specifier.startsWith('.')) {
      const target = path.resolve(path.dirname(file), specifier);
      if (target === queueDirectory || target.startsWith(queueDirectory + path.sep)) {
        problems.push(`${shown}: '${specifier}' reaches into packages/queue by a relative path`);
      }
      continue;
    }
    // `@assistant/queue-redis` is another backend, a package of its own: it too reaches the queue only by its entry.
    if (!specifier.startsWith('@assistant/queue') || /^@assistant\/queue-redis(\/|$)/.test(specifier)) continue;
    if (!allowedSpecifiers.has(specifier)) {
      problems.push(`${shown}: imports '${specifier}'; only @assistant/queue and @assistant/queue/testing are public`);
      continue;
    }
    for (const name of forbiddenNames) {
      if (new RegExp(`\\b${name}\\b`).test(imported)) {
        problems.push(`${shown}: imports ${name} from '${specifier}', a file-layout internal of the queue`);
      }
    }
  }
  return problems;
}

describe('queue boundary', () => {
  it('no code outside packages/queue imports the file layout', async () => {
    const problems: string[] = [];
    for (const file of await sourceFiles()) problems.push(...boundaryProblems(file, await readFile(file, 'utf8')));
    expect(problems).toEqual([]);
  });

  it('the package index exports none of the file backend', () => {
    const exported = Object.keys(queuePackage);
    expect(exported.filter((name) => forbiddenNames.includes(name))).toEqual([]);
    expect(exported).toContain('openFileTaskQueue');
  });

  it('catches each kind of reach (the check itself can fail)', () => {
    const file = path.join(repoRoot, 'apps', 'server', 'src', 'x.ts');
    expect(boundaryProblems(file, "import { queuePaths } from '@assistant/queue/src/file-layout.ts';")).toHaveLength(1);
    expect(boundaryProblems(file, "import { x } from '../../../packages/queue/src/task-name.ts';")).toHaveLength(1);
    expect(boundaryProblems(file, "import { encodeTaskName, type TaskQueue } from '@assistant/queue';")).toEqual([
      "apps/server/src/x.ts: imports encodeTaskName from '@assistant/queue', a file-layout internal of the queue",
    ]);
    expect(boundaryProblems(file, "const m = await import('@assistant/queue/src/index.ts');")).toHaveLength(1);
    expect(boundaryProblems(file, "import { openFileTaskQueue, type TaskQueue } from '@assistant/queue';")).toEqual([]);
  });
});
