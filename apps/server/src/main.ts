// The server process: `node apps/server/src/main.ts --config FILE [--data DIR]` (or ASSISTANT_CONFIG and
// ASSISTANT_DATA). `assistant start` runs it as a child; `assistant serve` runs the same code in-process.

import { loadRuntime } from '@assistant/integration-host';
import { installation, runProcessMain } from '@assistant/process';
import { runServer } from './run-server.ts';

await runProcessMain({
  name: 'server',
  load: (options) => loadRuntime({ ...options, installation }),
  run: ({ loaded, config, logger, signal }) => runServer({ config, logger, signal, registry: loaded.registry }),
});
