import type { LoadedConfig } from '@assistant/config';
import { assistantVersion } from '@assistant/process';
import { TaskQueue, type TaskState, taskStates } from '@assistant/queue';
import type { AssistantServer } from './create-server.ts';

export interface HealthBody {
  status: 'ok';
  version: string;
  /** Tasks per state, counted from file names the way `assistant queue stats` counts them. */
  queue: Record<TaskState, number>;
}

export function registerHealthRoute(app: AssistantServer, config: LoadedConfig): void {
  let queue: TaskQueue | undefined;
  // Opened once as the server gets ready, so a queue directory it cannot create fails the start, not each request.
  app.addHook('onReady', async () => {
    queue = await TaskQueue.open({ directory: config.paths.queue, settings: config.queue });
  });
  app.get('/health', async (): Promise<HealthBody> => {
    if (!queue) throw new Error('the queue is opened when the server gets ready');
    const opened = queue;
    // Names only, never file contents: cheap enough to poll. The same rules as the queue's own listings, so a
    // quarantine note (`.error.txt`) or an editor's swap file is never counted as a task.
    const counts = await Promise.all(taskStates.map(async (state) => (await opened.entries(state)).length));
    return {
      status: 'ok',
      version: assistantVersion,
      queue: { pending: counts[0] ?? 0, active: counts[1] ?? 0, done: counts[2] ?? 0, failed: counts[3] ?? 0 },
    };
  });
}
