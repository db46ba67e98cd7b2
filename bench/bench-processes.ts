// Helpers for the benches that run the real `assistant` processes: the CLI entry, a child whose output can be
// waited on, resident set sizes from /proc, the raw fsync ceiling of a disk, the machine's description.
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdtemp, open, rename, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const repoRoot = fileURLToPath(new URL('..', import.meta.url));
export const cliMain = path.join(repoRoot, 'apps/cli/src/main.ts');

export interface RunningChild {
  child: ChildProcess;
  /** Everything written to stdout and stderr so far, interleaved. */
  output(): string;
  /** Resolves with the match once the output matches `pattern`; rejects after `timeoutMs` naming the pattern. */
  waitForOutput(pattern: RegExp, timeoutMs: number): Promise<RegExpMatchArray>;
  /** Resolves with the exit code (null when a signal ended it) once the process has exited. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null; atMs: number }>;
}

/** `node <args>` with piped output that can be waited on; `onLine` sees each stdout/stderr line as it arrives. */
export function runNode(args: readonly string[], options: { env?: NodeJS.ProcessEnv; cwd?: string } = {}) {
  const child = spawn(process.execPath, [...args], {
    cwd: options.cwd ?? repoRoot,
    env: { ...process.env, ...options.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let text = '';
  const waiters = new Set<() => void>();
  const append = (chunk: Buffer) => {
    text += chunk.toString('utf8');
    // Keep the tail only: the worker logs a line per task, which can add up to megabytes over 10,000 tasks.
    if (text.length > 1_000_000) text = text.slice(-200_000);
    for (const waiter of waiters) waiter();
  };
  child.stdout?.on('data', append);
  child.stderr?.on('data', append);
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null; atMs: number }>((resolve) => {
    child.once('close', (code, signal) => resolve({ code, signal, atMs: performance.now() }));
  });
  const running: RunningChild = {
    child,
    output: () => text,
    exited,
    waitForOutput: (pattern, timeoutMs) =>
      new Promise((resolve, reject) => {
        const check = () => {
          const match = text.match(pattern);
          if (match) {
            done();
            resolve(match);
          }
        };
        const timer = setTimeout(() => {
          done();
          reject(
            new Error(`no output matching ${pattern} within ${timeoutMs} ms; output so far:\n${text.slice(-4000)}`),
          );
        }, timeoutMs);
        const onExit = () => {
          done();
          const match = text.match(pattern);
          if (match) resolve(match);
          else reject(new Error(`the process exited before printing ${pattern}; its output:\n${text.slice(-4000)}`));
        };
        const done = () => {
          clearTimeout(timer);
          waiters.delete(check);
          child.off('close', onExit);
        };
        waiters.add(check);
        child.once('close', onExit);
        check();
      }),
  };
  return running;
}

/** The resident set of a process in bytes (VmRSS of /proc/<pid>/status), or undefined once it is gone. */
export function residentBytes(pid: number): number | undefined {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const match = status.match(/^VmRSS:\s+(\d+)\s+kB$/m);
    return match ? Number(match[1]) * 1024 : undefined;
  } catch {
    return undefined;
  }
}

/**
 * A process's resident set by kind: `anon` (its own heap and stacks), `file` (mapped files: mostly Node's own binary,
 * its code and ICU data, which every Node process on the machine shares), and `pss` (its proportional share, each
 * shared page divided among the processes that map it).
 */
export function residentParts(pid: number): { anon: number; file: number; pss: number } | undefined {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const rollup = readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8');
    const kb = (text: string, name: string) =>
      Number(text.match(new RegExp(`^${name}:\\s+(\\d+)\\s+kB$`, 'm'))?.[1] ?? 0) * 1024;
    return { anon: kb(status, 'RssAnon'), file: kb(status, 'RssFile'), pss: kb(rollup, 'Pss') };
  } catch {
    return undefined;
  }
}

export const mib = (bytes: number | undefined) => (bytes === undefined ? 'gone' : `${(bytes / 2 ** 20).toFixed(0)} MB`);

/**
 * The physical ceiling: `count` times in a row, a small file written, fsynced, renamed into place and its
 * directory fsynced. Returns operations per second; each operation's time goes to `latenciesMs` when given.
 */
export async function rawFsyncRate(root: string, count: number, latenciesMs?: number[]): Promise<number> {
  const directory = await mkdtemp(path.join(root, 'assistant-bench-raw-'));
  try {
    const started = performance.now();
    for (let index = 0; index < count; index++) {
      const operationStarted = performance.now();
      const tmp = path.join(directory, `${index}.tmp`);
      const handle = await open(tmp, 'wx');
      try {
        await handle.writeFile('id: x\ntype: bench.task\npayload: {i: 1}\n');
        await handle.sync();
      } finally {
        await handle.close();
      }
      await rename(tmp, path.join(directory, `${index}.yaml`));
      const directoryHandle = await open(directory, 'r');
      try {
        await directoryHandle.sync();
      } finally {
        await directoryHandle.close();
      }
      latenciesMs?.push(performance.now() - operationStarted);
    }
    return (count / (performance.now() - started)) * 1_000;
  } finally {
    await rm(directory, { recursive: true, force: true });
  }
}

/** `ext4 on /dev/vda`: the device and filesystem type under `directory`. */
export function filesystemOf(directory: string): string {
  try {
    const [, line = ''] = execFileSync('df', ['-T', directory], { encoding: 'utf8' }).trim().split('\n');
    const [device, type] = line.split(/\s+/);
    if (device && type) return `${type} on ${device}`;
  } catch {
    // Not every system has GNU df.
  }
  return 'unknown filesystem';
}

export function machineLine(directory: string): string {
  const cpu = os.cpus()[0]?.model ?? 'unknown cpu';
  return `node ${process.version}; ${os.cpus().length} × ${cpu}; ${directory} (${filesystemOf(directory)}); load average ${os
    .loadavg()
    .map((value) => value.toFixed(1))
    .join(' ')}`;
}

/** Polls `condition` every `everyMs` until it returns a value other than undefined; throws naming `what`. */
export async function pollUntil<T>(
  what: string,
  timeoutMs: number,
  everyMs: number,
  condition: () => Promise<T | undefined> | T | undefined,
): Promise<T> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const value = await condition();
    if (value !== undefined) return value;
    if (performance.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
}
