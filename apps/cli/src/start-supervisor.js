// `assistant start`'s supervisor: runs the server and the worker as child processes, prefixes their output, and
// starts one that dies again (with backoff) while the other keeps running. Plain JavaScript on purpose, importing
// only Node's own modules: `assistant start` replaces itself with this file (apps/cli/src/main.ts), so the process
// that stays up for the assistant's lifetime does not hold commander, zod, the config loader, the runtime or Node's
// TypeScript stripper (about 40 MB resident instead of 140). Types: start-supervisor.d.ts. The config is checked by
// `assistant start --preflight`, run as a short-lived child first, which prints warnings and errors exactly as any
// command does.
import { spawn } from 'node:child_process';
import { mkdir, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { StringDecoder } from 'node:string_decoder';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

// The server has no long work to finish; the worker gets its configured grace, and both a margin on top.
const stopMarginMs = 5_000;
const cliMain = fileURLToPath(new URL('./main.ts', import.meta.url));

/**
 * The global options of a plain `assistant start [--config FILE] [--data DIR] [--verbose]` command line, or
 * undefined for anything else (help, --preflight, a typo), which the full command line handles and explains.
 * @param {readonly string[]} argv the arguments after `assistant`
 * @returns {{ config: string | undefined; data: string | undefined; verbose?: true } | undefined}
 */
export function plainStartArguments(argv) {
  try {
    const { values, positionals } = parseArgs({
      args: [...argv],
      options: { config: { type: 'string' }, data: { type: 'string' }, verbose: { type: 'boolean' } },
      allowPositionals: true,
      strict: true,
    });
    if (positionals.length !== 1 || positionals[0] !== 'start') return undefined;
    if (values.config === '' || values.data === '') return undefined;
    return { config: values.config, data: values.data, ...(values.verbose ? { verbose: true } : {}) };
  } catch {
    return undefined;
  }
}

/**
 * Prefixes each line of a child's output. It writes whole lines only, so two children writing at once never
 * interleave mid-line. A line `swallow` returns true for is not written (the watchdog's).
 * @param {{ prefix: string; write: (text: string) => void; maxLineChars?: number; swallow?: (line: string) => boolean }} options
 */
export function createLinePrefixer(options) {
  const maxLineChars = options.maxLineChars ?? 65_536;
  const decoder = new StringDecoder('utf8');
  let pending = '';
  /** @param {string} text */
  const flushLines = (text) => {
    if (text === '') return;
    const lines = text.endsWith('\n') ? text.slice(0, -1).split('\n') : text.split('\n');
    const { swallow } = options;
    const kept = swallow === undefined ? lines : lines.filter((line) => !swallow(line));
    if (kept.length > 0) options.write(kept.map((line) => `${options.prefix}${line}\n`).join(''));
  };
  return {
    /** @param {Buffer | string} chunk */
    push(chunk) {
      pending += typeof chunk === 'string' ? chunk : decoder.write(chunk);
      const lastNewline = pending.lastIndexOf('\n');
      if (lastNewline >= 0) {
        flushLines(pending.slice(0, lastNewline + 1));
        pending = pending.slice(lastNewline + 1);
      }
      if (pending.length > maxLineChars) {
        flushLines(pending);
        pending = '';
      }
    },
    end() {
      pending += decoder.end();
      flushLines(pending);
      pending = '';
    },
  };
}

/** How long `assistant start` waits before it starts a crashed child again: doubling from the first, up to the most. */
const defaultRestart = { firstDelayMs: 1_000, maxDelayMs: 60_000, stableMs: 60_000 };

/**
 * Runs processes side by side with their output prefixed by name, until `signal` aborts; then stops them (the
 * signal, then SIGKILL after `graceMs`) and resolves once all have exited.
 *
 * A process that exits on its own is started again after a delay that doubles with each crash in a row (1 s, 2 s,
 * 4 s … up to a minute; back to 1 s once a run lasted a minute), while the others keep running: one bad handler or
 * integration must not take the whole assistant down (issue 30). Only a process that cannot be started at all
 * (`spawn` failed: no such program) stops the rest, since starting it again would fail the same way.
 *
 * Each process is told (ASSISTANT_WATCHDOG=1) to write, while its event loop turns, a watchdog line on its stdout
 * saying how many milliseconds may pass before the next (@assistant/process's beatForSupervisor); those lines are not
 * printed. One that has beaten and then stays silent longer is stuck: a handler's endless synchronous loop, or Node
 * hanging while it exits. Its tasks would wait for a restart that never comes, since it has not exited; it is killed
 * with SIGKILL and started again like any crashed process.
 * @param {import('./start-supervisor.d.ts').SuperviseProcessesOptions} options
 * @returns {Promise<import('./start-supervisor.d.ts').SuperviseProcessesResult>}
 */
export async function superviseProcesses(options) {
  const restart = { ...defaultRestart, ...options.restart };
  let stopping = false;
  /** @type {import('./start-supervisor.d.ts').ProcessExit | undefined} */
  let unexpected;
  /** @type {NodeJS.Timeout | undefined} */
  let killTimer;
  /** The child each process runs now (or ran last). @type {Map<string, import('node:child_process').ChildProcess>} */
  const current = new Map();
  /** @type {() => void} */
  let wakeWaiting = () => {};
  const stopped = new Promise((resolve) => {
    wakeWaiting = () => resolve(undefined);
  });

  /** @param {import('node:child_process').ChildProcess} child */
  const running = (child) => child.exitCode === null && child.signalCode === null;
  /** @param {NodeJS.Signals} signal */
  const stopAll = (signal) => {
    if (stopping) return;
    stopping = true;
    wakeWaiting();
    for (const child of current.values()) if (running(child)) child.kill(signal);
    killTimer = setTimeout(() => {
      for (const child of current.values()) if (running(child)) child.kill('SIGKILL');
    }, options.graceMs);
  };

  /**
   * One run of a process, until it exits.
   * @param {import('./start-supervisor.d.ts').SupervisedProcess} spec
   * @returns {Promise<import('./start-supervisor.d.ts').ProcessExit>}
   */
  const runOnce = (spec) => {
    const child = spawn(spec.command, [...spec.args], {
      env: { ...options.env, ASSISTANT_WATCHDOG: '1' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    current.set(spec.name, child);
    /** @type {number | undefined} */
    let silentForMs;
    /** @type {string | undefined} */
    let lastError;
    const watchdog = createWatchdog({
      watching: () => !stopping && running(child),
      onSilent: (silentMs) => {
        silentForMs = silentMs;
        options.onSilent?.(spec.name, child.pid, silentMs);
        child.kill('SIGKILL');
      },
    });
    const prefix = `[${spec.name}] `;
    const out = createLinePrefixer({
      prefix,
      write: (text) => options.stdout.write(text),
      swallow: (line) => {
        if (watchdog.take(line)) return true;
        lastError = fatalLogMessage(line) ?? lastError;
        return false;
      },
    });
    const err = createLinePrefixer({
      prefix,
      write: (text) => options.stderr.write(text),
      swallow: (line) => {
        lastError = crashLine(line) ?? lastError;
        return false;
      },
    });
    child.stdout?.on('data', (chunk) => out.push(chunk));
    child.stdout?.on('end', () => out.end());
    child.stderr?.on('data', (chunk) => err.push(chunk));
    child.stderr?.on('end', () => err.end());
    if (child.pid !== undefined) options.onSpawn?.(spec.name, child.pid);
    // 'close' rather than 'exit': it waits for the output pipes to drain, so no last line is lost.
    return new Promise((resolve) => {
      /** @type {Error | undefined} */
      let spawnError;
      /** @param {number | null} code @param {NodeJS.Signals | null} signal */
      const finish = (code, signal) => {
        watchdog.stop();
        resolve({
          name: spec.name,
          pid: child.pid,
          code,
          signal,
          ...(spawnError ? { error: spawnError } : {}),
          ...(silentForMs === undefined ? {} : { silentMs: silentForMs }),
          ...(lastError === undefined ? {} : { lastError }),
        });
      };
      child.once('error', (error) => {
        spawnError = error;
        // A process that never started emits no 'close' on some platforms; do not wait for it.
        if (child.pid === undefined) finish(null, null);
      });
      child.once('close', finish);
    });
  };

  /**
   * Runs a process again and again until the stop; resolves with how its last run ended, or undefined when the stop
   * came while it waited to be started again (nothing was running to stop).
   * @param {import('./start-supervisor.d.ts').SupervisedProcess} spec
   * @returns {Promise<import('./start-supervisor.d.ts').ProcessExit | undefined>}
   */
  const supervise = async (spec) => {
    let restarts = 0;
    let crashesInARow = 0;
    for (;;) {
      const startedMs = performance.now();
      const exit = await runOnce(spec);
      if (stopping) return exit;
      if (exit.error !== undefined && exit.pid === undefined) {
        unexpected = exit;
        options.onUnexpectedExit?.(exit);
        stopAll('SIGTERM');
        return exit;
      }
      if (performance.now() - startedMs >= restart.stableMs) crashesInARow = 0;
      const delayMs = Math.min(restart.maxDelayMs, restart.firstDelayMs * 2 ** crashesInARow);
      crashesInARow += 1;
      restarts += 1;
      options.onRestart?.({ exit, restarts, delayMs });
      /** @type {NodeJS.Timeout | undefined} */
      let timer;
      await Promise.race([stopped, new Promise((resolve) => (timer = setTimeout(resolve, delayMs)))]);
      clearTimeout(timer);
      if (stopping) return undefined;
    }
  };

  const onAbort = () => stopAll(options.signal.reason === 'SIGINT' ? 'SIGINT' : 'SIGTERM');
  if (options.signal.aborted) onAbort();
  else options.signal.addEventListener('abort', onAbort, { once: true });
  try {
    const settled = await Promise.all(options.processes.map((spec) => supervise(spec)));
    return { unexpected, exits: settled.filter((exit) => exit !== undefined) };
  } finally {
    options.signal.removeEventListener('abort', onAbort);
    clearTimeout(killTimer);
  }
}

/**
 * The line of a crashed Node process's stderr that says what went wrong: `Error: boom`, `TypeError [ERR_X]: …`,
 * `FATAL ERROR: … JavaScript heap out of memory`; undefined for any other line. Cut to 500 characters.
 * @param {string} line
 * @returns {string | undefined}
 */
export function crashLine(line) {
  const trimmed = line.trim();
  if (!/^(?:Uncaught )?(?:(?:[A-Z]\w*)?(?:Error|Exception)(?: \[\w+\])?:|FATAL ERROR:)/.test(trimmed)) return undefined;
  return trimmed.length > 500 ? `${trimmed.slice(0, 500)}…` : trimmed;
}

/**
 * The message of a fatal log line (pino's JSON, level 60): what `runProcessMain` logs when the run failed. Cut to 500.
 * @param {string} line
 * @returns {string | undefined}
 */
function fatalLogMessage(line) {
  if (!line.startsWith('{') || !line.includes('"level":60')) return undefined;
  try {
    const message = JSON.parse(line).msg;
    if (typeof message !== 'string' || message === '') return undefined;
    const first = message.split('\n')[0] ?? message;
    return first.length > 500 ? `${first.slice(0, 500)}…` : first;
  } catch {
    return undefined;
  }
}

/** How a watchdog line starts: a record separator, which no log line does. */
const beatPrefix = '\u001eassistant-watchdog ';

/**
 * Follows a child's watchdog lines (`take` them from its output: each says how many milliseconds may pass before the
 * next) and calls `onSilent` once when the next is overdue while `watching()`. A child that never beats (not started
 * through runProcessMain) is never called silent.
 * @param {{ watching: () => boolean; onSilent: (silentMs: number) => void }} options
 * @returns {{ take: (line: string) => boolean; stop: () => void }}
 */
function createWatchdog(options) {
  /** @type {{ limitMs: number; atMs: number } | undefined} */
  let last;
  const timer = setInterval(() => {
    if (last === undefined || !options.watching()) return;
    const silentMs = performance.now() - last.atMs;
    if (silentMs <= last.limitMs) return;
    clearInterval(timer);
    options.onSilent(silentMs);
  }, 1_000);
  return {
    take(line) {
      if (!line.startsWith(beatPrefix)) return false;
      const limitMs = Number(line.slice(beatPrefix.length));
      if (Number.isFinite(limitMs) && limitMs > 0) last = { limitMs, atMs: performance.now() };
      return true;
    },
    stop: () => clearInterval(timer),
  };
}

/**
 * `exited with code 1`, `was killed by SIGKILL`, `could not start: spawn ENOENT`; for a child the watchdog killed,
 * `was killed by SIGKILL after its event loop stopped answering for 12 s`.
 * @param {import('./start-supervisor.d.ts').ProcessExit} exit
 */
function describeExit(exit) {
  if (exit.error && exit.code === null && exit.signal === null) return `could not start: ${exit.error.message}`;
  if (exit.silentMs !== undefined) {
    return `was killed by ${exit.signal ?? 'SIGKILL'} after its event loop stopped answering for ${Math.round(exit.silentMs / 1_000)} s`;
  }
  if (exit.signal !== null) return `was killed by ${exit.signal}`;
  return `exited with code ${exit.code}`;
}

/** What a person reads on why a child stopped: how it exited, and the error it printed last if any. */
function exitReason(/** @type {import('./start-supervisor.d.ts').ProcessExit} */ exit) {
  return `${describeExit(exit)}${exit.lastError === undefined ? '' : `: ${exit.lastError}`}`;
}

/** The file in the data directory where `assistant start` says how its children run and why they restarted. */
export const supervisorStateFileName = 'supervisor.json';

/**
 * Keeps `data/supervisor.json` current: this supervisor's pid, and per child its pid, how many times it was started
 * again, and the last restart's time, exit and reason. The server reads it for /health and the dashboard (and only
 * when it is the child of the pid inside, so a file left by an earlier `start` is not shown as news). Each write
 * replaces the file whole (a temporary file renamed over it), one at a time in order. A write that fails is said once
 * and does not stop anything: the restarts are in the output too.
 * @param {{ dataDir: string; say: (line: string) => void }} options
 */
function createSupervisorState(options) {
  const file = path.join(options.dataDir, supervisorStateFileName);
  /** @type {import('./start-supervisor.d.ts').SupervisorState} */
  const state = { supervisor_pid: process.pid, started_at: new Date().toISOString(), processes: {} };
  let writing = Promise.resolve();
  let warned = false;
  const save = () => {
    const text = `${JSON.stringify(state, null, 2)}\n`;
    writing = writing.then(async () => {
      try {
        await mkdir(options.dataDir, { recursive: true, mode: 0o700 });
        const temporary = `${file}.${process.pid}.tmp`;
        await writeFile(temporary, text, { mode: 0o600 });
        await rename(temporary, file);
      } catch (error) {
        if (!warned)
          options.say(
            `cannot write ${file}: ${/** @type {Error} */ (error).message}; restarts are not shown in /health`,
          );
        warned = true;
      }
    });
  };
  /** @param {string} name */
  const processOf = (name) => {
    state.processes[name] ??= { pid: null, restarts: 0 };
    return state.processes[name];
  };
  return {
    /** @param {string} name @param {number} pid */
    spawned(name, pid) {
      const child = processOf(name);
      child.pid = pid;
      child.started_at = new Date().toISOString();
      delete child.next_start_at;
      save();
    },
    /** @param {import('./start-supervisor.d.ts').RestartEvent} event */
    restarting(event) {
      const child = processOf(event.exit.name);
      const nowMs = Date.now();
      child.pid = null;
      child.restarts = event.restarts;
      child.last_restart = {
        at: new Date(nowMs).toISOString(),
        reason: exitReason(event.exit),
        code: event.exit.code,
        signal: event.exit.signal,
      };
      child.next_start_at = new Date(nowMs + event.delayMs).toISOString();
      save();
    },
    flush: () => writing,
  };
}

/**
 * Turns SIGINT and SIGTERM into an AbortSignal. Later signals are not fatal: a Ctrl-C reaches every process in
 * the terminal's group and again through this process, and the repeat must not cut a graceful stop short.
 * @param {(signal: string) => void} onRepeat
 */
function listenForShutdown(onRepeat) {
  const controller = new AbortController();
  /** @param {NodeJS.Signals} signal */
  const listener = (signal) => {
    if (controller.signal.aborted) onRepeat(signal);
    else controller.abort(signal);
  };
  process.on('SIGINT', listener);
  process.on('SIGTERM', listener);
  return {
    signal: controller.signal,
    dispose() {
      process.off('SIGINT', listener);
      process.off('SIGTERM', listener);
    },
  };
}

/**
 * Runs the server and the worker as two child processes, which is how they run in production: separate
 * processes that share only files. One that dies is started again (with backoff) while the other keeps running, and
 * data/supervisor.json says so, for /health and the dashboard.
 * Resolves with an error to report (`assistant: …`, exit 1) or undefined after a clean stop.
 * @param {import('./start-supervisor.d.ts').SuperviseStartOptions} options
 * @returns {Promise<{ message: string; hint: string } | undefined>}
 */
export async function superviseStart(options) {
  /** @param {string} line */
  const say = (line) => options.stdout.write(`[assistant] ${line}\n`);
  // Forward flags such as --experimental-strip-types that this Node needed to run TypeScript; not --inspect,
  // whose port two children would fight over.
  const execArgv = options.execArgv.filter((argument) => !argument.startsWith('--inspect'));
  const childArgs = ['--config', options.configFile, '--data', options.dataDir];
  /** @type {NodeJS.ProcessEnv} */
  const env = { ...options.env, ASSISTANT_CONFIG_CHECKED: '1' };
  // `--verbose`: a line per task (debug) instead of a summary per batch; an explicit ASSISTANT_LOG_LEVEL wins.
  if (options.verbose && env.ASSISTANT_LOG_LEVEL === undefined) env.ASSISTANT_LOG_LEVEL = 'debug';
  // The children write to pipes, so they would pick JSON logs; a person at this terminal wants them pretty.
  if (options.stdout.isTTY && env.ASSISTANT_LOG_FORMAT === undefined) {
    env.ASSISTANT_LOG_FORMAT = 'pretty';
    if (env.NO_COLOR === undefined && env.FORCE_COLOR === undefined) env.FORCE_COLOR = '1';
  }
  const shutdown =
    options.shutdown ??
    listenForShutdown((signal) => say(`${signal} received; already stopping (server and worker are finishing up)`));
  shutdown.signal.addEventListener('abort', () => say(`${String(shutdown.signal.reason)} received; stopping`), {
    once: true,
  });
  const state = createSupervisorState({ dataDir: options.dataDir, say });
  // In the background, so start is not delayed: one warning per LLM profile that does not answer, as doctor says it.
  const probe =
    options.probeModels === false ? undefined : probeModels({ execArgv, childArgs, env: options.env, say, shutdown });
  /** @type {import('./start-supervisor.d.ts').SuperviseProcessesResult} */
  let result;
  try {
    result = await superviseProcesses({
      processes: [
        {
          name: 'server',
          command: process.execPath,
          args: [...execArgv, mainOf('@assistant/server/main'), ...childArgs],
        },
        {
          name: 'worker',
          command: process.execPath,
          args: [...execArgv, mainOf('@assistant/worker/main'), ...childArgs],
        },
      ],
      env,
      stdout: options.stdout,
      stderr: options.stderr,
      signal: shutdown.signal,
      graceMs: options.shutdownGraceMs + stopMarginMs,
      // The pids let a person (or a test) find each process: `kill`, `ps`, a debugger.
      onSpawn: (name, pid) => {
        say(`${name} started (pid ${pid})`);
        state.spawned(name, pid);
      },
      onRestart: (event) => {
        const { exit } = event;
        say(
          `${exit.name} (pid ${exit.pid ?? '?'}) ${exitReason(exit)}; starting it again in ${formatDelay(event.delayMs)} (restart ${event.restarts})`,
        );
        state.restarting(event);
      },
      onUnexpectedExit: (exit) => say(`${exit.name} ${describeExit(exit)}; stopping the rest`),
      onSilent: (name, pid, silentMs) =>
        say(
          `${name} (pid ${pid ?? '?'}) has not answered for ${Math.round(silentMs / 1_000)} s: its event loop is blocked or it hangs while exiting; killing it`,
        ),
    });
    await state.flush();
  } finally {
    probe?.stop();
    shutdown.dispose();
  }

  if (result.unexpected) {
    const exit = result.unexpected;
    return {
      message: `the ${exit.name} ${describeExit(exit)}`,
      hint: 'check that Node can be run from this directory; the other process was stopped',
    };
  }
  const forwarded = String(shutdown.signal.reason);
  // Exit 0, or killed by the very signal we forwarded before it had installed its handler.
  const unclean = result.exits.filter((exit) => !(exit.code === 0 || exit.signal === forwarded));
  if (unclean.length > 0) {
    return {
      message: `did not stop cleanly: ${unclean.map((exit) => `the ${exit.name} ${describeExit(exit)}`).join('; ')}`,
      hint: 'the lines above say why',
    };
  }
  say('stopped');
  return undefined;
}

/**
 * Runs `assistant start --probe-models` once, beside the server and the worker, and prints what it says (a warning
 * per LLM profile that cannot be reached) under `[assistant]`. Its failure to run is not start's: it says so once.
 * @param {{ execArgv: readonly string[]; childArgs: readonly string[]; env: NodeJS.ProcessEnv; say: (line: string) => void; shutdown: { signal: AbortSignal } }} options
 * @returns {{ stop(): void }}
 */
function probeModels(options) {
  const child = spawn(
    process.execPath,
    [...options.execArgv, cliMain, 'start', '--probe-models', ...options.childArgs],
    {
      env: options.env,
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  const lines = createLinePrefixer({
    prefix: '',
    write: (text) => {
      for (const line of text.split('\n')) if (line !== '') options.say(line);
    },
  });
  child.stdout?.on('data', (chunk) => lines.push(chunk));
  child.stdout?.on('end', () => lines.end());
  let errorText = '';
  child.stderr?.setEncoding('utf8');
  child.stderr?.on('data', (chunk) => {
    if (errorText.length < 2_000) errorText += chunk;
  });
  child.once('error', (error) => options.say(`could not check the LLM profiles: ${error.message}`));
  child.once('close', (code) => {
    if (code !== 0 && code !== null && !options.shutdown.signal.aborted) {
      options.say(`could not check the LLM profiles: ${errorText.trim().split('\n')[0] ?? `exit ${code}`}`);
    }
  });
  return {
    stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    },
  };
}

/** `1 s`, `2 min`. @param {number} delayMs */
function formatDelay(delayMs) {
  return delayMs >= 60_000 && delayMs % 60_000 === 0 ? `${delayMs / 60_000} min` : `${Math.round(delayMs / 1_000)} s`;
}

/** @param {string} specifier */
function mainOf(specifier) {
  return fileURLToPath(import.meta.resolve(specifier));
}

/**
 * The lean `assistant start`: checks the config in a short-lived `assistant start --preflight` child (its warnings
 * and errors go straight to stderr), then supervises. Resolves to the exit code.
 * @param {readonly string[]} argv the arguments after `assistant`, a plain start (see plainStartArguments)
 * @returns {Promise<number>}
 */
async function runLeanStart(argv) {
  // Listening from the start: a Ctrl-C during the check reaches the check too, and must not start anything after.
  const shutdown = listenForShutdown((signal) =>
    process.stdout.write(`[assistant] ${signal} received; already stopping (server and worker are finishing up)\n`),
  );
  const preflight = spawn(process.execPath, [...process.execArgv, cliMain, ...argv, '--preflight'], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let output = '';
  preflight.stdout.setEncoding('utf8');
  preflight.stdout.on('data', (chunk) => {
    output += chunk;
  });
  /** @type {[number | null, NodeJS.Signals | null]} */
  const [code, signal] = await new Promise((resolve, reject) => {
    preflight.once('error', reject);
    preflight.once('close', (exitCode, exitSignal) => resolve([exitCode, exitSignal]));
  });
  if (code !== 0) {
    shutdown.dispose();
    // Its errors are on stderr already, in the CLI's own `assistant: …` form.
    if (signal !== null && !shutdown.signal.aborted)
      process.stderr.write(`assistant: the config check was killed by ${signal}\n`);
    return code ?? 1;
  }
  if (shutdown.signal.aborted) {
    shutdown.dispose();
    process.stdout.write('[assistant] stopped\n');
    return 0;
  }
  /** @type {{ configFile: string; dataDir: string; shutdownGraceMs: number }} */
  const plan = JSON.parse(output.trim().split('\n').at(-1) ?? '');
  const error = await superviseStart({
    ...plan,
    execArgv: process.execArgv,
    env: process.env,
    stdout: process.stdout,
    stderr: process.stderr,
    shutdown,
    verbose: plainStartArguments(argv)?.verbose === true,
  });
  if (error === undefined) return 0;
  process.stderr.write(`assistant: ${error.message}\nhint: ${error.hint}\n`);
  return 1;
}

// `node start-supervisor.js start [--config FILE] [--data DIR]`: what main.ts replaces itself with.
if (process.argv[1] === fileURLToPath(import.meta.url)) {
  process.umask(0o077);
  process.exitCode = await runLeanStart(process.argv.slice(2));
}
