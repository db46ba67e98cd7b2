#!/usr/bin/env node
// The `assistant` launcher. Plain JavaScript on purpose: it must run on whatever Node the machine has (even 20)
// and get the TypeScript sources running on a Node that can strip types.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const main = fileURLToPath(new URL('../src/main.ts', import.meta.url));
const args = process.argv.slice(2);
const [major = 0, minor = 0] = process.versions.node.split('.').map(Number);
const atLeast = (wantMajor, wantMinor) => major > wantMajor || (major === wantMajor && minor >= wantMinor);

if (process.features.typescript) {
  // 23.6+ and 22.18+ strip types by default (unless turned off).
  await import('../src/main.ts');
} else if (atLeast(22, 12) && process.env.ASSISTANT_REEXEC !== '1') {
  // 22.12 to 22.17 can strip types behind a flag.
  run(process.execPath, ['--experimental-strip-types', '--disable-warning=ExperimentalWarning', main, ...args]);
} else {
  const pinned = pinnedNode();
  if (pinned === undefined || process.env.ASSISTANT_REEXEC === '1') {
    process.stderr.write(
      `assistant: Node ${process.version} cannot run Assistant, and the Node 24 the project pins was not found\n` +
        'hint: run `npm install` in the Assistant directory (it installs Node 24 into node_modules), or install Node 24\n',
    );
    process.exit(1);
  }
  run(pinned, [main, ...args]);
}

/** The `node` devDependency's binary, resolved from this package so it works from any working directory. */
function pinnedNode() {
  try {
    const manifest = createRequire(import.meta.url).resolve('node/package.json');
    const binary = path.join(path.dirname(manifest), 'bin', process.platform === 'win32' ? 'node.exe' : 'node');
    return existsSync(binary) ? binary : undefined;
  } catch {
    return undefined;
  }
}

/** Runs the command with our terminal, passes on stop signals, and leaves with its exit code or signal. */
function run(command, commandArgs) {
  // ASSISTANT_REEXEC stops a loop should the new Node turn out unable as well.
  const child = spawn(command, commandArgs, { stdio: 'inherit', env: { ...process.env, ASSISTANT_REEXEC: '1' } });
  const forward = (signal) => child.kill(signal);
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.on(signal, forward);
  child.on('error', (error) => {
    process.stderr.write(`assistant: could not run ${command}: ${error.message}\n`);
    process.exit(1);
  });
  child.on('exit', (code, signal) => {
    if (signal) {
      // Die by the same signal, so our parent sees what really happened.
      for (const name of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.off(name, forward);
      process.kill(process.pid, signal);
    } else process.exit(code ?? 1);
  });
}
