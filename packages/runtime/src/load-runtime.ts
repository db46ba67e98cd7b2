import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { type LoadConfigResult, type LoadedConfig, loadConfig, yamlLimitProblem } from '@assistant/config';
import { parseDocument } from 'yaml';
import { automationChecks } from './automations/platform-automations.ts';
import { type DiscoveredIntegration, discoverIntegrations } from './discover-integrations.ts';
import { IntegrationRegistry, integrationConfigSchemas } from './integration-registry.ts';

export interface LoadRuntimeOptions {
  /** Path to config.yaml. Relative paths resolve against `cwd`. */
  configPath: string;
  /** Overrides `data_dir` (the `--data` flag). */
  dataDir?: string;
  /** @default process.cwd() */
  cwd?: string;
  /** @default the repository's `integrations/` folder */
  builtinDir?: string;
}

export interface LoadedRuntime {
  config: LoadedConfig;
  warnings: LoadConfigResult['warnings'];
  integrations: DiscoveredIntegration[];
  registry: IntegrationRegistry;
}

/** The node_modules folder Assistant itself is installed with. */
const installationNodeModules = fileURLToPath(new URL('../../../node_modules/', import.meta.url));

/**
 * Finds the integrations, then loads config.yaml with their manifests' schemas, so every key of every instance is
 * checked. Integrations come from the builtin folder, `integration_dirs` in config.yaml, and npm packages installed
 * beside config.yaml or beside Assistant. Throws ManifestError or ConfigError listing every problem.
 */
export async function loadRuntime(options: LoadRuntimeOptions): Promise<LoadedRuntime> {
  const cwd = options.cwd ?? process.cwd();
  const configFile = path.resolve(cwd, options.configPath);
  const configDir = path.dirname(configFile);
  // The custom folders are named in the very file their manifests help validate: read that one key first. A file
  // that does not parse yields none here, and loadConfig below reports it properly.
  const customDirs = (await integrationDirsOf(configFile)).map((directory) => path.resolve(configDir, directory));
  const nodeModulesDirs = [...new Set([path.join(configDir, 'node_modules'), installationNodeModules])];
  const integrations = await discoverIntegrations({
    customDirs,
    nodeModulesDirs,
    cwd,
    ...(options.builtinDir === undefined ? {} : { builtinDir: options.builtinDir }),
  });
  const { config, warnings } = await loadConfig({
    configPath: options.configPath,
    cwd,
    integrationTypes: integrationConfigSchemas(integrations),
    check: automationChecks(integrations),
    ...(options.dataDir === undefined ? {} : { dataDir: options.dataDir }),
  });
  return { config, warnings, integrations, registry: new IntegrationRegistry({ integrations, config }) };
}

async function integrationDirsOf(configFile: string): Promise<string[]> {
  let text: string;
  try {
    text = await readFile(configFile, 'utf8');
  } catch {
    return [];
  }
  // A file past the size, value or nesting limits is refused by loadConfig, before the parser is let near it.
  if (yamlLimitProblem(text) !== undefined) return [];
  try {
    const value: unknown = parseDocument(text, { prettyErrors: false }).get('integration_dirs');
    const list = (value as { toJSON?: () => unknown } | undefined)?.toJSON?.();
    return Array.isArray(list) ? list.filter((item): item is string => typeof item === 'string' && item !== '') : [];
  } catch {
    return [];
  }
}
