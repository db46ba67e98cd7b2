// The worker process: `node apps/worker/src/main.ts --config FILE [--data DIR]` (or ASSISTANT_CONFIG and
// ASSISTANT_DATA). `assistant start` runs it as a child; `assistant work` runs the same code in-process.
import { exitAfterShutdownGrace, runProcessMain } from '@assistant/process';
import { loadRuntime } from '@assistant/runtime';
import { runWorker } from './run-worker.ts';

await runProcessMain({
  name: 'worker',
  load: loadRuntime,
  run: async ({ loaded, config, logger, signal }) => {
    // Whatever a handler does with its signal, SIGTERM ends this process within the grace period (plus a margin).
    exitAfterShutdownGrace({ signal, graceMs: config.worker.shutdownGraceMs, logger });
    await runWorker({ config, logger, signal, registry: loaded.registry });
  },
});
