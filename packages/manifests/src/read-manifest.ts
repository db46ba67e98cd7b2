import { readFile } from 'node:fs/promises';
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
  return parseManifest(text, shownAs);
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
  const source: ManifestSource = {
    positionOf(path) {
      for (let length = path.length; length >= 0; length--) {
        const offset = offsetOf(document.contents, path.slice(0, length));
        if (offset !== undefined) return lineCounter.linePos(offset);
      }
      return undefined;
    },
  };
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
