import type { LoadedConfig } from '@assistant/config';
import { assistantVersion } from '@assistant/process';
import { type CountedQueueState, countQueueFiles } from './count-queue-files.ts';
import type { AssistantServer } from './create-server.ts';

export interface HealthBody {
  status: 'ok';
  version: string;
  queue: Record<CountedQueueState, number>;
}

export function registerHealthRoute(app: AssistantServer, config: LoadedConfig): void {
  app.get(
    '/health',
    async (): Promise<HealthBody> => ({
      status: 'ok',
      version: assistantVersion,
      queue: await countQueueFiles({ queueDir: config.paths.queue }),
    }),
  );
}
