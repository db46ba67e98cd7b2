import type { CliContext } from '../cli-context.ts';
import type { GlobalOptions } from '../global-options.ts';
import { loadCliConfig } from '../load-cli-config.ts';

export interface TokenCommandOptions {
  globals: GlobalOptions;
  context: CliContext;
  /** Print where the token is kept instead of the token. */
  path?: boolean;
}

/**
 * Prints the API token (`server.token`, else data/api-token, created now if the server never ran), so that
 * `curl -H "authorization: Bearer $(assistant token)"` works. The CLI's other commands work on files directly.
 */
export async function tokenCommand(options: TokenCommandOptions): Promise<void> {
  const { config } = await loadCliConfig(options);
  const { resolveApiToken } = await import('@assistant/server');
  const token = await resolveApiToken({ config });
  if (token.warning) options.context.stderr.write(`warning: ${token.warning}\n`);
  options.context.stdout.write(`${options.path ? token.file : token.value}\n`);
}
