import { fileURLToPath } from 'node:url';

// The one place that knows how this installation is laid out: the repository root, three folders up from here (the
// root package.json, read by assistant-version.ts, is found the same way). The runtime never guesses these; every app
// passes them to loadRuntime and discoverIntegrations.
const root = new URL('../../../', import.meta.url);

/** Where this installation keeps its builtin integrations and the node_modules it is installed with. */
export const installation: { builtinIntegrationsDir: string; nodeModulesDir: string } = {
  builtinIntegrationsDir: fileURLToPath(new URL('integrations/', root)),
  nodeModulesDir: fileURLToPath(new URL('node_modules/', root)),
};
