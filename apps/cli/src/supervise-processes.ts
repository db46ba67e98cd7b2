import { type ChildProcess, spawn } from 'node:child_process';
import type { TextOutput } from './cli-context.ts';
import { createLinePrefixer } from './line-prefixer.ts';

interface SupervisedProcess {
  /** Names the process in prefixes and messages: `server`, `worker`. */
  name: string;
  command: string;
  args: readonly string[];
}

export interface ProcessExit {
  name: string;
  pid: number | undefined;
  /** The exit code, or null when a signal ended it. */
  code: number | null;
  signal: NodeJS.Signals | null;
  /** Set when the process could not be started at all. */
  error?: Error;
}

export interface SuperviseProcessesOptions {
  processes: readonly SupervisedProcess[];
  env: NodeJS.ProcessEnv;
  stdout: TextOutput;
  stderr: TextOutput;
  /**
   * Aborting it stops every process: the signal named by its reason (SIGINT or SIGTERM) is forwarded, else
   * SIGTERM.
   */
  signal: AbortSignal;
  /** How long a process has to stop after the signal before it is killed with SIGKILL. */
  graceMs: number;
  /** Called once per process once it is running. */
  onSpawn?: (name: string, pid: number) => void;
  /** Called when a process exits while no stop was asked for, before the others are stopped. */
  onUnexpectedExit?: (exit: ProcessExit) => void;
}

export interface SuperviseProcessesResult {
  /** The process that exited on its own first, which made the others stop; undefined after a requested stop. */
  unexpected: ProcessExit | undefined;
  /** How every process ended, in the order given. */
  exits: ProcessExit[];
}

/**
 * Runs processes side by side with their output prefixed by name, until `signal` aborts or one of them exits on
 * its own; then stops the rest (the signal, then SIGKILL after `graceMs`) and resolves once all have exited.
 */
export async function superviseProcesses(options: SuperviseProcessesOptions): Promise<SuperviseProcessesResult> {
  let stopping = false;
  let unexpected: ProcessExit | undefined;
  let killTimer: NodeJS.Timeout | undefined;
  const children: ChildProcess[] = [];

  const running = (child: ChildProcess) => child.exitCode === null && child.signalCode === null;
  const stopAll = (signal: NodeJS.Signals) => {
    if (stopping) return;
    stopping = true;
    for (const child of children) if (running(child)) child.kill(signal);
    killTimer = setTimeout(() => {
      for (const child of children) if (running(child)) child.kill('SIGKILL');
    }, options.graceMs);
  };

  const exits = options.processes.map((spec) => {
    const child = spawn(spec.command, [...spec.args], { env: options.env, stdio: ['ignore', 'pipe', 'pipe'] });
    children.push(child);
    const prefix = `[${spec.name}] `;
    const out = createLinePrefixer({ prefix, write: (text) => options.stdout.write(text) });
    const err = createLinePrefixer({ prefix, write: (text) => options.stderr.write(text) });
    child.stdout?.on('data', (chunk: Buffer) => out.push(chunk));
    child.stdout?.on('end', () => out.end());
    child.stderr?.on('data', (chunk: Buffer) => err.push(chunk));
    child.stderr?.on('end', () => err.end());
    if (child.pid !== undefined) options.onSpawn?.(spec.name, child.pid);
    // 'close' rather than 'exit': it waits for the output pipes to drain, so no last line is lost.
    return new Promise<ProcessExit>((resolve) => {
      let spawnError: Error | undefined;
      const finish = (code: number | null, signal: NodeJS.Signals | null) => {
        const exit: ProcessExit = {
          name: spec.name,
          pid: child.pid,
          code,
          signal,
          ...(spawnError ? { error: spawnError } : {}),
        };
        if (!stopping) {
          unexpected = exit;
          options.onUnexpectedExit?.(exit);
          stopAll('SIGTERM');
        }
        resolve(exit);
      };
      child.once('error', (error) => {
        spawnError = error;
        // A process that never started emits no 'close' on some platforms; do not wait for it.
        if (child.pid === undefined) finish(null, null);
      });
      child.once('close', finish);
    });
  });

  const onAbort = () => stopAll(options.signal.reason === 'SIGINT' ? 'SIGINT' : 'SIGTERM');
  if (options.signal.aborted) onAbort();
  else options.signal.addEventListener('abort', onAbort, { once: true });
  try {
    const settled = await Promise.all(exits);
    return { unexpected, exits: settled };
  } finally {
    options.signal.removeEventListener('abort', onAbort);
    clearTimeout(killTimer);
  }
}

/** `exited with code 1`, `was killed by SIGKILL`, `could not start: spawn ENOENT`. */
export function describeExit(exit: ProcessExit): string {
  if (exit.error && exit.code === null && exit.signal === null) return `could not start: ${exit.error.message}`;
  if (exit.signal !== null) return `was killed by ${exit.signal}`;
  return `exited with code ${exit.code}`;
}
