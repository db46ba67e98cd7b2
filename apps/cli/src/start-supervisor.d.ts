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
  /** Set when the watchdog killed it: how long its event loop had not answered. */
  silentMs?: number;
  /** The last error it printed (`Error: boom`, a fatal log line's message), cut to 500 characters. */
  lastError?: string;
}

/** A process exited on its own and is started again after `delayMs`. */
export interface RestartEvent {
  exit: ProcessExit;
  /** How many times it has been started again since `assistant start`, this one included. */
  restarts: number;
  delayMs: number;
}

/** How long to wait before starting a crashed process again. */
export interface RestartBackoff {
  /** After the first crash (and after a crash that ended a run longer than `stableMs`). @default 1000 */
  firstDelayMs: number;
  /** Doubling stops here. @default 60000 */
  maxDelayMs: number;
  /** A run at least this long was not a crash loop: the next delay is the first again. @default 60000 */
  stableMs: number;
}

/** One child in data/supervisor.json. */
export interface SupervisedProcessState {
  /** Null while it waits to be started again. */
  pid: number | null;
  started_at?: string;
  restarts: number;
  last_restart?: { at: string; reason: string; code: number | null; signal: string | null };
  next_start_at?: string;
}

/** data/supervisor.json, written by `assistant start`. */
export interface SupervisorState {
  supervisor_pid: number;
  started_at: string;
  processes: Record<string, SupervisedProcessState>;
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
  /** Called when a process could not be started at all, before the others are stopped. */
  onUnexpectedExit?: (exit: ProcessExit) => void;
  /** Called when a process exited while no stop was asked for, before it waits to be started again. */
  onRestart?: (event: RestartEvent) => void;
  /** @default 1 s doubling up to a minute, reset after a run of a minute */
  restart?: Partial<RestartBackoff>;
  /** Called when a process's watchdog beats are overdue, just before it is killed with SIGKILL. */
  onSilent?: (name: string, pid: number | undefined, silentMs: number) => void;
}

export interface SuperviseProcessesResult {
  /** The process that could not be started, which made the others stop; undefined after a requested stop. */
  unexpected: ProcessExit | undefined;
  /** How every process that was running at the stop ended, in the order given (one waiting for a restart is not). */
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
  /**
   * Run `assistant start --probe-models` in the background and print its warnings (an unreachable LLM profile).
   * @default true
   */
  probeModels?: boolean;
  /** `--verbose`: the children log at debug (a line per task) unless ASSISTANT_LOG_LEVEL says otherwise. */
  verbose?: boolean;
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
): { config: string | undefined; data: string | undefined; verbose?: true } | undefined;

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

/**
 * Runs processes side by side until `signal` aborts, starting one that exits on its own again with backoff; stops the
 * rest only when one cannot be started at all.
 */
export function superviseProcesses(options: SuperviseProcessesOptions): Promise<SuperviseProcessesResult>;

/** The line of a crashed Node process's stderr that says what went wrong, or undefined. */
export function crashLine(line: string): string | undefined;

/** `supervisor.json`: where in the data directory `assistant start` records its children and their restarts. */
export const supervisorStateFileName: string;

/**
 * Runs server and worker until a signal, starting one that dies again with backoff; resolves with an error to report
 * (one could not be started at all), or undefined.
 */
export function superviseStart(options: SuperviseStartOptions): Promise<{ message: string; hint: string } | undefined>;
