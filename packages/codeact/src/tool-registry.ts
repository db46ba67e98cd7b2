import type { JSONValue } from './json-value.ts';
import { namespaceOfPaths, type PrimitiveCall, type Primitives } from './primitives.ts';
import { commentLines, jsDoc, schemaType } from './tool-declarations.ts';

/** What calling a tool can do, as the tool gate reads it (the agent package's `ToolTier`). */
export type RegistryTier = 'read_only' | 'soft' | 'irreversible';

/**
 * One tool as the registry takes it. Structural, so that an agent `Tool` fits after picking its `name`,
 * `description`, `tier` and `spec.parameters`, without this package depending on the agent package.
 */
export interface RegistryEntry {
  /** The tool's name as JSON mode knows it (`search_notes`, `github__list_issues`). */
  name: string;
  description: string;
  /** JSON Schema of the one argument object; the same object JSON mode shows. */
  parameters: Record<string, unknown>;
  tier: RegistryTier;
  /**
   * Where it sits under `tools`: `['notes', 'search']` for `tools.notes.search`. Segments that are not JavaScript
   * identifiers are made into ones.
   * @default an MCP name `server__tool` → `[server, tool]`; any other name → `[name]`
   */
  path?: readonly string[];
}

/** A tool in the registry: its entry, its final path and its declaration for the code prompt. */
export interface RegisteredTool extends RegistryEntry {
  /** Final; each segment a valid JavaScript identifier (reserved words included: they are method names). */
  path: readonly string[];
  /**
   * Its JSDoc (description and tier) and method signature, unindented:
   * `/** Finds notes … *\/\nsearch(args: { query: string }): Promise<unknown>;`
   */
  declaration: string;
}

export interface ToolRegistry {
  /** Every tool, in the order the entries were given. */
  readonly tools: readonly RegisteredTool[];
  byPath(path: readonly string[]): RegisteredTool | undefined;
  byName(name: string): RegisteredTool | undefined;
  /**
   * The `declare const tools: { … };` block for the code prompt: every tool, or only those named (throws a
   * TypeError for a name the registry does not have). Namespaces appear in the order their first tool was given.
   */
  declarations(names?: readonly string[]): string;
  /**
   * The best matches for a free-text query over names, paths and descriptions (words, any case), at most `limit`,
   * best first; ties keep registration order. Common words (`the`, `of`, `a`…) are ignored unless the query has
   * nothing else. A query with no words finds nothing.
   */
  search(query: string, limit?: number): RegisteredTool[];
  /** The JSON tool specs as JSON mode shows them, with the same schema objects. */
  specs(): { name: string; description: string; parameters: Record<string, unknown> }[];
  /** Tools left out because their name or path was taken (only with `onConflict: 'skip'`), and why. */
  readonly skipped: readonly { name: string; reason: string }[];
}

/** Options of {@link createToolRegistry}. */
export interface ToolRegistryOptions {
  /**
   * What a tool whose name or path is taken does: `throw` a TypeError naming both tools, or `skip` it (listed in
   * `skipped`): for registries built at run time from tools nobody checked together (an MCP server named `notes`).
   * @default 'throw'
   */
  onConflict?: 'throw' | 'skip';
}

const identifierPattern = /^[A-Za-z_$][\w$]*$/;

/**
 * A path segment made into an identifier: characters other than letters, digits, `_` and `$` become `_`, a leading
 * digit (or an empty segment) gets a `_` in front, and `__proto__` (which the sandbox refuses as a name) gets one
 * behind. Reserved words stay: `tools.github.delete(...)` is valid JavaScript and `delete(args): …` a valid method
 * declaration (`new` alone is written `"new"(args): …`, since a bare `new(` declares a constructor), and renaming
 * them would make the model guess.
 */
export function identifierSegment(segment: string): string {
  let identifier = segment.replace(/[^\w$]/g, '_');
  if (!identifierPattern.test(identifier)) identifier = `_${identifier}`;
  if (identifier === '__proto__') identifier = '__proto___';
  return identifier;
}

/** The default path: an MCP name `server__tool` under its server, any other name at the top. */
function defaultPath(name: string): string[] {
  const separator = name.indexOf('__', 1);
  if (separator > 0 && separator + 2 < name.length) return [name.slice(0, separator), name.slice(separator + 2)];
  return [name];
}

/** The tier as the model reads it, after the description: what a call can do and whether it may wait. */
const tierNotes: Record<RegistryTier, string> = {
  read_only: '(read only)',
  soft: '(changes what can be undone)',
  irreversible: "(irreversible: may wait for the owner's approval)",
};

function declarationOf(entry: RegistryEntry, method: string): string {
  const argumentType = schemaType(entry.parameters, 0);
  const lines = commentLines(entry.description);
  const last = lines.pop();
  lines.push(last === undefined ? tierNotes[entry.tier] : `${last} ${tierNotes[entry.tier]}`);
  // `new(…)` in a type literal is a construct signature, not a method: quoted, it is the method `tools.x.new`.
  const methodName = method === 'new' ? '"new"' : method;
  return `${jsDoc(lines, '')}${methodName}(args: ${argumentType}): Promise<unknown>;`;
}

function indented(text: string, indent: string): string {
  return text
    .split('\n')
    .map((line) => (line === '' ? line : indent + line))
    .join('\n');
}

/** The words of a text for search: letters and digits, lower case (`list_issues` → `list`, `issues`). */
function words(text: string): string[] {
  return text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [];
}

/** The words of a name: as {@link words}, and its camelCase parts too (`getFileInfo` → `getfileinfo`, `get`, `file`, `info`). */
function nameWords(name: string): string[] {
  return [...words(name), ...words(name.replace(/(\p{Ll}|\p{N})(\p{Lu})/gu, '$1 $2'))];
}

/**
 * Words too common to tell tools apart (`the sum of two numbers` should not find every tool whose description has
 * "the"), dropped from a query unless it has no other words.
 */
const stopWords = new Set(
  'a an and are as at be by for from in into is it its of on or that the this to with your'.split(' '),
);

interface SearchIndex {
  tool: RegisteredTool;
  /** The tool's name and path, joined, lower case: what an exact query is compared with. */
  names: Set<string>;
  nameWords: Set<string>;
  descriptionWords: Set<string>;
}

/** How well one query word matches a set of words: 1 for the word itself, 0.5 for a prefix either way, else 0. */
function wordMatch(word: string, candidates: ReadonlySet<string>): number {
  if (candidates.has(word)) return 1;
  for (const candidate of candidates) {
    const shorter = Math.min(candidate.length, word.length);
    if (shorter >= 3 && (candidate.startsWith(word) || word.startsWith(candidate))) return 0.5;
  }
  return 0;
}

/**
 * Scores a tool for a query: the whole query equal to its name or dotted path wins outright; then each query word
 * counts 10 when it is a word of the name or path (5 for a prefix: `issue`/`issues`) and 3 when it is a word of the
 * description (1.5 for a prefix). So a name hit beats a description hit, and a tool matching more of the words
 * beats one matching fewer.
 */
function score(entry: SearchIndex, query: string, queryWords: readonly string[]): number {
  let total = entry.names.has(query) ? 100 : 0;
  for (const word of new Set(queryWords)) {
    total += 10 * wordMatch(word, entry.nameWords) || 3 * wordMatch(word, entry.descriptionWords);
  }
  return total;
}

/**
 * Builds the registry: every tool's final path and declaration. Throws a TypeError naming both tools when two have
 * the same name, when two land on the same path, or when one's path is a namespace holding another (`github` and
 * `github__list_issues`); the caller decides which to drop or where to put it.
 */
export function createToolRegistry(entries: readonly RegistryEntry[], options: ToolRegistryOptions = {}): ToolRegistry {
  const tools: RegisteredTool[] = [];
  const skipped: { name: string; reason: string }[] = [];
  const byName = new Map<string, RegisteredTool>();
  const byPath = new Map<string, RegisteredTool>();
  // Every namespace prefix (`github`, `a.b`), with the first tool under it, for the function/namespace clash.
  const namespaces = new Map<string, RegisteredTool>();
  /** Why `entry` cannot take `path`, or undefined when it can. */
  const conflictOf = (entry: RegistryEntry, path: readonly string[]): string | undefined => {
    const key = path.join('.');
    if (byName.has(entry.name)) return `Two tools are named ${JSON.stringify(entry.name)}`;
    const samePath = byPath.get(key);
    if (samePath) return `Tools ${samePath.name} and ${entry.name} both land on tools.${key}; give one another path`;
    const under = namespaces.get(key);
    if (under) {
      return `Tool ${entry.name} at tools.${key} clashes with tool ${under.name} at tools.${under.path.join('.')}: tools.${key} cannot be both a function and a namespace`;
    }
    for (let length = 1; length < path.length; length++) {
      const prefix = path.slice(0, length).join('.');
      const function_ = byPath.get(prefix);
      if (function_) {
        return `Tool ${entry.name} at tools.${key} clashes with tool ${function_.name} at tools.${prefix}: tools.${prefix} cannot be both a function and a namespace`;
      }
    }
    return undefined;
  };
  for (const entry of entries) {
    const rawPath = entry.path ?? defaultPath(entry.name);
    if (rawPath.length === 0)
      throw new TypeError(`Expected a path of at least one name for tool ${entry.name}, got []`);
    const path = Object.freeze(rawPath.map(identifierSegment));
    const conflict = conflictOf(entry, path);
    if (conflict !== undefined) {
      if (options.onConflict !== 'skip') throw new TypeError(conflict);
      skipped.push({ name: entry.name, reason: conflict });
      continue;
    }
    const key = path.join('.');
    const method = path.at(-1) ?? entry.name;
    const tool: RegisteredTool = Object.freeze({
      name: entry.name,
      description: entry.description,
      parameters: entry.parameters,
      tier: entry.tier,
      path,
      declaration: declarationOf(entry, method),
    });
    for (let length = 1; length < path.length; length++) {
      const prefix = path.slice(0, length).join('.');
      if (!namespaces.has(prefix)) namespaces.set(prefix, tool);
    }
    tools.push(tool);
    byName.set(entry.name, tool);
    byPath.set(key, tool);
  }

  const index: SearchIndex[] = tools.map((tool) => ({
    tool,
    names: new Set([tool.name.toLowerCase(), tool.path.join('.').toLowerCase()]),
    nameWords: new Set([...nameWords(tool.name), ...tool.path.flatMap(nameWords)]),
    descriptionWords: new Set(words(tool.description)),
  }));

  const declarations = (names?: readonly string[]): string => {
    let chosen = tools;
    if (names !== undefined) {
      const unknown = names.filter((name) => !byName.has(name));
      if (unknown.length > 0) {
        throw new TypeError(
          `No tool named ${unknown.map((name) => JSON.stringify(name)).join(', ')} in the registry (it has ${tools.length} tools)`,
        );
      }
      const wanted = new Set(names);
      chosen = tools.filter((tool) => wanted.has(tool.name));
    }
    return `declare const tools: ${namespaceBlock(chosen, 0, 0)};`;
  };

  return {
    tools: Object.freeze(tools),
    byPath: (path) => byPath.get(path.join('.')),
    byName: (name) => byName.get(name),
    declarations,
    search(query, limit = 8) {
      const normalised = query.trim().toLowerCase();
      const allWords = words(normalised);
      const meaningful = allWords.filter((word) => !stopWords.has(word));
      const queryWords = meaningful.length > 0 ? meaningful : allWords;
      if (queryWords.length === 0 || limit <= 0) return [];
      return index
        .map((entry, position) => ({ tool: entry.tool, position, score: score(entry, normalised, queryWords) }))
        .filter((hit) => hit.score > 0)
        .sort((a, b) => b.score - a.score || a.position - b.position)
        .slice(0, limit)
        .map((hit) => hit.tool);
    },
    specs: () => tools.map((tool) => ({ name: tool.name, description: tool.description, parameters: tool.parameters })),
    skipped,
  };
}

/** The object type of the tools at `level` of their paths (all sharing the segments before it), at `depth`. */
function namespaceBlock(tools: readonly RegisteredTool[], level: number, depth: number): string {
  if (tools.length === 0) return '{}';
  const inner = '  '.repeat(depth + 1);
  const groups = new Map<string, RegisteredTool[]>();
  for (const tool of tools) {
    const segment = tool.path[level] ?? '';
    const group = groups.get(segment);
    if (group) group.push(tool);
    else groups.set(segment, [tool]);
  }
  const members: string[] = [];
  for (const [segment, group] of groups) {
    const leaf = group.find((tool) => tool.path.length === level + 1);
    if (leaf) members.push(indented(leaf.declaration, inner));
    else members.push(`${inner}${segment}: ${namespaceBlock(group, level + 1, depth + 1)};`);
  }
  return `{\n${members.join('\n')}\n${'  '.repeat(depth)}}`;
}

/** Runs one tool for a cell: the registry's tool the cell called, and the call as the executor gives it. */
export type RegisteredToolHandler = (tool: RegisteredTool, call: PrimitiveCall) => Promise<JSONValue>;

/**
 * The `primitives` for `executor.run`: every tool at its path, each calling `handler` with the tool. (The tool gate and
 * the call log belong in `handler`.) Namespaces have no prototype, so a tool path such as `['x', 'constructor']` is
 * the tool and never `Object`'s own.
 */
export function registryPrimitives(tools: readonly RegisteredTool[], handler: RegisteredToolHandler): Primitives {
  return namespaceOfPaths(
    tools,
    (tool) => tool.path,
    (tool) => (call: PrimitiveCall) => handler(tool, call),
  );
}
