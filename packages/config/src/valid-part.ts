import type * as z from 'zod';
import type { ConfigPath } from './problems.ts';
import { bestBranch } from './zod-problems.ts';

// The README promises every problem of config.yaml at once. The schema reports all of its own, but the checks that
// need a valid config (a rule's actions and conditions against its platform's manifest) could only run once the
// schema passed, so `then: archve` surfaced on the run after three key typos were fixed. Here the invalid parts are
// cut away until what is left passes, and those checks run on it: every rule that is itself well formed is checked.

/** At most this many rounds of cutting: each round removes what the last parse rejected. */
const maxRounds = 8;

/** A copy of the config data without some of its parts, and how to name its places in the original. */
interface Pruned {
  data: unknown;
  /** For each array of the copy, the original index of each of its items. */
  originalIndexes: WeakMap<readonly unknown[], number[]>;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return false;
  const prototype = Object.getPrototypeOf(value);
  return prototype === Object.prototype || prototype === null;
}

const pathKey = (path: ConfigPath) => JSON.stringify(path);

/**
 * The data without the parts at `removed` (original paths). Only plain objects and arrays are copied; tagged values
 * (`!secret`, `!yolo`) are kept as they are.
 */
function prune(data: unknown, removed: ReadonlySet<string>): Pruned {
  const originalIndexes = new WeakMap<readonly unknown[], number[]>();
  const copy = (value: unknown, path: ConfigPath): unknown => {
    if (Array.isArray(value)) {
      const items: unknown[] = [];
      const indexes: number[] = [];
      value.forEach((item, index) => {
        const itemPath = [...path, index];
        if (removed.has(pathKey(itemPath))) return;
        items.push(copy(item, itemPath));
        indexes.push(index);
      });
      originalIndexes.set(items, indexes);
      return items;
    }
    if (isPlainObject(value)) {
      const object: Record<string, unknown> = {};
      for (const [key, item] of Object.entries(value)) {
        const itemPath = [...path, key];
        if (!removed.has(pathKey(itemPath))) object[key] = copy(item, itemPath);
      }
      return object;
    }
    return value;
  };
  return { data: copy(data, []), originalIndexes };
}

/** A path in the pruned copy as the same place in the original data (array items may have moved up). */
function originalPath(pruned: Pruned, path: ConfigPath): ConfigPath {
  const result: (string | number)[] = [];
  let value: unknown = pruned.data;
  for (const segment of path) {
    if (Array.isArray(value) && typeof segment === 'number') {
      result.push(pruned.originalIndexes.get(value)?.[segment] ?? segment);
      value = value[segment];
    } else {
      result.push(segment);
      value = isPlainObject(value) ? value[String(segment)] : undefined;
    }
  }
  return result;
}

function hasValueAt(data: unknown, path: ConfigPath): boolean {
  let value: unknown = data;
  for (const segment of path) {
    if (Array.isArray(value) && typeof segment === 'number') {
      if (segment >= value.length) return false;
      value = value[segment];
    } else if (isPlainObject(value) && Object.hasOwn(value, String(segment))) value = value[String(segment)];
    else return false;
  }
  return true;
}

/**
 * What to cut for one issue, as paths in the pruned copy: an unknown key itself; a missing required key's parent
 * (there is nothing at the key to cut); otherwise the rejected value. Empty when only the whole file could go.
 */
function cutsFor(issue: z.core.$ZodIssue, data: unknown, base: ConfigPath = []): ConfigPath[] {
  const path = [...base, ...(issue.path as (string | number)[])];
  if (issue.code === 'unrecognized_keys') return issue.keys.map((key) => [...path, key]);
  // A union (`llms:` may be empty, an action is a name or a mapping) fails as a whole: cut inside the branch the
  // owner meant, as its problems are reported, not the whole section.
  if (issue.code === 'invalid_union') {
    const branch = bestBranch(issue.errors);
    if (branch) return branch.flatMap((inner) => cutsFor(inner, data, path));
  }
  if (path.length === 0) return [];
  if (hasValueAt(data, path)) return [path];
  return path.length > 1 ? [path.slice(0, -1)] : [];
}

export interface ValidPartOptions<Config> {
  /** The config data as read from the file. */
  data: unknown;
  /** The issues of the schema's parse of `data`. */
  issues: readonly z.core.$ZodIssue[];
  parse: (data: unknown) => { success: true; data: Config } | { success: false; issues: readonly z.core.$ZodIssue[] };
}

export interface ValidPart<Config> {
  /** The config made of the parts of the file that passed the schema. */
  config: Config;
  /** The original paths cut away to get it: problems at or under them are the schema's to report. */
  removed: ConfigPath[];
  /** Names a path of `config` (as the checks report it) by its place in the file. */
  originalPath: (path: ConfigPath) => ConfigPath;
}

/**
 * The largest part of an invalid config that the schema accepts, found by cutting away what each parse rejected;
 * undefined when nothing usable remains within a few rounds.
 */
export function validPart<Config>(options: ValidPartOptions<Config>): ValidPart<Config> | undefined {
  const removed = new Set<string>();
  const removedPaths: ConfigPath[] = [];
  let pruned: Pruned = prune(options.data, removed);
  let issues = options.issues;
  for (let round = 0; round < maxRounds; round++) {
    const cuts = issues.flatMap((issue) => cutsFor(issue, pruned.data));
    if (cuts.length === 0) return undefined;
    for (const cut of cuts) {
      const original = originalPath(pruned, cut);
      if (!removed.has(pathKey(original))) {
        removed.add(pathKey(original));
        removedPaths.push(original);
      }
    }
    pruned = prune(options.data, removed);
    const result = options.parse(pruned.data);
    if (result.success) {
      const final = pruned;
      return { config: result.data, removed: removedPaths, originalPath: (path) => originalPath(final, path) };
    }
    issues = result.issues;
  }
  return undefined;
}

/** True when `path` is `base` or lies under it. */
export function isUnder(path: ConfigPath, base: ConfigPath): boolean {
  return base.length <= path.length && base.every((segment, index) => path[index] === segment);
}
