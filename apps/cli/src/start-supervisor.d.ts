// Types of start-supervisor.js, which is plain JavaScript so that `assistant start`'s long-lived process does not
// load Node's TypeScript stripper.

/** Somewhere text goes: process.stdout, process.stderr, or a buffer in tests. */
export interface SupervisorOutput {
  write(text: string): unknown;
  isTTY?: boolean;
}

export interface SupervisedProcess {
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
  stdout: SupervisorOutput;
  stderr: SupervisorOutput;
  /** Aborting it stops every process: the signal named by its reason (SIGINT or SIGTERM) is forwarded, else SIGTERM. */
  signal: AbortSignal;
  /** How long a process has to stop after the signal before it is killed with SIGKILL. */
  graceMs: number;
  /** Called once per process once it is running. */
  onSpawn?: (name: string, pid: number) => void;
  /** Called when a process exits while no stop was asked for, before the others are stopped. */
  onUnexpectedExit?: (exit: ProcessExit) => void;
  /** Called when a process's watchdog beats are overdue, just before it is killed with SIGKILL. */
  onSilent?: (name: string, pid: number | undefined, silentMs: number) => void;
}

export interface SuperviseProcessesResult {
  /** The process that exited on its own first, which made the others stop; undefined after a requested stop. */
  unexpected: ProcessExit | undefined;
  /** How every process ended, in the order given. */
  exits: ProcessExit[];
}

export interface SuperviseStartOptions {
  configFile: string;
  dataDir: string;
  /** worker.shutdown_grace: the children get this plus a margin to stop before SIGKILL. */
  shutdownGraceMs: number;
  /** Node flags for the children (e.g. --experimental-strip-types); --inspect* are dropped. */
  execArgv: readonly string[];
  env: NodeJS.ProcessEnv;
  stdout: SupervisorOutput;
  stderr: SupervisorOutput;
  /** @default a new listener for SIGINT and SIGTERM, removed when the children have stopped */
  shutdown?: { signal: AbortSignal; dispose(): void };
}

export interface LinePrefixer {
  /** Takes output as it arrives, split anywhere, even inside a UTF-8 character. */
  push(chunk: Buffer | string): void;
  /** Writes what remains of an unfinished last line, with a newline. */
  end(): void;
}

/** The global options of a plain `assistant start [--config FILE] [--data DIR]`, or undefined for anything else. */
export function plainStartArguments(
  argv: readonly string[],
): { config: string | undefined; data: string | undefined } | undefined;

/** Prefixes each line of a child's output; writes whole lines only. */
export function createLinePrefixer(options: {
  /** Put before every line, e.g. `[server] `. */
  prefix: string;
  /** Receives whole lines only, each ending in a newline, several at a time. */
  write: (text: string) => void;
  /** A line longer than this is written in pieces. @default 65536 */
  maxLineChars?: number;
  /** Lines it returns true for are not written (without their newline; the watchdog's beats). */
  swallow?: (line: string) => boolean;
}): LinePrefixer;

/** Runs server and worker until a signal or until one dies; resolves with an error to report, or undefined. */
export function superviseStart(options: SuperviseStartOptions): Promise<{ message: string; hint: string } | undefined>;
