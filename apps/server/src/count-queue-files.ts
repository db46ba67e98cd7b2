import { readdir } from 'node:fs/promises';
import path from 'node:path';

/** The queue states /health reports; `tmp/` holds files that are not tasks yet, so it is not counted. */
export const countedQueueStates = ['pending', 'active', 'done', 'failed'] as const;
export type CountedQueueState = (typeof countedQueueStates)[number];

export interface CountQueueFilesOptions {
  /** The queue directory (`config.paths.queue`). */
  queueDir: string;
}

/**
 * Counts task files (`*.yaml`) in each state directory. A missing directory counts as empty: a fresh install
 * has no queue yet until the worker first starts.
 */
export async function countQueueFiles(options: CountQueueFilesOptions): Promise<Record<CountedQueueState, number>> {
  const counts = await Promise.all(
    countedQueueStates.map(async (state) => {
      try {
        const entries = await readdir(path.join(options.queueDir, state), { withFileTypes: true });
        return entries.filter((entry) => entry.isFile() && entry.name.endsWith('.yaml')).length;
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'ENOENT') return 0;
        throw error;
      }
    }),
  );
  return {
    pending: counts[0] ?? 0,
    active: counts[1] ?? 0,
    done: counts[2] ?? 0,
    failed: counts[3] ?? 0,
  };
}
