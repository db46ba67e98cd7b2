// The worker process: `node apps/worker/src/main.ts --config FILE [--data DIR]` (or ASSISTANT_CONFIG and
// ASSISTANT_DATA). `assistant start` runs it as a child; `assistant work` runs the same code in-process.

import { leanStart } from '@assistant/process/lean-start';

// Before anything else loads: the process restarts with the heap flags and its TypeScript from the stripped cache,
// which then covers the modules imported below (@assistant/process's lean-start.ts).
leanStart();

const [{ loadRuntime }, { exitAfterShutdownGrace, installation, runProcessMain }, { runWorker }] = await Promise.all([
  import('@assistant/integration-host'),
  import('@assistant/process'),
  import('./run-worker.ts'),
]);

await runProcessMain({
  name: 'worker',
  load: (options) => loadRuntime({ ...options, installation }),
  run: async ({ loaded, config, logger, signal }) => {
    // Whatever a handler does with its signal, SIGTERM ends this process within the grace period (plus a margin).
    exitAfterShutdownGrace({ signal, graceMs: config.worker.shutdownGraceMs, logger });
    await runWorker({ config, logger, signal, registry: loaded.registry, hooks: loaded.hooks });
  },
});
