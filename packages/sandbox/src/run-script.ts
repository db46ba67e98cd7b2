/**
 * Runs the owner's `scripts:` from config.yaml as child processes.
 *
 * Two sandboxes:
 * - `bubblewrap` (the default): the script sees an allow-list, nothing more: the system's programs and libraries
 *   read-only, a few /etc files (those for DNS and TLS only with `network: true`), its own node file (or the folder
 *   of it, when that folder holds nothing private), Node and the helpers module read-only, its work folder
 *   read-write, and a private /dev, /proc and empty /tmp. No home folder, config.yaml, secrets.yaml, data folder,
 *   other scripts' folders or Assistant checkout. No network unless the script sets `network: true`; its own PID,
 *   IPC, UTS, user and cgroup namespaces, no capabilities, so it cannot see or signal Assistant's processes and
 *   everything it starts dies with it. When bubblewrap does not work here the run is refused
 *   ({@link SandboxUnavailableError}): the sandbox fails closed.
 * - `none`, only when the owner chose it: a plain child process in its own process group, with a minimal
 *   environment (none of Assistant's secrets), its work folder as the current folder and HOME, and the timeout.
 *   It can read and write whatever the user running Assistant can.
 */
import { spawn } from 'node:child_process';
import { lstat, mkdir, mkdtemp, readFile, realpath, rm, stat } from 'node:fs/promises';
import { homedir, tmpdir } from 'node:os';
import path from 'node:path';
import { Readable, Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { formatDuration, type JsonValue } from '@assistant/config';
import { z } from 'zod';
import { checkBubblewrap, defaultBubblewrapPath, sealRootArguments, systemMountArguments } from './bubblewrap.ts';

/** A log level a script can write through its helpers. */
export type ScriptLogLevel = 'human' | 'info' | 'warn';

/** How a script runs: the part of a `scripts:` entry that matters here (a `ScriptConfig` fits). */
export interface RunnableScript {
  /** A shell script, run as `sh -c`; exactly one of `shell` and `node` is set. */
  shell?: string;
  /** A JavaScript file (.js or .mjs), relative to the config folder; exactly one of `shell` and `node` is set. */
  node?: string;
  /** The names of the inputs the script declares. */
  inputs: string[];
  /** How long the script may run before its whole process group is killed, in milliseconds. */
  timeoutMs: number;
  /**
   * Whether the script may use the network (and sees the /etc files DNS and TLS need). Only bubblewrap can take
   * the network away; without a sandbox it has no effect.
   * @default false
   */
  network?: boolean;
}

/** Options of {@link runScript}. */
export interface RunScriptOptions {
  /** The script's name in config.yaml (an identifier: a-z, 0-9 and `_`); it names the script in errors. */
  name: string;
  /** The script to run. */
  script: RunnableScript;
  /**
   * Values for the script's declared inputs; each reaches the script as `ASSISTANT_INPUT_<NAME>`. Giving an
   * input the script does not declare throws before anything runs.
   */
  inputs: Record<string, string | number | boolean>;
  /** The folder of config.yaml: `node:` paths resolve against it. */
  configDir: string;
  /**
   * The script's own folder, `data/scripts/<name>/`: created when missing, the script's current folder and HOME,
   * and under the sandbox the only folder it can write besides the private /tmp and the folder of its result file.
   */
  workDir: string;
  /** Aborting kills the script's whole process group and rejects with the signal's reason. */
  signal?: AbortSignal;
  /**
   * Which sandbox to use. `bubblewrap` throws {@link SandboxUnavailableError} when bubblewrap does not work here;
   * nothing falls back to `none`, which only an owner's explicit choice (`worker.sandbox: none`) should pass.
   * @default 'bubblewrap'
   */
  sandbox?: 'bubblewrap' | 'none';
  /**
   * The bwrap executable. An internal option for tests that need a missing one; tasks never choose it.
   * @default 'bwrap' (on PATH)
   */
  bubblewrapPath?: string;
  /** Called once for every line the script logs through its helpers, as the line arrives. */
  onLog?: (level: ScriptLogLevel, message: string) => void;
  /**
   * Files and folders that are Assistant's, not the script's (config.yaml, secrets.yaml, the data folder, the LLM
   * cache). None of them is mounted anyway; they decide how much of a node script's folder the sandbox shows: the
   * whole folder (so the script can import its neighbours) only when it neither holds nor lies inside one of them
   * or the home folder, otherwise just the script file.
   */
  privatePaths?: readonly string[];
  /**
   * Extra environment variables (for tests). Besides these the script gets only PATH, HOME (its work folder), LANG,
   * TZ and the `ASSISTANT_*` variables, never the rest of Assistant's environment.
   */
  env?: Record<string, string>;
}

/** What a script run produced. */
export interface ScriptRunResult {
  /** The JSON the script wrote to `ASSISTANT_RESULT_FILE`, or null when it wrote nothing. */
  result: JsonValue | null;
  /** The script's exit code: always 0, since any other code throws {@link ScriptFailedError}. */
  exitCode: number;
  /** How long the script ran, in milliseconds. */
  durationMs: number;
  /** The sandbox the script ran in. */
  sandbox: 'bubblewrap' | 'none';
  /** The last 4 KiB (in characters) of the script's standard output. */
  stdoutTail: string;
  /** The last 4 KiB (in characters) of the script's standard error. */
  stderrTail: string;
}

/** Details shared by the errors of a script run. */
interface ScriptErrorDetails {
  scriptName: string;
  stdoutTail: string;
  stderrTail: string;
}

/**
 * A script exited with a code other than 0, was killed by a signal it did not expect, or left a result file that
 * is not JSON. `exitCode` is null when a signal ended it.
 */
export class ScriptFailedError extends Error {
  readonly scriptName: string;
  readonly exitCode: number | null;
  readonly exitSignal: NodeJS.Signals | null;
  readonly stdoutTail: string;
  readonly stderrTail: string;

  constructor(
    message: string,
    details: ScriptErrorDetails & { exitCode: number | null; exitSignal: NodeJS.Signals | null },
    options?: { cause: unknown },
  ) {
    super(message, options);
    this.name = 'ScriptFailedError';
    this.scriptName = details.scriptName;
    this.exitCode = details.exitCode;
    this.exitSignal = details.exitSignal;
    this.stdoutTail = details.stdoutTail;
    this.stderrTail = details.stderrTail;
  }
}

/**
 * The bubblewrap sandbox was asked for and does not work here (bwrap missing, or denied its namespaces): the
 * script is refused rather than run without it. Retrying does not help until the machine or the config changes.
 */
export class SandboxUnavailableError extends Error {
  readonly scriptName: string;
  readonly problem: string;

  constructor(details: { scriptName: string; problem: string }) {
    super(
      `script ${details.scriptName} was not run: it needs the bubblewrap sandbox, and ${details.problem}. ` +
        'Install bubblewrap (apt-get install bubblewrap) and restart Assistant, or, knowing that scripts then read ' +
        'and write whatever Assistant can, set `worker.sandbox: none` in config.yaml',
    );
    this.name = 'SandboxUnavailableError';
    this.scriptName = details.scriptName;
    this.problem = details.problem;
  }
}

/** A script ran longer than its `timeout:` and its whole process group was killed. */
export class ScriptTimeoutError extends Error {
  readonly scriptName: string;
  readonly timeoutMs: number;
  readonly stdoutTail: string;
  readonly stderrTail: string;

  constructor(details: ScriptErrorDetails & { timeoutMs: number }) {
    super(`script ${details.scriptName} ran past its ${formatDuration(details.timeoutMs)} timeout and was killed`);
    this.name = 'ScriptTimeoutError';
    this.scriptName = details.scriptName;
    this.timeoutMs = details.timeoutMs;
    this.stdoutTail = details.stdoutTail;
    this.stderrTail = details.stderrTail;
  }
}

const helpersPath = fileURLToPath(new URL('./script-helpers.mjs', import.meta.url));
const fallbackPath = '/usr/local/bin:/usr/bin:/bin';
// Inside the sandbox only the system folders exist, so Assistant's PATH (node_modules/.bin, a home folder's bin)
// would name folders that are not there and tell the script where Assistant lives.
const sandboxPath = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';
const identifierPattern = /^[a-z0-9_]+$/;
const logLevels: readonly ScriptLogLevel[] = ['human', 'info', 'warn'];
const tailLength = 4_096;
const maximumMessageLength = 1_000;
// Enough for the level, the tab and a full message; anything longer in one line is cut here, so a script that
// writes to fd 3 without newlines cannot grow our buffer without bound.
const maximumLogLineLength = 'human\t'.length + maximumMessageLength;
const maximumResultBytes = 1_048_576;
// Time a script gets between SIGTERM and SIGKILL to clean up.
const killGraceMs = 2_000;
// How long output may keep arriving after the script's main process exited.
const outputDrainMs = 1_000;

// The file descriptor scripts log to: 0-2 are the standard streams, so 3 is the first free one.
const logDescriptor = 3;
// The file descriptor bwrap reads its arguments from (`--args 4`); it closes it before the script starts.
const argumentsDescriptor = 4;

// Shell scripts get these functions. Messages are flattened to one line (tabs, carriage returns and newlines become
// spaces) because the reader splits on newlines.
const shellPreamble = [
  `assistant_log_line() { printf '%s\\t%s\\n' "$1" "$(printf '%s' "$2" | tr '\\t\\r\\n' '   ')" >&${logDescriptor}; }`,
  'log_human() { assistant_log_line human "$*"; }',
  'log_info() { assistant_log_line info "$*"; }',
  'log_warn() { assistant_log_line warn "$*"; }',
].join('\n');

const jsonValueSchema: z.ZodType<JsonValue> = z.json();

/**
 * Runs one of the owner's scripts and returns what it produced.
 *
 * The script gets its inputs as `ASSISTANT_INPUT_<NAME>` variables, a file to write a JSON result to
 * (`ASSISTANT_RESULT_FILE`) and a pipe on file descriptor 3 for log lines: shell scripts call `log_human`,
 * `log_info` and `log_warn`; node scripts import them from `ASSISTANT_HELPERS`. When the script's main process
 * exits, anything it left running in the background is killed.
 *
 * @throws ScriptFailedError when the script exits with another code than 0 or writes a result that is not JSON.
 * @throws ScriptTimeoutError when it runs past `script.timeoutMs`.
 * @throws SandboxUnavailableError before running anything when `sandbox` is `bubblewrap` and it does not work here.
 * @throws the signal's reason when `signal` aborts, and an Error before running anything when the options are wrong.
 */
export async function runScript(options: RunScriptOptions): Promise<ScriptRunResult> {
  const { name, script, signal } = options;
  const inputVariables = validateOptions(options);
  signal?.throwIfAborted();

  const scriptPath = script.node === undefined ? undefined : path.resolve(options.configDir, script.node);
  if (scriptPath !== undefined) await assertScriptFile(name, script.node ?? '', scriptPath);
  const sandbox = options.sandbox ?? 'bubblewrap';
  if (sandbox === 'bubblewrap') {
    const status = await checkBubblewrap({ bubblewrapPath: options.bubblewrapPath ?? defaultBubblewrapPath });
    if (!status.usable) throw new SandboxUnavailableError({ scriptName: name, problem: status.problem });
  }

  await mkdir(options.workDir, { recursive: true, mode: 0o700 });
  // bwrap binds paths as given; resolving symbolic links first makes the bind and --chdir name the same folder.
  const workDirectory = await realpath(options.workDir);
  // The result file's folder, made fresh outside the work folder: in there a script could leave a link for Assistant
  // to follow (mkdir as Assistant's user wherever it points), and another run of the same script could rewrite it.
  const runDirectory = await realpath(await mkdtemp(path.join(tmpdir(), 'assistant-script-run-')));
  try {
    signal?.throwIfAborted();
    // Real paths for the same reason: only what is bound exists in the sandbox, links leading elsewhere do not.
    const installed = await installation();
    const realScriptPath = scriptPath === undefined ? undefined : await realpath(scriptPath);
    const resultFile = path.join(runDirectory, 'result.json');
    const environment: Record<string, string> = {
      PATH: sandbox === 'bubblewrap' ? sandboxPath : (process.env.PATH ?? fallbackPath),
      HOME: workDirectory,
      ...(process.env.LANG === undefined ? {} : { LANG: process.env.LANG }),
      ...(process.env.TZ === undefined ? {} : { TZ: process.env.TZ }),
      ...options.env,
      ASSISTANT_SCRIPT: name,
      ASSISTANT_RESULT_FILE: resultFile,
      ASSISTANT_HELPERS: installed.helpers,
      ...inputVariables,
    };
    // `sh -c script name` makes the script's name $0, so the shell's own errors read `notify: 3: foo: not found`.
    const command =
      realScriptPath === undefined
        ? ['/bin/sh', '-c', `${shellPreamble}\n${script.shell ?? ''}`, name]
        : [installed.node, realScriptPath];
    let bubblewrapInput: Buffer | undefined;
    let argv = command;
    if (sandbox === 'bubblewrap') {
      const bubblewrapArguments = [
        ...(await systemMountArguments({ network: script.network === true })),
        // After the private /tmp, so that Node, the helpers and a config folder under /tmp appear on top of it.
        ...(realScriptPath === undefined
          ? []
          : [
              ...(await scriptMounts(realScriptPath, {
                privatePaths: options.privatePaths ?? [],
                configDir: options.configDir,
                scriptsDir: path.dirname(workDirectory),
              })),
              '--ro-bind',
              installed.node,
              installed.node,
              '--ro-bind',
              installed.helpers,
              installed.helpers,
            ]),
        '--bind',
        workDirectory,
        workDirectory,
        '--bind',
        runDirectory,
        runDirectory,
        ...sealRootArguments,
        '--chdir',
        workDirectory,
        '--clearenv',
        ...Object.entries(environment).flatMap(([variable, value]) => ['--setenv', variable, value]),
      ];
      // The arguments go through a pipe, not the command line, which every user of the machine can read (ps,
      // /proc/PID/cmdline), while the inputs in these --setenv come from mail and web pages. Not through a file
      // either: in the work folder another run of the same script could rewrite it before bwrap reads it.
      bubblewrapInput = Buffer.from(`${bubblewrapArguments.join('\0')}\0`);
      argv = [options.bubblewrapPath ?? defaultBubblewrapPath, '--args', String(argumentsDescriptor), '--', ...command];
    }
    const running = runChild({
      name,
      argv,
      cwd: workDirectory,
      // bwrap replaces its environment with the --setenv ones; it needs none of its own.
      environment: sandbox === 'bubblewrap' ? { PATH: fallbackPath } : environment,
      argumentsInput: bubblewrapInput,
      timeoutMs: script.timeoutMs,
      trimNodeNoise: scriptPath !== undefined,
      signal,
      onLog: options.onLog,
    });
    const outcome = await running;
    const result = await readResult(name, resultFile, outcome);
    return { result, exitCode: 0, sandbox, ...outcome };
  } finally {
    await rm(runDirectory, { recursive: true, force: true });
  }
}

/** Checks the options before anything runs and returns the input variables. */
function validateOptions(options: RunScriptOptions): Record<string, string> {
  const { name, script } = options;
  if (!identifierPattern.test(name)) {
    throw new Error(`Expected a script name made of a-z, 0-9 and _, got \`${name}\``);
  }
  if ((script.shell === undefined) === (script.node === undefined)) {
    throw new Error(`script ${name} must have exactly one of \`shell:\` or \`node:\``);
  }
  if (!Number.isInteger(script.timeoutMs) || script.timeoutMs <= 0) {
    throw new Error(
      `script ${name}: expected timeoutMs to be a whole number of milliseconds above 0, got ${script.timeoutMs}`,
    );
  }
  const declared = new Set(script.inputs);
  const variables: Record<string, string> = {};
  for (const [input, value] of Object.entries(options.inputs)) {
    if (!declared.has(input)) {
      const valid = script.inputs.length === 0 ? 'it declares no inputs' : `it declares: ${script.inputs.join(', ')}`;
      throw new Error(`script ${name} was given input \`${input}\`, which it does not declare (${valid})`);
    }
    if (typeof value !== 'string' && typeof value !== 'number' && typeof value !== 'boolean') {
      throw new Error(
        `script ${name}: expected input \`${input}\` to be a string, number or boolean, got ${typeof value}`,
      );
    }
    const text = String(value);
    // The operating system cannot pass a NUL byte in an environment variable; say so instead of failing in spawn.
    if (text.includes('\0')) throw new Error(`script ${name}: input \`${input}\` contains a NUL character`);
    variables[`ASSISTANT_INPUT_${input.toUpperCase()}`] = text;
  }
  return variables;
}

async function assertScriptFile(name: string, written: string, scriptPath: string): Promise<void> {
  const info = await stat(scriptPath).catch(() => undefined);
  if (info?.isFile() !== true) {
    throw new Error(`script ${name}: \`node: ${written}\` is not a file (looked for ${scriptPath})`);
  }
}

interface ChildOptions {
  name: string;
  argv: string[];
  cwd: string;
  environment: Record<string, string>;
  /** What the child reads from {@link argumentsDescriptor} (bwrap's arguments); no such descriptor when undefined. */
  argumentsInput: Buffer | undefined;
  timeoutMs: number;
  trimNodeNoise: boolean;
  signal: AbortSignal | undefined;
  onLog: RunScriptOptions['onLog'];
}

interface ChildOutcome {
  durationMs: number;
  stdoutTail: string;
  stderrTail: string;
}

type StopReason = { kind: 'timeout' } | { kind: 'abort'; reason: unknown } | { kind: 'log'; error: unknown };

/** Spawns the command in its own process group and settles once it has exited and its pipes have closed. */
function runChild(options: ChildOptions): Promise<ChildOutcome> {
  const { name, argv, signal } = options;
  const [file = '', ...args] = argv;
  return new Promise((resolve, reject) => {
    const started = performance.now();
    // detached: the child leads a new process group, so one kill(-pid) reaches everything it started.
    const child = spawn(file, args, {
      cwd: options.cwd,
      env: options.environment,
      stdio:
        options.argumentsInput === undefined
          ? ['ignore', 'pipe', 'pipe', 'pipe']
          : ['ignore', 'pipe', 'pipe', 'pipe', 'pipe'],
      detached: true,
    });
    const argumentsStream = child.stdio[argumentsDescriptor];
    if (options.argumentsInput !== undefined && argumentsStream instanceof Writable) {
      // A bwrap that dies before reading everything breaks the pipe; its exit code tells that story, not EPIPE.
      argumentsStream.on('error', () => {});
      argumentsStream.end(options.argumentsInput);
    }
    let stdoutTail = '';
    let stderrTail = '';
    let stopReason: StopReason | undefined;
    let spawnError: Error | undefined;
    let killTimer: NodeJS.Timeout | undefined;
    let drainTimer: NodeJS.Timeout | undefined;
    let settled = false;

    const signalGroup = (signalName: NodeJS.Signals): void => {
      if (child.pid === undefined) return;
      try {
        process.kill(-child.pid, signalName);
      } catch {
        // ESRCH: every process of the group has already exited, so there is nothing left to stop.
      }
    };
    const stop = (reason: StopReason): void => {
      if (stopReason !== undefined) return;
      stopReason = reason;
      signalGroup('SIGTERM');
      killTimer = setTimeout(() => signalGroup('SIGKILL'), killGraceMs);
    };
    const timeoutTimer = setTimeout(() => stop({ kind: 'timeout' }), options.timeoutMs);
    const onAbort = (): void => stop({ kind: 'abort', reason: signal?.reason });
    signal?.addEventListener('abort', onAbort, { once: true });

    const finish = (exitCode: number | null, exitSignal: NodeJS.Signals | null): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timeoutTimer);
      clearTimeout(killTimer);
      clearTimeout(drainTimer);
      signal?.removeEventListener('abort', onAbort);
      const failure = failureOf(exitCode, exitSignal);
      if (failure !== undefined) reject(failure.reason);
      else resolve({ durationMs: Math.round(performance.now() - started), stdoutTail, stderrTail });
    };
    // Wrapped in an object so that a rejection reason of `undefined` (an abort reason can be anything) still counts.
    const failureOf = (exitCode: number | null, exitSignal: NodeJS.Signals | null): { reason: unknown } | undefined => {
      const tails = { scriptName: name, stdoutTail, stderrTail };
      if (stopReason?.kind === 'abort') return { reason: stopReason.reason };
      if (stopReason?.kind === 'log') return { reason: stopReason.error };
      if (stopReason?.kind === 'timeout') {
        return { reason: new ScriptTimeoutError({ ...tails, timeoutMs: options.timeoutMs }) };
      }
      if (spawnError !== undefined) {
        const message = `script ${name} could not start \`${file}\`: ${spawnError.message}`;
        return { reason: new Error(message, { cause: spawnError }) };
      }
      if (exitCode === 0) return undefined;
      const how = exitCode === null ? `was killed by ${exitSignal ?? 'a signal'}` : `exited with code ${exitCode}`;
      const lastLine = lastStderrLine(stderrTail, options.trimNodeNoise);
      const message = `script ${name} ${how}${lastLine === undefined ? '' : `: ${lastLine}`}`;
      return { reason: new ScriptFailedError(message, { ...tails, exitCode, exitSignal }) };
    };

    child.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
      stdoutTail = keepTail(stdoutTail, chunk);
    });
    child.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
      stderrTail = keepTail(stderrTail, chunk);
    });
    const logStream = child.stdio[logDescriptor] instanceof Readable ? child.stdio[logDescriptor] : undefined;
    if (logStream !== undefined) {
      const lines = new LineSplitter((line) => {
        const entry = parseLogLine(line);
        if (entry === undefined || options.onLog === undefined || stopReason !== undefined) return;
        try {
          options.onLog(entry.level, entry.message);
        } catch (error) {
          // A throwing callback must not become an uncaught exception in a stream handler; it ends the run instead.
          stop({ kind: 'log', error });
        }
      });
      logStream.setEncoding('utf8').on('data', (chunk: string) => lines.push(chunk));
    }

    child.once('error', (error) => {
      spawnError = error;
      // When spawn itself failed there is no process whose 'close' we could wait for.
      if (child.pid === undefined) finish(null, null);
    });
    child.once('exit', () => {
      // The main process is gone; whatever it left running in its group must not outlive the run (it would also
      // hold the pipes open, delaying 'close' until the timeout).
      signalGroup('SIGKILL');
      // Without a sandbox a process can leave the group (setsid) and keep the pipes open; stop listening after a
      // moment so the run still ends. (Under bubblewrap the PID namespace dies with the script, so nothing escapes.)
      drainTimer = setTimeout(() => {
        for (const stream of [child.stdout, child.stderr, logStream]) stream?.destroy();
      }, outputDrainMs);
    });
    child.once('close', finish);
  });
}

/** Keeps the last {@link tailLength} characters of a stream. */
function keepTail(tail: string, chunk: string): string {
  const joined = tail + chunk;
  return joined.length > tailLength ? joined.slice(-tailLength) : joined;
}

/**
 * The last line of standard error worth quoting. For node scripts, Node's own trailer (`Node.js v24…`) and stack
 * frames are skipped, so an uncaught error is quoted by its message rather than by `at ModuleJob.run`.
 */
function lastStderrLine(stderrTail: string, trimNodeNoise: boolean): string | undefined {
  const lines = stderrTail
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '' && !(trimNodeNoise && (/^Node\.js v\d/.test(line) || /^at\s/.test(line))));
  return lines.at(-1)?.slice(0, maximumMessageLength);
}

/** Splits a stream of text into lines, cutting each at {@link maximumLogLineLength} characters. */
class LineSplitter {
  readonly #onLine: (line: string) => void;
  #pending = '';

  constructor(onLine: (line: string) => void) {
    this.#onLine = onLine;
  }

  push(chunk: string): void {
    let rest = chunk;
    for (let newline = rest.indexOf('\n'); newline !== -1; newline = rest.indexOf('\n')) {
      const line = (this.#pending + rest.slice(0, newline)).slice(0, maximumLogLineLength);
      this.#pending = '';
      rest = rest.slice(newline + 1);
      this.#onLine(line);
    }
    this.#pending = (this.#pending + rest).slice(0, maximumLogLineLength);
  }
}

function parseLogLine(rawLine: string): { level: ScriptLogLevel; message: string } | undefined {
  const line = rawLine.endsWith('\r') ? rawLine.slice(0, -1) : rawLine;
  if (line === '') return undefined;
  const tab = line.indexOf('\t');
  const level = logLevels.find((candidate) => candidate === line.slice(0, tab));
  // A line without a known level still reaches the caller, as info, rather than vanishing.
  if (tab === -1 || level === undefined) return { level: 'info', message: line.slice(0, maximumMessageLength) };
  return { level, message: line.slice(tab + 1, tab + 1 + maximumMessageLength) };
}

/** Reads the result file: null when the script wrote none, its JSON otherwise. */
async function readResult(name: string, resultFile: string, outcome: ChildOutcome): Promise<JsonValue | null> {
  const fail = (problem: string, cause?: unknown): ScriptFailedError =>
    new ScriptFailedError(
      `script ${name} ${problem}`,
      { scriptName: name, exitCode: 0, exitSignal: null, ...outcome },
      cause === undefined ? undefined : { cause },
    );
  const info = await lstat(resultFile).catch((error: unknown) => {
    if (isNodeError(error) && error.code === 'ENOENT') return undefined;
    throw fail(`left a result file we cannot inspect (${resultFile}): ${String(error)}`, error);
  });
  if (info === undefined) return null;
  // A symbolic link could point at a file only Assistant may read (secrets.yaml) and smuggle it into the result.
  if (!info.isFile()) throw fail(`left something other than a plain file at its result file ${resultFile}`);
  if (info.size > maximumResultBytes) {
    throw fail(`wrote ${info.size} bytes to its result file ${resultFile}; the most a result may be is 1 MiB`);
  }
  const text = await readFile(resultFile, 'utf8');
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    throw fail(`wrote invalid JSON to its result file ${resultFile}: ${reason}`, error);
  }
  return jsonValueSchema.parse(parsed);
}

function isNodeError(error: unknown): error is NodeJS.ErrnoException {
  return error instanceof Error && 'code' in error;
}

/**
 * bwrap arguments that show a node script: its whole folder read-only, so it can import its neighbours, unless that
 * folder holds something private (config.yaml's folder, the home folder, the scripts' work folders, a private path)
 * or lies inside the data folder or another private path; then only the file itself.
 */
async function scriptMounts(realScriptPath: string, guard: ScriptGuard): Promise<string[]> {
  const folder = path.dirname(realScriptPath);
  const real = (guardedPath: string) => realpath(guardedPath).catch(() => path.resolve(guardedPath));
  const mustNotHold = await Promise.all(
    [...guard.privatePaths, guard.configDir, guard.scriptsDir, homedir()].map(real),
  );
  const mustNotBeInside = await Promise.all([...guard.privatePaths, guard.scriptsDir].map(real));
  const overlaps =
    mustNotHold.some((guarded) => isInside(guarded, folder)) ||
    mustNotBeInside.some((guarded) => isInside(folder, guarded));
  const shown = overlaps ? realScriptPath : folder;
  return ['--ro-bind', shown, shown];
}

/** What a node script's folder must not expose; see {@link scriptMounts}. */
interface ScriptGuard {
  privatePaths: readonly string[];
  configDir: string;
  /** The folder of every script's work folder, `data/scripts/`. */
  scriptsDir: string;
}

/** True when `inner` is `outer` or lies somewhere under it. */
function isInside(inner: string, outer: string): boolean {
  const relative = path.relative(outer, inner);
  return relative === '' || (!relative.startsWith('..') && !path.isAbsolute(relative));
}

/** The real paths of the Node binary and the helpers module, resolved once: bound into the sandbox one file each. */
let installed: Promise<{ node: string; helpers: string }> | undefined;
function installation(): Promise<{ node: string; helpers: string }> {
  installed ??= (async () => ({ node: await realpath(process.execPath), helpers: await realpath(helpersPath) }))();
  return installed;
}
