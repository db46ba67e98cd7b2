// The worker process: `node apps/worker/src/main.ts --config FILE [--data DIR]` (or ASSISTANT_CONFIG and
// ASSISTANT_DATA). `assistant start` runs it as a child; `assistant work` runs the same code in-process.
import { runProcessMain } from '@assistant/process';
import { loadRuntime } from '@assistant/runtime';
import { runWorker } from './run-worker.ts';

await runProcessMain({
  name: 'worker',
  load: loadRuntime,
  run: ({ loaded, config, logger, signal }) => runWorker({ config, logger, signal, registry: loaded.registry }),
});
