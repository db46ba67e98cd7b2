// The server process: `node apps/server/src/main.ts --config FILE [--data DIR]` (or ASSISTANT_CONFIG and
// ASSISTANT_DATA). `assistant start` runs it as a child; `assistant serve` runs the same code in-process.

import { leanStart } from '@assistant/process/lean-start';

// Before anything else loads: the process restarts with the heap flags and its TypeScript from the stripped cache,
// which then covers the modules imported below (@assistant/process's lean-start.ts).
leanStart();

const [
  { loadRuntime },
  { exitAfterShutdownGrace, installation, runProcessMain },
  { runServer },
  { serverShutdownGraceMs },
] = await Promise.all([
  import('@assistant/integration-host'),
  import('@assistant/process'),
  import('./run-server.ts'),
  import('./shutdown-grace.ts'),
]);

await runProcessMain({
  name: 'server',
  load: (options) => loadRuntime({ ...options, installation }),
  run: async ({ loaded, config, logger, signal }) => {
    // Whatever a listener or webhook handler does with its signal, SIGTERM ends this process within the server's
    // grace (plus a margin), before `assistant start` would kill it.
    exitAfterShutdownGrace({ signal, graceMs: serverShutdownGraceMs(config), logger });
    await runServer({ config, logger, signal, registry: loaded.registry, hooks: loaded.hooks });
  },
});
