import type { LoadedConfig } from '@assistant/config';
import type { IntegrationRegistry } from '@assistant/integration-host';
import { openQueue } from '@assistant/process';
import type { TaskQueue } from '@assistant/queue';
import type { CliContext } from './cli-context.ts';
import type { GlobalOptions } from './global-options.ts';
import { loadCliConfig } from './load-cli-config.ts';

export interface OpenCliQueueOptions {
  globals: GlobalOptions;
  context: CliContext;
}

/** The queue of the configured data directory, its warnings going to stderr (info stays quiet in a command). */
export async function openCliQueue(options: OpenCliQueueOptions): Promise<TaskQueue> {
  return (await openCliRuntime(options)).queue;
}

/** The queue, the integration registry and the config, for commands that enqueue. */
export async function openCliRuntime(
  options: OpenCliQueueOptions,
): Promise<{ queue: TaskQueue; registry: IntegrationRegistry; config: LoadedConfig }> {
  const { config, registry } = await loadCliConfig(options);
  const queue = await openQueue({
    config,
    logger: { info() {}, warn: (message) => options.context.stderr.write(`warning: ${message}\n`) },
  });
  return { queue, registry, config };
}

/** JSON for `--json`: two-space indented, one trailing newline. */
export function writeJson(context: CliContext, value: unknown): void {
  context.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
}
