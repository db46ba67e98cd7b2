import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { type LoadConfigResult, type LoadedConfig, loadConfig, yamlLimitProblem } from '@assistant/config';
import { parseDocument } from 'yaml';
import { automationChecks } from './automations/platform-automations.ts';
import {
  type DiscoveredIntegration,
  discoverIntegrations,
  unlistedPackageIntegrations,
} from './discover-integrations.ts';
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
 * checked. Integrations come from the builtin folder, `integration_dirs` in config.yaml, and the npm packages listed in
 * `integration_packages`, installed beside config.yaml or beside Assistant (an unlisted package is never loaded). Throws ManifestError or ConfigError listing every problem.
 */
export async function loadRuntime(options: LoadRuntimeOptions): Promise<LoadedRuntime> {
  const cwd = options.cwd ?? process.cwd();
  const configFile = path.resolve(cwd, options.configPath);
  const configDir = path.dirname(configFile);
  // The custom folders are named in the very file their manifests help validate: read that one key first. A file
  // that does not parse yields none here, and loadConfig below reports it properly.
  const customDirs = (await topLevelListOf(configFile, 'integration_dirs')).map((directory) =>
    path.resolve(configDir, directory),
  );
  const packages = await topLevelListOf(configFile, 'integration_packages');
  const nodeModulesDirs = integrationNodeModulesDirs(configFile);
  const integrations = await discoverIntegrations({
    customDirs,
    packages,
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

/** Where `integration_packages` are looked up: node_modules next to config.yaml, then Assistant's own. */
function integrationNodeModulesDirs(configFile: string): string[] {
  return [...new Set([path.join(path.dirname(configFile), 'node_modules'), installationNodeModules])];
}

/** npm packages that declare an integration but that config.yaml does not list (so they are not loaded). */
export async function ignoredPackageIntegrations(config: {
  paths: { configFile: string };
  integrationPackages: readonly string[];
}): Promise<string[]> {
  return unlistedPackageIntegrations({
    nodeModulesDirs: integrationNodeModulesDirs(config.paths.configFile),
    listed: config.integrationPackages,
  });
}

/** A top-level list of strings in config.yaml, read before the file is validated. */
async function topLevelListOf(configFile: string, key: 'integration_dirs' | 'integration_packages'): Promise<string[]> {
  let text: string;
  try {
    text = await readFile(configFile, 'utf8');
  } catch {
    return [];
  }
  // A file past the size, value or nesting limits is refused by loadConfig, before the parser is let near it.
  if (yamlLimitProblem(text) !== undefined) return [];
  try {
    const value: unknown = parseDocument(text, { prettyErrors: false }).get(key);
    const list = (value as { toJSON?: () => unknown } | undefined)?.toJSON?.();
    return Array.isArray(list) ? list.filter((item): item is string => typeof item === 'string' && item !== '') : [];
  } catch {
    return [];
  }
}
