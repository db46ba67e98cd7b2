import type { LoadedConfig } from '@assistant/config';
import { isAssistantError } from '@assistant/errors';
import { openQueue } from '@assistant/process';
import type { DoctorCheck } from './doctor-check.ts';

/**
 * The queue config.yaml names can be opened and counted: for Redis, that it answers and takes the password; for
 * files, the data directories check says the rest.
 */
export async function checkQueue(config: LoadedConfig): Promise<DoctorCheck> {
  if (config.queue.backend === 'file') return { ok: true, message: `queue: files in ${config.paths.queue}` };
  const where = `${config.queue.redis.url} (prefix ${config.queue.redis.prefix})`;
  try {
    const queue = await openQueue({ config });
    try {
      const stats = await queue.stats();
      const alive = (await queue.workers.list()).filter((worker) => worker.alive).length;
      return {
        ok: true,
        message: `queue: Redis at ${where}: ${stats.pending} pending, ${stats.active} active, ${alive} worker${alive === 1 ? '' : 's'} alive`,
      };
    } finally {
      await queue.close();
    }
  } catch (error) {
    if (!isAssistantError(error)) throw error;
    return { ok: false, message: `queue: ${error.message}`, ...(error.hint ? { hint: error.hint } : {}) };
  }
}
