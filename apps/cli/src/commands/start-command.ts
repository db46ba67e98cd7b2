import { fileURLToPath } from 'node:url';
import { AssistantError } from '@assistant/errors';
import { assertPortFree } from '@assistant/process';
import type { CliContext } from '../cli-context.ts';
import type { GlobalOptions } from '../global-options.ts';
import { listenForShutdown } from '../listen-for-shutdown.ts';
import { loadCliConfig } from '../load-cli-config.ts';
import {
  describeExit,
  type ProcessExit,
  type SuperviseProcessesResult,
  superviseProcesses,
} from '../supervise-processes.ts';

export interface StartCommandOptions {
  globals: GlobalOptions;
  context: CliContext;
}

// The server has no long work to finish; the worker gets its configured grace, and both a margin on top.
const stopMarginMs = 5_000;

/**
 * Runs the server and the worker as two child processes, which is how they run in production: separate
 * processes that share only files. Stops both when either dies, so a half-running assistant never goes unnoticed.
 */
export async function startCommand(options: StartCommandOptions): Promise<void> {
  const { context } = options;
  const { config } = await loadCliConfig(options);
  // A taken port (most often a second Assistant) stops us here with one line, before any child starts.
  if (config.server.port !== 0) await assertPortFree(config.server);
  const say = (line: string) => context.stdout.write(`[assistant] ${line}\n`);
  // Forward flags such as --experimental-strip-types that this Node needed to run TypeScript; not --inspect,
  // whose port two children would fight over.
  const execArgv = process.execArgv.filter((argument) => !argument.startsWith('--inspect'));
  const childArgs = ['--config', config.paths.configFile, '--data', config.paths.dataDir];
  const env: NodeJS.ProcessEnv = { ...context.env, ASSISTANT_CONFIG_CHECKED: '1' };
  // The children write to pipes, so they would pick JSON logs; a person at this terminal wants them pretty.
  if (context.stdout.isTTY && env.ASSISTANT_LOG_FORMAT === undefined) {
    env.ASSISTANT_LOG_FORMAT = 'pretty';
    if (env.NO_COLOR === undefined && env.FORCE_COLOR === undefined) env.FORCE_COLOR = '1';
  }

  // try/finally rather than `using`: the bin runs this on Node 22 too, which lacks explicit resource management.
  const shutdown = listenForShutdown({
    onRepeat: (signal) => say(`${signal} received; already stopping (server and worker are finishing up)`),
  });
  shutdown.signal.addEventListener('abort', () => say(`${String(shutdown.signal.reason)} received; stopping`), {
    once: true,
  });
  let result: SuperviseProcessesResult;
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
      stdout: context.stdout,
      stderr: context.stderr,
      signal: shutdown.signal,
      graceMs: config.worker.shutdownGraceMs + stopMarginMs,
      // The pids let a person (or a test) find each process: `kill`, `ps`, a debugger.
      onSpawn: (name, pid) => say(`${name} started (pid ${pid})`),
      onUnexpectedExit: (exit) => say(`${exit.name} (pid ${exit.pid ?? '?'}) ${describeExit(exit)}; stopping the rest`),
    });
  } finally {
    shutdown[Symbol.dispose]();
  }

  if (result.unexpected) {
    const exit = result.unexpected;
    throw new AssistantError('CHILD_EXITED', `the ${exit.name} (pid ${exit.pid ?? '?'}) ${describeExit(exit)}`, {
      hint: `the [${exit.name}] lines above say why; the other process was stopped`,
    });
  }
  const forwarded = String(shutdown.signal.reason);
  const unclean = result.exits.filter((exit) => !cleanStop(exit, forwarded));
  if (unclean.length > 0) {
    throw new AssistantError(
      'CHILD_EXITED',
      `did not stop cleanly: ${unclean.map((exit) => `the ${exit.name} ${describeExit(exit)}`).join('; ')}`,
      { hint: 'the lines above say why' },
    );
  }
  say('stopped');
}

/** Exit 0, or killed by the very signal we forwarded before it had installed its handler. */
function cleanStop(exit: ProcessExit, forwarded: string): boolean {
  return exit.code === 0 || exit.signal === forwarded;
}

function mainOf(specifier: string): string {
  return fileURLToPath(import.meta.resolve(specifier));
}
