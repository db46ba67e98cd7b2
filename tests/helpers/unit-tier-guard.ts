// A setup file of the `unit` project (vitest.config.ts): the unit tier runs in one process, so a test there that
// starts a child process fails at once, naming itself and what it started, instead of quietly making the fast tier
// slow or dependent on what is installed. Such a test belongs in tests/ (README "Testing").
import childProcess from 'node:child_process';
import { existsSync } from 'node:fs';
import { syncBuiltinESMExports } from 'node:module';
import path from 'node:path';
import { beforeEach, expect } from 'vitest';
import { repoRoot } from './node-process.ts';

/** Test files (or folders) that may still start processes, each with the reason. */
const allowed: Record<string, string> = {
  'packages/queue/src/read-task-text.test.ts': 'runs mkfifo to make a FIFO; no code of ours runs in a process',
};

const functions = ['spawn', 'spawnSync', 'exec', 'execSync', 'execFile', 'execFileSync', 'fork'] as const;

let testFile = '';
const updateTestFile = () => {
  testFile = path.relative(repoRoot, expect.getState().testPath ?? '');
};
updateTestFile();
beforeEach(updateTestFile);

const exports = childProcess as unknown as Record<string, (...args: unknown[]) => unknown>;
for (const name of functions) {
  const original = exports[name];
  if (original === undefined) continue;
  exports[name] = function guarded(this: unknown, ...args: unknown[]) {
    const [command] = args;
    // A path that does not exist starts nothing: tests of "bubblewrap is not installed" try exactly that.
    const startsNothing = typeof command === 'string' && path.isAbsolute(command) && !existsSync(command);
    if (!startsNothing && !Object.keys(allowed).some((prefix) => testFile.startsWith(prefix))) {
      throw new Error(
        `${testFile || 'a unit test'} started a process (${name} ${String(command)}): the unit tier runs in one ` +
          'process with nothing installed; move this test to tests/ (README "Testing")',
      );
    }
    return original.apply(this, args);
  };
}
// Named imports (`import { spawn } from 'node:child_process'`) see the guarded functions too.
syncBuiltinESMExports();
