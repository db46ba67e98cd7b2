import type { Command } from 'commander';
import * as z from 'zod';
import type { CliContext } from './cli-context.ts';

const globalOptionsSchema = z.object({
  config: z.string().min(1).optional(),
  data: z.string().min(1).optional(),
});

/** Where the config and data live, after flags and environment are weighed. */
export interface GlobalOptions {
  /** From --config, else ASSISTANT_CONFIG, else config.yaml in the working directory. */
  configPath: string;
  /** From --data, else ASSISTANT_DATA, else undefined (the config's `data_dir`). */
  dataDir: string | undefined;
}

/**
 * Reads --config and --data wherever they were written: commander accepts program options before and after
 * subcommands at any depth (`assistant config check --config x.yaml`), so they always land on the program.
 */
export function globalOptions(command: Command, context: CliContext): GlobalOptions {
  const parsed = globalOptionsSchema.parse(command.optsWithGlobals());
  return {
    configPath: parsed.config ?? nonEmpty(context.env.ASSISTANT_CONFIG) ?? 'config.yaml',
    dataDir: parsed.data ?? nonEmpty(context.env.ASSISTANT_DATA),
  };
}

function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value === '' ? undefined : value;
}
