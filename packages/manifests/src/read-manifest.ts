import { createHash, randomBytes } from 'node:crypto';
import { mkdir, readdir, readFile, rename, unlink, writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { AssistantError } from '@assistant/errors';
import { isTaskType } from '@assistant/queue';
import { isMap, isPair, isScalar, LineCounter, type Node, parseDocument } from 'yaml';
import type * as z from 'zod';
import { type Manifest, manifestSchema } from './manifest-schema.ts';
import { checkSettingDefaults, type SettingSpec } from './setting-spec.ts';

/** One thing wrong with a manifest, located in its file. */
export interface ManifestProblem {
  file: string;
  line?: number | undefined;
  col?: number | undefined;
  path: (string | number)[];
  message: string;
}

export function formatManifestProblem(problem: ManifestProblem): string {
  const where = problem.line === undefined ? problem.file : `${problem.file}:${problem.line}:${problem.col ?? 1}`;
  const key = problem.path.length > 0 ? ` ${problem.path.join('.')}:` : '';
  return `${where}:${key} ${problem.message}`;
}

/** A manifest that cannot be used; `problems` lists everything wrong with it at once. */
export class ManifestError extends AssistantError {
  readonly problems: readonly ManifestProblem[];

  constructor(problems: readonly ManifestProblem[], hint?: string) {
    const count = problems.length === 1 ? '1 problem' : `${problems.length} problems`;
    super(
      'MANIFEST_INVALID',
      `invalid integration manifest (${count}):\n${problems.map(formatManifestProblem).join('\n')}`,
      {
        hint: hint ?? 'fix the manifest; docs/integrations.md describes every key',
      },
    );
    this.problems = problems;
  }
}

/** Where a key path points in a parsed YAML document: the value, else the nearest existing parent. */
export interface ManifestSource {
  positionOf(path: readonly (string | number)[]): { line: number; col: number } | undefined;
}

/**
 * Reads and validates a manifest. `shownAs` is how the file is named in errors (relative to the working directory
 * when that is shorter). Throws {@link ManifestError} with every problem found.
 */
export async function readManifest(
  file: string,
  shownAs: string = file,
): Promise<{ manifest: Manifest; source: ManifestSource }> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    throw new ManifestError([{ file: shownAs, path: [], message: `cannot read: ${(error as Error).message}` }]);
  }
  return parseManifestCached(text, shownAs);
}

/**
 * Where manifests that validated are kept as JSON, by the hash of their text and of the code that validates them:
 * beside the code, like Node's compile cache (only whoever can change the code can write there). Every command,
 * worker and server start read the built-in manifests, and parsing their YAML and checking it was a fifth of
 * `assistant queue stats` (docs/performance.md, issue 38). ASSISTANT_MANIFEST_CACHE=off parses every time.
 */
const cacheDirectory = fileURLToPath(new URL('../../../node_modules/.cache/assistant-manifests', import.meta.url));

/** The hash of this package's code (what validates a manifest), read once per process. */
let codeKey: Promise<string> | undefined;

function codeKeyOnce(): Promise<string> {
  codeKey ??= (async () => {
    const hash = createHash('sha256');
    const sources = [new URL('.', import.meta.url), new URL('../../queue/src/task-name.ts', import.meta.url)];
    for (const source of sources) {
      const at = fileURLToPath(source);
      const files = at.endsWith('.ts')
        ? [at]
        : (await readdir(at))
            .filter((name) => name.endsWith('.ts') && !name.endsWith('.test.ts'))
            .sort()
            .map((name) => `${at}/${name}`);
      for (const file of files)
        hash
          .update(file)
          .update('\0')
          .update(await readFile(file))
          .update('\0');
    }
    return hash.digest('hex');
  })();
  return codeKey;
}

/** The cache entry of a manifest's text (see `cacheDirectory`). */
export async function manifestCacheEntry(text: string): Promise<string> {
  const key = createHash('sha256')
    .update(await codeKeyOnce())
    .update('\0')
    .update(text)
    .digest('hex');
  return `${cacheDirectory}/${key}.json`;
}

async function parseManifestCached(
  text: string,
  file: string,
): Promise<{ manifest: Manifest; source: ManifestSource }> {
  if (process.env.ASSISTANT_MANIFEST_CACHE === 'off') return parseManifest(text, file);
  let entry: string | undefined;
  try {
    entry = await manifestCacheEntry(text);
    const manifest = JSON.parse(await readFile(entry, 'utf8')) as Manifest;
    return { manifest, source: lazySource(text) };
  } catch {
    // Not kept yet (or unreadable, or the code cannot be read): parsed below.
  }
  const parsed = parseManifest(text, file);
  if (entry !== undefined) await keep(entry, parsed.manifest);
  return parsed;
}

/** Writes a cache entry whole (a temp file renamed into place); a cache that cannot be written is only slower. */
async function keep(entry: string, manifest: Manifest): Promise<void> {
  const temp = `${entry}.${process.pid}-${randomBytes(4).toString('hex')}.tmp`;
  try {
    await mkdir(cacheDirectory, { recursive: true });
    await writeFile(temp, JSON.stringify(manifest), { mode: 0o644 });
    await rename(temp, entry);
  } catch {
    await unlink(temp).catch(() => {});
  }
}

/** Positions for a manifest read from the cache: its YAML is parsed only if a problem needs locating. */
function lazySource(text: string): ManifestSource {
  let parsed: ManifestSource | undefined;
  return {
    positionOf(path) {
      parsed ??= sourceOf(text);
      return parsed.positionOf(path);
    },
  };
}

function sourceOf(text: string): ManifestSource {
  const lineCounter = new LineCounter();
  const document = parseDocument(text, { uniqueKeys: true, prettyErrors: false, lineCounter });
  return sourceOfDocument(document, lineCounter);
}

function sourceOfDocument(document: ReturnType<typeof parseDocument>, lineCounter: LineCounter): ManifestSource {
  return {
    positionOf(path) {
      for (let length = path.length; length >= 0; length--) {
        const offset = offsetOf(document.contents, path.slice(0, length));
        if (offset !== undefined) return lineCounter.linePos(offset);
      }
      return undefined;
    },
  };
}

/** Validates manifest text; see {@link readManifest}. */
export function parseManifest(text: string, file: string): { manifest: Manifest; source: ManifestSource } {
  const lineCounter = new LineCounter();
  const document = parseDocument(text, { uniqueKeys: true, prettyErrors: false, lineCounter });
  const syntax = document.errors[0];
  if (syntax) {
    const { line, col } = lineCounter.linePos(syntax.pos[0]);
    throw new ManifestError([{ file, line, col, path: [], message: `YAML syntax: ${syntax.message.split('\n')[0]}` }]);
  }
  const source = sourceOfDocument(document, lineCounter);
  const located = (path: (string | number)[], message: string): ManifestProblem => {
    const position = source.positionOf(path);
    return { file, line: position?.line, col: position?.col, path, message };
  };
  const result = manifestSchema.safeParse(document.toJS({ maxAliasCount: 100 }) ?? {});
  if (!result.success)
    throw new ManifestError(result.error.issues.map((issue) => located(issuePath(issue), issueMessage(issue))));
  const manifest = result.data;
  const problems: ManifestProblem[] = [];
  for (const problem of checkSettingDefaults(manifest.config, ['config']))
    problems.push(located(problem.path, problem.message));
  for (const [platform, spec] of Object.entries(manifest.platforms)) {
    for (const problem of checkSettingDefaults(spec.config, ['platforms', platform, 'config'])) {
      problems.push(located(problem.path, problem.message));
    }
    for (const stage of Object.keys(spec.stages)) {
      const type = `${manifest.domain}.${platform}.${stage}`;
      if (!isTaskType(type))
        problems.push(located(['platforms', platform, 'stages', stage], `\`${type}\` is not a valid task type`));
    }
  }
  for (const name of Object.keys(manifest.tasks)) {
    if (name in manifest.platforms) {
      problems.push(
        located(
          ['tasks', name],
          `\`${name}\` is also a platform; task types \`${manifest.domain}.${name}.…\` would be ambiguous`,
        ),
      );
    }
  }
  for (const [name, hook] of Object.entries(manifest.webhooks)) {
    const setting = hook.secret_setting;
    if (setting === undefined) continue;
    const [first = '', ...rest] = setting.split('.');
    let spec: SettingSpec | undefined = Object.hasOwn(manifest.config, first) ? manifest.config[first] : undefined;
    for (const field of rest) spec = spec?.fields && Object.hasOwn(spec.fields, field) ? spec.fields[field] : undefined;
    if (spec?.type !== 'secret') {
      problems.push(
        located(
          ['webhooks', name, 'secret_setting'],
          spec === undefined
            ? `\`${setting}\` is not a setting under \`config:\`; declare it there as \`{type: secret}\``
            : `\`${setting}\` is a ${spec.type} setting; a webhook secret must be of type \`secret\``,
        ),
      );
    }
  }
  if (problems.length > 0) throw new ManifestError(problems);
  return { manifest, source };
}

function issuePath(issue: z.core.$ZodIssue): (string | number)[] {
  const path = issue.path.filter((part): part is string | number => typeof part !== 'symbol');
  // An unknown key is reported at the key itself, not at the object that holds it.
  if (issue.code === 'unrecognized_keys' && issue.keys.length === 1 && issue.keys[0] !== undefined) {
    return [...path, issue.keys[0]];
  }
  return path;
}

function issueMessage(issue: z.core.$ZodIssue): string {
  if (issue.code === 'unrecognized_keys') {
    return issue.keys.length === 1
      ? `unknown key \`${issue.keys[0]}\``
      : `unknown keys ${issue.keys.map((key) => `\`${key}\``).join(', ')}`;
  }
  return issue.message;
}

/** The source offset of the node at `path`: the key for map entries, so an unknown key points at itself. */
function offsetOf(node: unknown, path: readonly (string | number)[]): number | undefined {
  let current: unknown = node;
  let offset = (node as Node | null)?.range?.[0];
  for (const part of path) {
    if (isMap(current)) {
      const pair = current.items.find((item) => isPair(item) && isScalar(item.key) && item.key.value === part);
      if (!pair || !isPair(pair)) return undefined;
      offset = (pair.key as Node).range?.[0];
      current = pair.value;
      continue;
    }
    const items = (current as { items?: unknown[] } | null)?.items;
    if (typeof part === 'number' && Array.isArray(items) && items[part] !== undefined) {
      current = items[part];
      offset = (current as Node).range?.[0];
      continue;
    }
    return undefined;
  }
  return offset;
}
