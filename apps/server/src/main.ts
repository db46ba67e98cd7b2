// The server process: `node apps/server/src/main.ts --config FILE [--data DIR]` (or ASSISTANT_CONFIG and
// ASSISTANT_DATA). `assistant start` runs it as a child; `assistant serve` runs the same code in-process.

import { loadRuntime } from '@assistant/integration-host';
import { exitAfterShutdownGrace, installation, runProcessMain } from '@assistant/process';
import { runServer } from './run-server.ts';
import { serverShutdownGraceMs } from './shutdown-grace.ts';

await runProcessMain({
  name: 'server',
  load: (options) => loadRuntime({ ...options, installation }),
  run: async ({ loaded, config, logger, signal }) => {
    // Whatever a listener or webhook handler does with its signal, SIGTERM ends this process within the server's
    // grace (plus a margin), before `assistant start` would kill it.
    exitAfterShutdownGrace({ signal, graceMs: serverShutdownGraceMs(config), logger });
    await runServer({ config, logger, signal, registry: loaded.registry });
  },
});
