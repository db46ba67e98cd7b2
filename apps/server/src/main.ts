// The server process: `node apps/server/src/main.ts --config FILE [--data DIR]` (or ASSISTANT_CONFIG and
// ASSISTANT_DATA). `assistant start` runs it as a child; `assistant serve` runs the same code in-process.
import { parseArgs } from 'node:util';
import { formatProblem, loadConfig } from '@assistant/config';
import { isAssistantError } from '@assistant/errors';
import type { Logger } from 'pino';
import { createLogger } from './create-logger.ts';
import { runServer } from './run-server.ts';

let logger: Logger | undefined;
try {
  const { values } = parseArgs({
    options: { config: { type: 'string' }, data: { type: 'string' } },
    allowPositionals: false,
  });
  const configPath = values.config ?? process.env.ASSISTANT_CONFIG ?? 'config.yaml';
  const dataDir = values.data ?? process.env.ASSISTANT_DATA;
  const { config, warnings } = await loadConfig({ configPath, ...(dataDir ? { dataDir } : {}) });
  logger = await createLogger({ name: 'server' });
  // `assistant start` has printed the warnings once already; two children repeating them is noise.
  if (process.env.ASSISTANT_CONFIG_CHECKED !== '1') {
    for (const warning of warnings) logger.warn(formatProblem(warning));
  }
  const controller = new AbortController();
  const stop = (signal: NodeJS.Signals) => {
    // A Ctrl-C reaches us from the terminal and again from `assistant start`; the repeat must not cut the
    // graceful close short.
    if (controller.signal.aborted) return;
    logger?.info(`${signal} received`);
    controller.abort(signal);
  };
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
  await runServer({ config, logger, signal: controller.signal });
} catch (error) {
  // Same convention as the CLI: 2 for a bad command line or config, 1 for anything that broke while running.
  const usage =
    isAssistantError(error, 'USAGE') ||
    isAssistantError(error, 'CONFIG_INVALID') ||
    isAssistantError(error, 'CONFIG_NOT_FOUND') ||
    (error as { code?: unknown }).code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION';
  process.exitCode = usage ? 2 : 1;
  const message = error instanceof Error ? error.message : String(error);
  const hint = isAssistantError(error) && error.hint ? `\nhint: ${error.hint}` : '';
  if (logger) logger.fatal({ err: error }, message);
  else process.stderr.write(`server: ${message}${hint}\n`);
}
