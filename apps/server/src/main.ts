// The server process: `node apps/server/src/main.ts --config FILE [--data DIR]` (or ASSISTANT_CONFIG and
// ASSISTANT_DATA). `assistant start` runs it as a child; `assistant serve` runs the same code in-process.
import { runProcessMain } from '@assistant/process';
import { loadRuntime } from '@assistant/runtime';
import { runServer } from './run-server.ts';

await runProcessMain({
  name: 'server',
  load: loadRuntime,
  run: ({ loaded, config, logger, signal }) => runServer({ config, logger, signal, registry: loaded.registry }),
});
