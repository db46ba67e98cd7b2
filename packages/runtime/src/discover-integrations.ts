import { readdir, readFile, realpath, stat } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { AssistantError } from '@assistant/errors';
import * as z from 'zod';
import type { Manifest } from './manifest/manifest-schema.ts';
import { ManifestError, type ManifestProblem, type ManifestSource, readManifest } from './manifest/read-manifest.ts';

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
  /** The builtin integrations of this installation. @default the repository's `integrations/` folder */
  builtinDir?: string;
  /** `integration_dirs` from config.yaml, absolute: each holds integration folders, or is one. */
  customDirs?: readonly string[];
  /**
   * node_modules folders whose packages may declare `"assistant": {"manifest": "./manifest.yaml"}`.
   * @default none
   */
  nodeModulesDirs?: readonly string[];
  /** Paths in errors are shown relative to this. @default process.cwd() */
  cwd?: string;
}

/** The repository's own `integrations/` folder. */
export const builtinIntegrationsDir = fileURLToPath(new URL('../../../integrations/', import.meta.url));

const packageJsonSchema = z.looseObject({
  name: z.string().optional(),
  assistant: z.looseObject({ manifest: z.string().optional() }).optional(),
});

/**
 * Finds every integration: the builtin folder, the custom folders named in config, and installed npm packages that
 * declare a manifest. Reads and validates every manifest (handlers are loaded later, by the worker) and reports all
 * problems at once. The same manifest reached twice (a workspace package is also linked into node_modules) counts
 * once; two manifests claiming one domain are an error naming both.
 */
export async function discoverIntegrations(
  options: DiscoverIntegrationsOptions = {},
): Promise<DiscoveredIntegration[]> {
  const cwd = options.cwd ?? process.cwd();
  const shown = (file: string) => {
    const relative = path.relative(cwd, file);
    return relative.startsWith('..') || path.isAbsolute(relative) ? file : relative;
  };
  const candidates: { manifestPath: string; origin: IntegrationOrigin; packageName?: string }[] = [];
  for (const folder of await manifestFolders(options.builtinDir ?? builtinIntegrationsDir, false)) {
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
  for (const nodeModules of options.nodeModulesDirs ?? []) candidates.push(...(await packageManifests(nodeModules)));

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
  return found.sort((left, right) => left.manifest.domain.localeCompare(right.manifest.domain));
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

/** Packages in a node_modules folder (scoped ones included) whose package.json names a manifest. */
async function packageManifests(
  nodeModules: string,
): Promise<{ manifestPath: string; origin: IntegrationOrigin; packageName: string }[]> {
  const packageDirs: string[] = [];
  let names: string[];
  try {
    names = await readdir(nodeModules);
  } catch {
    return [];
  }
  for (const name of names.sort()) {
    if (name.startsWith('.')) continue;
    if (name.startsWith('@')) {
      const scoped = await readdir(path.join(nodeModules, name)).catch(() => [] as string[]);
      for (const inner of scoped.sort()) packageDirs.push(path.join(nodeModules, name, inner));
    } else packageDirs.push(path.join(nodeModules, name));
  }
  const found: { manifestPath: string; origin: IntegrationOrigin; packageName: string }[] = [];
  for (const packageDir of packageDirs) {
    let data: unknown;
    try {
      data = JSON.parse(await readFile(path.join(packageDir, 'package.json'), 'utf8'));
    } catch {
      continue;
    }
    const checked = packageJsonSchema.safeParse(data);
    const manifest = checked.success ? checked.data.assistant?.manifest : undefined;
    if (manifest === undefined) continue;
    const manifestPath = path.resolve(packageDir, manifest);
    // A package may only point inside itself.
    if (path.relative(packageDir, manifestPath).startsWith('..')) continue;
    found.push({ manifestPath, origin: 'package', packageName: checked.data?.name ?? path.basename(packageDir) });
  }
  return found;
}

async function isFile(file: string): Promise<boolean> {
  return (await stat(file).catch(() => undefined))?.isFile() ?? false;
}
