// For the worker's tests: the runtime of `<dir>/config.yaml` (with the repo's builtin integrations) and its queue.
import path from 'node:path';
import { loadRuntime } from '@assistant/integration-host';
import { installation } from '@assistant/process';
import { openFileTaskQueue } from '@assistant/queue';

export async function loadTestRuntime(dir: string) {
  const { config, registry } = await loadRuntime({ installation, configPath: path.join(dir, 'config.yaml'), cwd: dir });
  const queue = await openFileTaskQueue({
    directory: config.paths.queue,
    dataDirectory: config.paths.dataDir,
    settings: config.queue,
  });
  return { config, registry, queue };
}
