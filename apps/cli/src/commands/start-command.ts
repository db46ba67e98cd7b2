import { AssistantError } from '@assistant/errors';
import { assertPortFree } from '@assistant/process';
import type { CliContext } from '../cli-context.ts';
import type { GlobalOptions } from '../global-options.ts';
import { loadCliConfig } from '../load-cli-config.ts';
import { superviseStart } from '../start-supervisor.js';

export interface StartCommandOptions {
  globals: GlobalOptions;
  context: CliContext;
  /**
   * Check the config, print its warnings, and print what the supervisor needs as one JSON line instead of
   * starting anything: how the lean supervisor (start-supervisor.js) checks the config without loading it.
   */
  preflight?: boolean;
  /** Log a line per task (ASSISTANT_LOG_LEVEL=debug for both children) instead of a summary per batch. */
  verbose?: boolean;
}

/** What `assistant start --preflight` prints, as one JSON line on stdout. */
interface StartPlan {
  configFile: string;
  dataDir: string;
  shutdownGraceMs: number;
}

/**
 * Runs the server and the worker as two child processes (see start-supervisor.js). A plain `assistant start`
 * does not come here: main.ts replaces itself with the lean supervisor, which runs `start --preflight` first.
 * This in-process path serves the other ways in (runCli, a Node without process.execve).
 */
export async function startCommand(options: StartCommandOptions): Promise<void> {
  const { context } = options;
  const { config, registry } = await loadCliConfig(options);
  // What `config check` imports: every handler, listener and webhook module with its export. The worker and the
  // server import them only when first used (to stay small), so a broken one is refused here, before either
  // starts, instead of failing its first tasks. This runs in start's short-lived preflight child.
  await registry.loadHandlers({ inbound: 'all' });
  // A taken port (most often a second Assistant) stops us here with one line, before any child starts.
  if (config.server.port !== 0) await assertPortFree(config.server);
  const plan: StartPlan = {
    configFile: config.paths.configFile,
    dataDir: config.paths.dataDir,
    shutdownGraceMs: config.worker.shutdownGraceMs,
  };
  if (options.preflight) {
    context.stdout.write(`${JSON.stringify(plan)}\n`);
    return;
  }
  const error = await superviseStart({
    ...plan,
    execArgv: process.execArgv,
    env: context.env,
    stdout: context.stdout,
    stderr: context.stderr,
    verbose: options.verbose === true,
  });
  if (error) throw new AssistantError('CHILD_EXITED', error.message, { hint: error.hint });
}
