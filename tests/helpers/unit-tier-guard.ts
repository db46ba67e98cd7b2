// A setup file of the `unit` projects (vitest.config.ts): the unit tier runs in one process, so a test there that
// starts a child process fails at once, naming itself and what it started, instead of quietly making the fast tier
// slow or dependent on what is installed. Such a test belongs in tests/ (README "Testing").
//
// It runs before each test file, and the `unit` project's workers run file after file (decision 0080): it also
// resets what is process-wide on purpose, so each file starts as it would in a fresh process.
import childProcess from 'node:child_process';
import { existsSync } from 'node:fs';
import { syncBuiltinESMExports } from 'node:module';
import path from 'node:path';
import { clearSecretValues } from '@assistant/errors';
import { expect } from 'vitest';
import { repoRoot } from './node-process.ts';

/** Test files (or folders) that may still start processes, each with the reason. */
const allowed: Record<string, string> = {
  'packages/queue/src/read-task-text.test.ts': 'runs mkfifo to make a FIFO; no code of ours runs in a process',
};

const functions = ['spawn', 'spawnSync', 'exec', 'execSync', 'execFile', 'execFileSync', 'fork'] as const;

// The `unit` project reuses its workers across test files (`isolate: false`, decision 0080), and vitest evaluates a
// setup file again before each file: the functions are wrapped once per worker, and the test file is the one
// running when a process is started, never one remembered from an earlier evaluation.
const guarded = Symbol.for('assistant.unitTierGuard');
const exports = childProcess as unknown as Record<string, (...args: unknown[]) => unknown> & { [guarded]?: true };
if (!exports[guarded]) {
  exports[guarded] = true;
  for (const name of functions) {
    const original = exports[name];
    if (original === undefined) continue;
    exports[name] = function guardedFunction(this: unknown, ...args: unknown[]) {
      const [command] = args;
      const testFile = path.relative(repoRoot, expect.getState().testPath ?? '');
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
}

// Every secret value a process has loaded is scrubbed from what it writes (packages/errors): one file's `hunter2` must
// not turn into `[secret]` in the next file's expectations.
clearSecretValues();
