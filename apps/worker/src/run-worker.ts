import type { LoadedConfig } from '@assistant/config';
import type { Logger } from 'pino';
import { ensureDataDirectories } from './data-directories.ts';

export interface RunWorkerOptions {
  config: LoadedConfig;
  logger: Logger;
  /** Aborting it stops the worker. */
  signal: AbortSignal;
}

/**
 * Prepares the data directories and waits for work. There is no queue engine yet, so "waiting" is all it
 * does; the queue issue replaces the idle wait with claiming and running tasks.
 */
export async function runWorker(options: RunWorkerOptions): Promise<void> {
  const { config, logger, signal } = options;
  await ensureDataDirectories({ paths: config.paths });
  logger.info({ dataDir: config.paths.dataDir }, 'worker ready, idle (queue engine arrives with the queue issue)');
  // An abort listener does not keep Node's event loop alive, so without this timer the process would exit at
  // once. The queue engine's watcher and poll timer take over this job.
  const keepAlive = setInterval(() => {}, 1_000_000_000);
  try {
    if (!signal.aborted) {
      await new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
    }
  } finally {
    clearInterval(keepAlive);
  }
  logger.info('stopped');
}
