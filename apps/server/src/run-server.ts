import type { LoadedConfig } from '@assistant/config';
import type { Logger } from 'pino';
import { createServer } from './create-server.ts';

export interface RunServerOptions {
  config: LoadedConfig;
  logger: Logger;
  /** Aborting it closes the server gracefully: no new connections, in-flight requests finish. */
  signal: AbortSignal;
}

/** Listens on `server.host:server.port` and serves until `signal` aborts. Resolves once the server is closed. */
export async function runServer(options: RunServerOptions): Promise<void> {
  const { config, logger, signal } = options;
  const app = createServer({ config, logger });
  try {
    await app.listen({
      host: config.server.host,
      port: config.server.port,
      listenTextResolver: (address) => `listening on ${address}`,
    });
    if (!signal.aborted) {
      await new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
    }
    logger.info('stopping: closing connections');
  } finally {
    await app.close();
  }
  logger.info('stopped');
}
