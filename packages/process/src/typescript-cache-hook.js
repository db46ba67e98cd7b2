// Loaded with `--import` before anything else in a process that stays up (lean-start.ts puts it on the command line
// of the process it restarts as): every TypeScript file that process loads, the entry point included, comes stripped
// from typescript-cache.js instead of through Node's stripper and compile cache (decision 0083).
import { strippedTypeScript } from './typescript-cache.js';

const module = process.getBuiltinModule('node:module');

/** What a TypeScript file is once stripped. */
const stripped = { 'module-typescript': 'module', 'commonjs-typescript': 'commonjs' };

module.registerHooks({
  load(url, context, nextLoad) {
    const loaded = nextLoad(url, context);
    const format = stripped[loaded.format];
    // Node refuses to strip TypeScript inside node_modules (ERR_UNSUPPORTED_NODE_MODULES_TYPE_STRIPPING): so does this.
    if (format === undefined || loaded.source === undefined || loaded.source === null || url.includes('/node_modules/'))
      return loaded;
    const source = typeof loaded.source === 'string' ? loaded.source : Buffer.from(loaded.source).toString('utf8');
    return { format, source: strippedTypeScript(url, source).code, shortCircuit: true };
  },
});
