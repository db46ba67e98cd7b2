import { type ChildProcess, spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
export const cliMain = path.join(repoRoot, 'apps/cli/src/main.ts');

export interface NodeRun {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

export interface NodeProcess {
  child: ChildProcess;
  /** Everything written so far. */
  stdout(): string;
  stderr(): string;
  /** Resolves with the first match of `pattern` in stdout (or stderr), as soon as it appears. */
  waitForOutput(
    pattern: RegExp,
    options?: { stream?: 'stdout' | 'stderr'; timeoutMs?: number },
  ): Promise<RegExpMatchArray>;
  /** Resolves once the process has exited and its output is complete. */
  exited: Promise<NodeRun>;
}

export interface StartNodeOptions {
  args: readonly string[];
  /** Added to an environment cleared of ASSISTANT_* variables, so the caller's shell cannot leak in. */
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  /** `pipe` to write to the child's `child.stdin` (answers to a command's questions). @default 'ignore' */
  stdin?: 'ignore' | 'pipe';
}

export interface RunNodeOptions extends StartNodeOptions {
  /**
   * How long `runNode` / `runCli` wait for the process to exit before killing it and failing with the command and
   * its output so far.
   * @default 25_000 (below the integration tier's 30 s test timeout, so this error is the one reported)
   */
  timeoutMs?: number;
}

/** Starts this Node (the pinned 24, which strips types) on a script, collecting its output. */
export function startNode(options: StartNodeOptions): NodeProcess {
  const env = Object.fromEntries(Object.entries(process.env).filter(([key]) => !key.startsWith('ASSISTANT_')));
  const child = spawn(process.execPath, [...options.args], {
    cwd: options.cwd ?? repoRoot,
    env: { ...env, ...options.env },
    stdio: [options.stdin ?? 'ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  let closed = false;
  const listeners = new Set<() => void>();
  const notify = () => {
    for (const listener of listeners) listener();
  };
  // Both are pipes (stdio above); the type cannot tell once stdin is chosen at run time.
  const { stdout: outStream, stderr: errStream } = child;
  if (!outStream || !errStream) throw new Error('the child was spawned without stdout and stderr pipes');
  outStream.setEncoding('utf8').on('data', (text: string) => {
    stdout += text;
    notify();
  });
  errStream.setEncoding('utf8').on('data', (text: string) => {
    stderr += text;
    notify();
  });
  const exited = new Promise<NodeRun>((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code, signal) => {
      closed = true;
      notify();
      resolve({ code, signal, stdout, stderr });
    });
  });
  return {
    child,
    stdout: () => stdout,
    stderr: () => stderr,
    exited,
    waitForOutput(pattern, waitOptions = {}) {
      const read = () => (waitOptions.stream === 'stderr' ? stderr : stdout);
      return new Promise((resolve, reject) => {
        const check = () => {
          const match = read().match(pattern);
          if (match) {
            done();
            resolve(match);
          } else if (closed) {
            done();
            reject(new Error(`process exited before printing ${pattern}\nstdout:\n${stdout}\nstderr:\n${stderr}`));
          }
        };
        const timer = setTimeout(() => {
          done();
          reject(
            new Error(
              `no ${pattern} within ${waitOptions.timeoutMs ?? 20_000}ms\nstdout:\n${stdout}\nstderr:\n${stderr}`,
            ),
          );
        }, waitOptions.timeoutMs ?? 20_000);
        const done = () => {
          clearTimeout(timer);
          listeners.delete(check);
        };
        listeners.add(check);
        check();
      });
    },
  };
}

/** Runs a script to completion; one still running after `timeoutMs` is SIGKILLed and the call throws. */
export async function runNode(options: RunNodeOptions): Promise<NodeRun> {
  const timeoutMs = options.timeoutMs ?? 25_000;
  const run = startNode(options);
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<'late'>((resolve) => {
    timer = setTimeout(() => resolve('late'), timeoutMs);
  });
  try {
    const outcome = await Promise.race([run.exited, late]);
    if (outcome !== 'late') return outcome;
  } finally {
    clearTimeout(timer);
  }
  run.child.kill('SIGKILL');
  await run.exited;
  const command = options.args.map((arg) => (arg === cliMain ? 'assistant' : arg));
  throw new Error(
    `${command.join(' ')} did not exit within ${timeoutMs} ms\nstdout:\n${run.stdout()}\nstderr:\n${run.stderr()}`,
  );
}

/** Runs `assistant <args>` from its TypeScript source, with `runNode`'s time limit. */
export async function runCli(args: readonly string[], options: Omit<RunNodeOptions, 'args'> = {}): Promise<NodeRun> {
  return runNode({ ...options, args: [cliMain, ...args] });
}
