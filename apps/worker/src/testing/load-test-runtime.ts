// For the worker's tests: the runtime of `<dir>/config.yaml` (with the repo's builtin integrations) and its queue.
import path from 'node:path';
import { loadRuntime } from '@assistant/integration-host';
import { installation, openQueue } from '@assistant/process';

export async function loadTestRuntime(dir: string) {
  const { config, registry } = await loadRuntime({ installation, configPath: path.join(dir, 'config.yaml'), cwd: dir });
  const queue = await openQueue({
    config,
  });
  return { config, registry, queue };
}
