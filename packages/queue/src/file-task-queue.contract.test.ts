import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { openFileTaskQueue } from './open-file-task-queue.ts';
import { describeTaskQueueContract } from './testing/index.ts';

describeTaskQueueContract('file backend', async () => {
  const dataDirectory = await mkdtemp(path.join(os.tmpdir(), 'assistant-contract-'));
  return {
    open: (options = {}) =>
      openFileTaskQueue({
        directory: path.join(dataDirectory, 'queue'),
        dataDirectory,
        ...(options.settings ? { settings: options.settings } : {}),
        ...(options.leaseMs === undefined ? {} : { leaseMs: options.leaseMs }),
      }),
    cleanup: () => rm(dataDirectory, { recursive: true, force: true }),
  };
});
