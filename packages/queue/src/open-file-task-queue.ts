import { FileTaskQueue, type FileTaskQueueOptions } from './file-task-queue.ts';
import type { TaskQueue } from './interfaces.ts';

export type { FileTaskQueueOptions };

/**
 * Opens the file backend at `options.directory` (`data/queue`), creating its directories when missing. What comes
 * back is the {@link TaskQueue} interface: its files are the backend's business.
 */
export function openFileTaskQueue(options: FileTaskQueueOptions): Promise<TaskQueue> {
  return FileTaskQueue.open(options);
}
