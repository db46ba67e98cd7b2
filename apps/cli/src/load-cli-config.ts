import { ConfigError, formatProblem, type LoadConfigResult } from '@assistant/config';
import { type LoadedRuntime, loadRuntime } from '@assistant/integration-host/load-runtime';
import { installation } from '@assistant/process';
import type { CliContext } from './cli-context.ts';
import type { GlobalOptions } from './global-options.ts';

export interface LoadCliConfigOptions {
  globals: GlobalOptions;
  context: CliContext;
}

/**
 * Loads the config named on the command line, with the schemas of every integration found, and prints its
 * warnings to stderr, one per problem.
 */
export async function loadCliConfig(options: LoadCliConfigOptions): Promise<LoadedRuntime> {
  const { globals, context } = options;
  const result = await loadRuntime({
    configPath: globals.configPath,
    cwd: context.cwd,
    installation,
    ...(globals.dataDir === undefined ? {} : { dataDir: globals.dataDir }),
  });
  printWarnings(context, result.warnings);
  return result;
}

function printWarnings(context: CliContext, warnings: LoadConfigResult['warnings']): void {
  for (const warning of warnings) context.stderr.write(`warning: ${formatProblem(warning)}\n`);
}

/**
 * `assistant config check`'s checks (the shared `checkConfig`, which the dashboard's Config page runs too): the
 * config loaded as above, then every handler, listener and webhook module imported. Prints the warnings; throws the
 * error that makes the config unusable.
 */
export async function checkCliConfig(options: LoadCliConfigOptions): Promise<LoadedRuntime> {
  const { globals, context } = options;
  // The full check (agents, personas, every handler module) loads most of the packages: only this command pays for it.
  const { checkConfig } = await import('@assistant/integration-host');
  const check = await checkConfig({
    configPath: globals.configPath,
    cwd: context.cwd,
    installation,
    ...(globals.dataDir === undefined ? {} : { dataDir: globals.dataDir }),
  });
  // A ConfigError carries its warnings itself, and the error printer shows them.
  if (!(check.error instanceof ConfigError)) printWarnings(context, check.warnings);
  if (check.runtime === undefined) throw check.error;
  // Persona problems do not stop `assistant start`, but the check is for every file the owner wrote. The warnings
  // were printed above: the error carries none, so they are not printed twice.
  if (check.personaProblems.length > 0) throw new ConfigError(check.personaProblems, []);
  return check.runtime;
}
