import type { CliContext } from '../cli-context.ts';
import type { GlobalOptions } from '../global-options.ts';
import { listenForShutdown } from '../listen-for-shutdown.ts';
import { loadCliConfig } from '../load-cli-config.ts';

export interface ServeCommandOptions {
  globals: GlobalOptions;
  context: CliContext;
}

/** Runs the server in this process until SIGINT or SIGTERM. */
export async function serveCommand(options: ServeCommandOptions): Promise<void> {
  const { config, registry, hooks } = await loadCliConfig(options);
  // Imported here so that `assistant version` and friends do not pay for loading fastify.
  const [{ createLogger, exitAfterShutdownGrace }, { runServer, serverShutdownGraceMs }] = await Promise.all([
    import('@assistant/process'),
    import('@assistant/server'),
  ]);
  const logger = await createLogger({ name: 'server', env: options.context.env });
  // try/finally rather than `using`: the bin runs this on Node 22 too, which lacks explicit resource management.
  const shutdown = listenForShutdown({ onRepeat: (signal) => logger.info(`${signal} received; already stopping`) });
  // Whatever a listener or webhook handler does with its signal, SIGTERM ends this process within the server's
  // grace (plus a margin).
  const deadline = exitAfterShutdownGrace({ signal: shutdown.signal, graceMs: serverShutdownGraceMs(config), logger });
  try {
    shutdown.signal.addEventListener('abort', () => logger.info(`${String(shutdown.signal.reason)} received`), {
      once: true,
    });
    await runServer({ config, logger, signal: shutdown.signal, registry, hooks });
  } finally {
    deadline[Symbol.dispose]();
    shutdown[Symbol.dispose]();
  }
}
