import { parseArgs } from 'node:util';
import { type ConfigProblem, formatProblem, type LoadedConfig, loadConfig } from '@assistant/config';
import { isAssistantError, scrubSecrets } from '@assistant/errors';
import type { Logger } from 'pino';
import { beatForSupervisor } from './beat-for-supervisor.ts';
import { createLogger } from './create-logger.ts';

/** What a process loads before it runs: at least the config and its warnings. */
export interface LoadedProcessConfig {
  config: LoadedConfig;
  warnings: readonly ConfigProblem[];
}

/** What a process's run function receives. */
export interface ProcessRunOptions<Loaded extends LoadedProcessConfig = LoadedProcessConfig> {
  /** Everything `load` returned (the config and, for the apps, the integration registry). */
  loaded: Loaded;
  config: LoadedConfig;
  logger: Logger;
  /** Aborted on the first SIGINT or SIGTERM; the run function then shuts down gracefully and returns. */
  signal: AbortSignal;
}

export interface ProcessMainOptions<Loaded extends LoadedProcessConfig = LoadedProcessConfig> {
  /** `server` or `worker`: the logger's name and the prefix of errors printed before a logger exists. */
  name: string;
  /** Loads the config (and whatever else the process needs before it starts). @default loadConfig */
  load?: (options: { configPath: string; dataDir?: string }) => Promise<Loaded>;
  run: (options: ProcessRunOptions<Loaded>) => Promise<void>;
}

/**
 * The body of `apps/{server,worker}/src/main.ts`: `node main.ts --config FILE [--data DIR]` (or ASSISTANT_CONFIG
 * and ASSISTANT_DATA) loads the config, creates the logger, and runs until a signal. Sets `process.exitCode` to
 * 2 for a bad command line or config and 1 for anything that broke while running, the CLI's convention.
 */
export async function runProcessMain<Loaded extends LoadedProcessConfig = LoadedProcessConfig>(
  options: ProcessMainOptions<Loaded>,
): Promise<void> {
  // Belt and braces behind the explicit 0600/0700 modes at every write: anything this process or its children create
  // (a handler that forgets a mode, a script's output) is the owner's alone. Data holds mail and transcripts.
  process.umask(0o077);
  let logger: Logger | undefined;
  const stop = (signal: NodeJS.Signals) => {
    // A Ctrl-C reaches us from the terminal and again from `assistant start`; the repeat must not cut the
    // graceful close short.
    if (controller.signal.aborted) return;
    logger?.info(`${signal} received`);
    controller.abort(signal);
  };
  const controller = new AbortController();
  // Listen before loading anything, so a signal during startup is a clean stop rather than Node's default kill.
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
  try {
    const { values } = parseArgs({
      options: { config: { type: 'string' }, data: { type: 'string' } },
      allowPositionals: false,
    });
    const configPath = values.config ?? process.env.ASSISTANT_CONFIG ?? 'config.yaml';
    const dataDir = values.data ?? process.env.ASSISTANT_DATA;
    const load = options.load ?? ((loadOptions) => loadConfig(loadOptions) as Promise<unknown> as Promise<Loaded>);
    const loaded = await load({ configPath, ...(dataDir ? { dataDir } : {}) });
    const { config, warnings } = loaded;
    logger = await createLogger({ name: options.name });
    // `assistant start` has printed the warnings once already; two children repeating them is noise.
    if (process.env.ASSISTANT_CONFIG_CHECKED !== '1') {
      for (const warning of warnings) logger.warn(formatProblem(warning));
    }
    if (controller.signal.aborted) return;
    // Silent for a whole lease, a worker is gone to the queue too; never less than 10 s, for a loaded machine's pauses.
    beatForSupervisor({ silenceLimitMs: Math.max(config.queue.leaseMs, 10_000) });
    await options.run({ loaded, config, logger, signal: controller.signal });
  } catch (error) {
    const usage =
      isAssistantError(error, 'USAGE') ||
      isAssistantError(error, 'CONFIG_INVALID') ||
      isAssistantError(error, 'CONFIG_NOT_FOUND') ||
      isAssistantError(error, 'MANIFEST_INVALID') ||
      (error instanceof Error && 'code' in error && error.code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION');
    process.exitCode = usage ? 2 : 1;
    const message = error instanceof Error ? error.message : String(error);
    const hint = isAssistantError(error) && error.hint ? `\nhint: ${error.hint}` : '';
    // An AssistantError was raised on purpose and says what to do: its message and hint, not a stack. Anything else
    // is a bug, and the stack is what a bug report needs.
    if (logger && isAssistantError(error)) logger.fatal({ code: error.code }, `${message}${hint}`);
    else if (logger) logger.fatal({ err: error }, message);
    else process.stderr.write(scrubSecrets(`${options.name}: ${message}${hint}\n`));
  } finally {
    process.off('SIGINT', stop);
    process.off('SIGTERM', stop);
  }
}
