// The worker process: `node apps/worker/src/main.ts --config FILE [--data DIR]` (or ASSISTANT_CONFIG and
// ASSISTANT_DATA). `assistant start` runs it as a child; `assistant work` runs the same code in-process.

import { loadRuntime } from '@assistant/integration-host';
import { exitAfterShutdownGrace, installation, runProcessMain } from '@assistant/process';
import { favourSmallHeap } from './memory-flags.ts';
import { runWorker } from './run-worker.ts';

favourSmallHeap();

await runProcessMain({
  name: 'worker',
  load: (options) => loadRuntime({ ...options, installation }),
  run: async ({ loaded, config, logger, signal }) => {
    // Whatever a handler does with its signal, SIGTERM ends this process within the grace period (plus a margin).
    exitAfterShutdownGrace({ signal, graceMs: config.worker.shutdownGraceMs, logger });
    await runWorker({ config, logger, signal, registry: loaded.registry });
  },
});
