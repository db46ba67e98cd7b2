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

// Every queue a command opened, closed when the command is done: a Redis backend's connections would otherwise keep
// the process alive after its output.
const openedQueues = new Set<TaskQueue>();

/** Opens the configured queue for a command and closes it when the command line is done (see closeCliQueues). */
export async function openCommandQueue(options: {
  config: LoadedConfig;
  context: CliContext;
  backend?: LoadedConfig['queue']['backend'];
}): Promise<TaskQueue> {
  const { config } = options;
  const queue = await openQueue({
    config:
      options.backend === undefined ? config : { ...config, queue: { ...config.queue, backend: options.backend } },
    logger: { info() {}, warn: (message) => options.context.stderr.write(`warning: ${message}\n`) },
  });
  openedQueues.add(queue);
  return queue;
}

/** Closes what commands opened; runCli calls it after every command line. */
export async function closeCliQueues(): Promise<void> {
  const queues = [...openedQueues];
  openedQueues.clear();
  await Promise.allSettled(queues.map((queue) => queue.close()));
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
  const queue = await openCommandQueue({ config, context: options.context });
  return { queue, registry, config };
}

/** JSON for `--json`: two-space indented, one trailing newline. */
export function writeJson(context: CliContext, value: unknown): void {
  context.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
}
