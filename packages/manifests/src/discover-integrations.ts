import { readdir, readFile, realpath, stat } from 'node:fs/promises';
import path from 'node:path';
import { AssistantError } from '@assistant/errors';
import * as z from 'zod';
import type { Manifest } from './manifest-schema.ts';
import { ManifestError, type ManifestProblem, type ManifestSource, readManifest } from './read-manifest.ts';

/** Where an integration was found. */
export type IntegrationOrigin = 'builtin' | 'custom' | 'package';

export interface DiscoveredIntegration {
  manifest: Manifest;
  /** The manifest's real absolute path. */
  manifestPath: string;
  /** The manifest's path as errors show it. */
  shownPath: string;
  /** The folder that holds the manifest: handler paths resolve against it and may not leave it. */
  directory: string;
  origin: IntegrationOrigin;
  /** The npm package name, for integrations installed as packages. */
  packageName?: string;
  source: ManifestSource;
}

export interface DiscoverIntegrationsOptions {
  /** The folder of this installation's builtin integrations: the application says where it is. */
  builtinDir: string;
  /** `integration_dirs` from config.yaml, absolute: each holds integration folders, or is one. */
  customDirs?: readonly string[];
  /**
   * `integration_packages` from config.yaml: npm package names (`assistant-foo`, `@scope/bar`) whose package.json
   * declares `"assistant": {"manifest": "./manifest.yaml"}`. Only these are loaded: a package that merely sits in
   * node_modules (a transitive dependency, say) never becomes an integration, since its handlers would run with
   * the worker's access. A listed package that is missing or declares no manifest is a config error.
   * @default none
   */
  packages?: readonly string[];
  /** node_modules folders the listed packages are looked up in, first match wins. @default none */
  nodeModulesDirs?: readonly string[];
  /** Paths in errors are shown relative to this. @default process.cwd() */
  cwd?: string;
}

const packageJsonSchema = z.looseObject({
  name: z.string().optional(),
  assistant: z.looseObject({ manifest: z.string().optional() }).optional(),
});

/**
 * Finds every integration: the builtin folder, the custom folders named in config, and the npm packages config
 * lists in `integration_packages`. Reads and validates every manifest (handlers are loaded later, by the worker) and reports all
 * problems at once. The same manifest reached twice (a workspace package is also linked into node_modules) counts
 * once; two manifests claiming one domain are an error naming both.
 */
export async function discoverIntegrations(options: DiscoverIntegrationsOptions): Promise<DiscoveredIntegration[]> {
  const cwd = options.cwd ?? process.cwd();
  const shown = (file: string) => {
    const relative = path.relative(cwd, file);
    return relative.startsWith('..') || path.isAbsolute(relative) ? file : relative;
  };
  const candidates: { manifestPath: string; origin: IntegrationOrigin; packageName?: string }[] = [];
  for (const folder of await manifestFolders(options.builtinDir, false)) {
    candidates.push({ manifestPath: path.join(folder, 'manifest.yaml'), origin: 'builtin' });
  }
  for (const directory of options.customDirs ?? []) {
    const info = await stat(directory).catch(() => undefined);
    if (!info?.isDirectory()) {
      throw new AssistantError('CONFIG_INVALID', `integration_dirs: ${shown(directory)} is not a folder`, {
        hint: 'create it, or remove it from `integration_dirs` in config.yaml',
      });
    }
    for (const folder of await manifestFolders(directory, true)) {
      candidates.push({ manifestPath: path.join(folder, 'manifest.yaml'), origin: 'custom' });
    }
  }
  for (const name of options.packages ?? []) {
    candidates.push(await packageManifest(name, options.nodeModulesDirs ?? [], shown));
  }

  const problems: ManifestProblem[] = [];
  const found: DiscoveredIntegration[] = [];
  const seenPaths = new Set<string>();
  for (const candidate of candidates) {
    const real = await realpath(candidate.manifestPath).catch(() => candidate.manifestPath);
    if (seenPaths.has(real)) continue;
    seenPaths.add(real);
    const shownPath = shown(candidate.manifestPath);
    try {
      const { manifest, source } = await readManifest(real, shownPath);
      found.push({
        manifest,
        manifestPath: real,
        shownPath,
        directory: path.dirname(real),
        origin: candidate.origin,
        ...(candidate.packageName === undefined ? {} : { packageName: candidate.packageName }),
        source,
      });
    } catch (error) {
      if (error instanceof ManifestError) problems.push(...error.problems);
      else throw error;
    }
  }
  const byDomain = new Map<string, DiscoveredIntegration>();
  for (const integration of found) {
    const other = byDomain.get(integration.manifest.domain);
    if (other) {
      const position = integration.source.positionOf(['domain']);
      problems.push({
        file: integration.shownPath,
        line: position?.line,
        col: position?.col,
        path: ['domain'],
        message: `domain \`${integration.manifest.domain}\` is already provided by ${other.shownPath}`,
      });
    } else byDomain.set(integration.manifest.domain, integration);
  }
  if (problems.length > 0) throw new ManifestError(problems);
  // Domains are a-z, 0-9 and _ (identifierPattern): plain order, without localeCompare, which starts ICU's collation
  // data in every process (2 MB of an idle server, docs/performance.md).
  return found.sort((left, right) => (left.manifest.domain < right.manifest.domain ? -1 : 1));
}

/** A folder with manifest.yaml, or the folders inside it that have one. */
async function manifestFolders(directory: string, includeSelf: boolean): Promise<string[]> {
  if (includeSelf && (await isFile(path.join(directory, 'manifest.yaml')))) return [directory];
  let names: string[];
  try {
    names = await readdir(directory);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw error;
  }
  const folders: string[] = [];
  for (const name of names.sort()) {
    if (name.startsWith('.')) continue;
    const folder = path.join(directory, name);
    if (await isFile(path.join(folder, 'manifest.yaml'))) folders.push(folder);
  }
  return folders;
}

/** A valid npm package name, so a listed name cannot walk out of node_modules (`../x`). */
const packageNamePattern = /^(?:@[a-z0-9][a-z0-9._~-]*\/)?[a-z0-9][a-z0-9._~-]*$/i;

/** The manifest of a package listed in `integration_packages`, from the first node_modules folder that has it. */
async function packageManifest(
  name: string,
  nodeModulesDirs: readonly string[],
  shown: (file: string) => string,
): Promise<{ manifestPath: string; origin: IntegrationOrigin; packageName: string }> {
  if (!packageNamePattern.test(name)) {
    throw new AssistantError('CONFIG_INVALID', `integration_packages: \`${name}\` is not an npm package name`, {
      hint: 'list package names as in package.json: `assistant-foo` or `@scope/bar`',
    });
  }
  for (const nodeModules of nodeModulesDirs) {
    const packageDir = path.join(nodeModules, ...name.split('/'));
    let text: string;
    try {
      text = await readFile(path.join(packageDir, 'package.json'), 'utf8');
    } catch {
      continue;
    }
    let data: unknown;
    try {
      data = JSON.parse(text);
    } catch (error) {
      throw new AssistantError(
        'CONFIG_INVALID',
        `integration_packages: ${shown(path.join(packageDir, 'package.json'))} is not valid JSON: ${(error as Error).message}`,
      );
    }
    const checked = packageJsonSchema.safeParse(data);
    const manifest = checked.success ? checked.data.assistant?.manifest : undefined;
    if (manifest === undefined) {
      throw new AssistantError(
        'CONFIG_INVALID',
        `integration_packages: package \`${name}\` (${shown(packageDir)}) declares no manifest`,
        {
          hint: 'its package.json needs `"assistant": {"manifest": "./manifest.yaml"}`; or remove it from `integration_packages`',
        },
      );
    }
    const manifestPath = path.resolve(packageDir, manifest);
    // A package may only point inside itself.
    if (path.relative(packageDir, manifestPath).startsWith('..')) {
      throw new AssistantError(
        'CONFIG_INVALID',
        `integration_packages: package \`${name}\` names a manifest outside itself (${manifest})`,
      );
    }
    if (!(await isFile(manifestPath))) {
      throw new AssistantError(
        'CONFIG_INVALID',
        `integration_packages: package \`${name}\` declares the manifest ${manifest}, which does not exist`,
      );
    }
    return { manifestPath, origin: 'package', packageName: name };
  }
  throw new AssistantError('CONFIG_INVALID', `integration_packages: package \`${name}\` is not installed`, {
    hint: `looked in ${nodeModulesDirs.map(shown).join(', ') || 'no node_modules folder'}; run \`npm install ${name}\` next to config.yaml, or remove it from \`integration_packages\``,
  });
}

/**
 * Packages in these node_modules folders (scoped ones included) that declare a manifest but are not listed: they
 * are never loaded; `assistant doctor` names them, so an owner who expected one to load learns why it did not.
 */
export async function unlistedPackageIntegrations(options: {
  nodeModulesDirs: readonly string[];
  listed: readonly string[];
}): Promise<string[]> {
  const names = new Set<string>();
  for (const nodeModules of options.nodeModulesDirs) {
    const entries = await readdir(nodeModules).catch(() => [] as string[]);
    const packages: string[] = [];
    for (const entry of entries) {
      if (entry.startsWith('.')) continue;
      if (!entry.startsWith('@')) packages.push(entry);
      else {
        const scoped = await readdir(path.join(nodeModules, entry)).catch(() => [] as string[]);
        packages.push(...scoped.map((inner) => `${entry}/${inner}`));
      }
    }
    for (const name of packages) {
      if (options.listed.includes(name) || names.has(name)) continue;
      try {
        const text = await readFile(path.join(nodeModules, ...name.split('/'), 'package.json'), 'utf8');
        const checked = packageJsonSchema.safeParse(JSON.parse(text));
        if (checked.success && checked.data.assistant?.manifest !== undefined) names.add(name);
      } catch {
        // Not a package, or not one we can read: it is not loaded either way.
      }
    }
  }
  return [...names].sort();
}

async function isFile(file: string): Promise<boolean> {
  return (await stat(file).catch(() => undefined))?.isFile() ?? false;
}
