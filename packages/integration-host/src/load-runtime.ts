import path from 'node:path';
import { automationChecks } from '@assistant/automations';
import {
  ConfigError,
  type LoadConfigResult,
  type LoadedConfig,
  loadConfig,
  readConfigFile,
  yamlLimitProblem,
} from '@assistant/config';
import { EventRegistry } from '@assistant/events';
import {
  type CompiledHook,
  type HookEventRegistry,
  type HookProblem,
  hookCatalog,
  hookConfigProblems,
  loadHooks,
} from '@assistant/hooks';
import { type DiscoveredIntegration, discoverIntegrations, unlistedPackageIntegrations } from '@assistant/manifests';
import { parseDocument } from 'yaml';
import { IntegrationRegistry, integrationConfigSchemas } from './integration-registry.ts';

export interface LoadRuntimeOptions {
  /** Path to config.yaml. Relative paths resolve against `cwd`. */
  configPath: string;
  /** Overrides `data_dir` (the `--data` flag). */
  dataDir?: string;
  /** @default process.cwd() */
  cwd?: string;
  /** Where this installation keeps its builtin integrations and its own node_modules: the application decides. */
  installation: Installation;
  /**
   * The event types hooks may name (the ledger's registry: built-in types and those the manifests declare), made
   * from the integrations found. @default the ledger's registry of @assistant/events (`eventRegistryOf`)
   */
  eventRegistry?: (integrations: readonly DiscoveredIntegration[]) => HookEventRegistry;
}

/** The places of an installation the runtime cannot know itself: apps compute them once, tests pass their own. */
export interface Installation {
  /** The folder that holds the builtin integrations, one folder each. */
  builtinIntegrationsDir: string;
  /** The node_modules folder Assistant is installed with: `integration_packages` are looked up there too. */
  nodeModulesDir: string;
}

export interface LoadedRuntime {
  config: LoadedConfig;
  warnings: LoadConfigResult['warnings'];
  integrations: DiscoveredIntegration[];
  registry: IntegrationRegistry;
  /** The hooks of `hooks/*.yaml` beside config.yaml and config.yaml's `hooks:`, compiled; every one loaded. */
  hooks: CompiledHook[];
}

/**
 * Finds the integrations, then loads config.yaml with their manifests' schemas, so every key of every instance is
 * checked. Integrations come from the builtin folder, `integration_dirs` in config.yaml, and the npm packages listed in
 * `integration_packages`, installed beside config.yaml or beside Assistant (an unlisted package is never loaded). Throws ManifestError or ConfigError listing every problem.
 */
export async function loadRuntime(options: LoadRuntimeOptions): Promise<LoadedRuntime> {
  const cwd = options.cwd ?? process.cwd();
  const configFile = path.resolve(cwd, options.configPath);
  const configDir = path.dirname(configFile);
  // The custom folders and packages are named in the very file their manifests help validate: read those two keys
  // first. A file that cannot be read or parsed yields none here, and loadConfig below reports it properly.
  const lists = await integrationLists(configFile);
  const customDirs = lists.integration_dirs.map((directory) => path.resolve(configDir, directory));
  const packages = lists.integration_packages;
  const nodeModulesDirs = integrationNodeModulesDirs(configFile, options.installation);
  const integrations = await discoverIntegrations({
    customDirs,
    packages,
    nodeModulesDirs,
    cwd,
    builtinDir: options.installation.builtinIntegrationsDir,
  });
  const { config, warnings } = await loadConfig({
    configPath: options.configPath,
    cwd,
    integrationTypes: integrationConfigSchemas(integrations),
    check: automationChecks(integrations),
    ...(options.dataDir === undefined ? {} : { dataDir: options.dataDir }),
  });
  // A hook with a problem is a config error like any other: `config check` lists it with file, line and key, and
  // nothing starts, rather than a hook that loads and never fires.
  const loaded = await loadHooks({
    configDir,
    config,
    registry: options.eventRegistry?.(integrations) ?? eventRegistryOf(integrations),
    catalog: hookCatalog({ config, integrations }),
  });
  warnings.push(...loaded.warnings.map((warning) => ({ ...warning, file: shownFile(warning.file, configDir, cwd) })));
  if (loaded.problems.length > 0) {
    throw new ConfigError(
      hookConfigProblems(loaded.problems.map((problem) => shownFrom(problem, configDir, cwd))),
      warnings,
    );
  }
  return {
    config,
    warnings,
    integrations,
    registry: new IntegrationRegistry({ integrations, config, hooks: loaded.hooks }),
    hooks: loaded.hooks,
  };
}

/** The ledger's event types: the built-in ones and those the integrations' manifests declare (`{domain}.{name}`). */
function eventRegistryOf(integrations: readonly DiscoveredIntegration[]): EventRegistry {
  return EventRegistry.withManifests(
    integrations.map((integration) => ({ name: integration.manifest.domain, events: integration.manifest.events })),
  );
}

/** A hook problem's file as config.yaml's own problems show theirs: relative to where Assistant was started. */
function shownFrom(problem: HookProblem, configDir: string, cwd: string): HookProblem {
  return { ...problem, file: shownFile(problem.file, configDir, cwd) };
}

function shownFile(file: string, configDir: string, cwd: string): string {
  const relative = path.relative(cwd, path.join(configDir, file));
  return relative.startsWith('..') || path.isAbsolute(relative) ? path.join(configDir, file) : relative;
}

/** Where `integration_packages` are looked up: node_modules next to config.yaml, then Assistant's own. */
function integrationNodeModulesDirs(configFile: string, installation: Installation): string[] {
  return [...new Set([path.join(path.dirname(configFile), 'node_modules'), installation.nodeModulesDir])];
}

/** npm packages that declare an integration but that config.yaml does not list (so they are not loaded). */
export async function ignoredPackageIntegrations(
  config: { paths: { configFile: string }; integrationPackages: readonly string[] },
  installation: Installation,
): Promise<string[]> {
  return unlistedPackageIntegrations({
    nodeModulesDirs: integrationNodeModulesDirs(config.paths.configFile, installation),
    listed: config.integrationPackages,
  });
}

type IntegrationListKey = 'integration_dirs' | 'integration_packages';

/**
 * The top-level `integration_dirs` and `integration_packages` of config.yaml, read before the file is validated:
 * one read, capped at the config size limit, and one parse. Empty lists when the file cannot be read or parsed.
 */
async function integrationLists(configFile: string): Promise<Record<IntegrationListKey, string[]>> {
  const none = { integration_dirs: [], integration_packages: [] };
  let text: string;
  try {
    text = await readConfigFile(configFile);
  } catch {
    return none;
  }
  // A file past the size, value or nesting limits is refused by loadConfig, before the parser is let near it.
  if (yamlLimitProblem(text) !== undefined) return none;
  try {
    // Duplicate keys are loadConfig's to report; the parser's own check is quadratic in a mapping's size.
    const document = parseDocument(text, { prettyErrors: false, uniqueKeys: false });
    const listOf = (key: IntegrationListKey): string[] => {
      const list = (document.get(key) as { toJSON?: () => unknown } | undefined)?.toJSON?.();
      return Array.isArray(list) ? list.filter((item): item is string => typeof item === 'string' && item !== '') : [];
    };
    return { integration_dirs: listOf('integration_dirs'), integration_packages: listOf('integration_packages') };
  } catch {
    return none;
  }
}
