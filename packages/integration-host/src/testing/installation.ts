import { fileURLToPath } from 'node:url';
import type { Installation } from '../load-runtime.ts';

/** The repository's own builtin integrations and node_modules, which the apps pass to loadRuntime too. */
const root = new URL('../../../../', import.meta.url);

export const installation: Installation = {
  builtinIntegrationsDir: fileURLToPath(new URL('integrations/', root)),
  nodeModulesDir: fileURLToPath(new URL('node_modules/', root)),
};
