import { formatProblem, type LoadConfigResult, loadConfig } from '@assistant/config';
import type { CliContext } from './cli-context.ts';
import type { GlobalOptions } from './global-options.ts';

export interface LoadCliConfigOptions {
  globals: GlobalOptions;
  context: CliContext;
}

/** Loads the config named on the command line and prints its warnings to stderr, one per problem. */
export async function loadCliConfig(options: LoadCliConfigOptions): Promise<LoadConfigResult> {
  const { globals, context } = options;
  const result = await loadConfig({
    configPath: globals.configPath,
    cwd: context.cwd,
    ...(globals.dataDir === undefined ? {} : { dataDir: globals.dataDir }),
  });
  printWarnings(context, result.warnings);
  return result;
}

export function printWarnings(context: CliContext, warnings: LoadConfigResult['warnings']): void {
  for (const warning of warnings) context.stderr.write(`warning: ${formatProblem(warning)}\n`);
}
