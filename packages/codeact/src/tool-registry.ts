import { commentText, typeOf } from './tool-declarations.ts';

/** A tool as the registry takes it: what JSON mode knows of it, and where code finds it. */
export interface RegistryEntry {
  /** The tool's name in JSON mode (`search_notes`, `github__list_issues`). */
  name: string;
  description: string;
  /** JSON Schema of the one argument object. */
  parameters: Record<string, unknown>;
  tier: 'read_only' | 'soft' | 'irreversible';
  /** Where it sits under `tools`. @default `[server, tool]` for an MCP tool `server__tool`, else `[name]` */
  path?: readonly string[];
}

/** A tool in the registry: its final path and its declaration for the code prompt. */
export interface RegisteredTool extends RegistryEntry {
  /** Segments that are JavaScript identifiers: `tools.notes.search`. */
  path: readonly string[];
  /** `/** … *\/\nsearch(args: {…}): Promise<unknown>;`: the method as a namespace lists it. */
  declaration: string;
}

/** One place for every tool's three faces: its JSON spec, its declaration, and its path in a cell's `tools`. */
export interface ToolRegistry {
  readonly tools: readonly RegisteredTool[];
  byPath(path: readonly string[]): RegisteredTool | undefined;
  byName(name: string): RegisteredTool | undefined;
  /** `declare const tools: { … };` for the code prompt: every tool, or only those named. */
  declarations(names?: readonly string[]): string;
  /** The best matches for words of a query over names, paths and descriptions; at most `limit` (default 8). */
  search(query: string, limit?: number): RegisteredTool[];
  /** The specs JSON mode sends, from the same schemas. */
  specs(): { name: string; description: string; parameters: Record<string, unknown> }[];
  /** Tools left out because their path was taken (only with `onConflict: 'skip'`), and why. */
  readonly skipped: readonly { name: string; reason: string }[];
}

/** Options of {@link createToolRegistry}. */
export interface ToolRegistryOptions {
  /**
   * What a tool whose path is taken does: `throw` a TypeError naming both tools, or `skip` the later tool (listed in
   * `skipped`), for registries built at run time from tools nobody checked together (an MCP server named `notes`).
   * @default 'throw'
   */
  onConflict?: 'throw' | 'skip';
}

const tierWords = { read_only: 'reads only', soft: 'changes what can be undone', irreversible: 'irreversible' };

/**
 * Builds the registry. A segment that is not an identifier is made one (`-` → `_`, a leading digit gets `_`); two tools
 * on one path, or a path that is both a function and a namespace, throw a TypeError naming both tools.
 */
export function createToolRegistry(entries: readonly RegistryEntry[], options: ToolRegistryOptions = {}): ToolRegistry {
  const tools: RegisteredTool[] = [];
  const skipped: { name: string; reason: string }[] = [];
  const byPathKey = new Map<string, RegisteredTool>();
  const namespaces = new Map<string, string>();
  for (const entry of entries) {
    const path = (entry.path ?? defaultPath(entry.name)).map(identifier);
    if (path.length === 0) throw new TypeError(`Expected a path for tool ${entry.name}, got none`);
    const conflict = conflictOf(entry.name, path, byPathKey, namespaces);
    if (conflict !== undefined) {
      if (options.onConflict === 'skip') {
        skipped.push({ name: entry.name, reason: conflict });
        continue;
      }
      throw new TypeError(conflict);
    }
    for (let length = 1; length < path.length; length += 1) {
      const prefix = path.slice(0, length).join('.');
      if (!namespaces.has(prefix)) namespaces.set(prefix, entry.name);
    }
    const key = path.join('.');
    const registered: RegisteredTool = { ...entry, path, declaration: declarationOf(entry, path) };
    tools.push(registered);
    byPathKey.set(key, registered);
  }
  const byName = new Map(tools.map((tool) => [tool.name, tool]));

  return {
    tools,
    byPath: (path) => byPathKey.get(path.join('.')),
    byName: (name) => byName.get(name),
    declarations: (names) => {
      const chosen = names === undefined ? tools : tools.filter((tool) => names.includes(tool.name));
      return `declare const tools: ${namespaceBlock(chosen, 0, '')};`;
    },
    search: (query, limit = 8) => searchTools(tools, query, limit),
    specs: () => tools.map((tool) => ({ name: tool.name, description: tool.description, parameters: tool.parameters })),
    skipped,
  };
}

/** Why `path` cannot be `name`'s: another tool there, or a tool where it needs a namespace; undefined when free. */
function conflictOf(
  name: string,
  path: readonly string[],
  byPathKey: ReadonlyMap<string, RegisteredTool>,
  namespaces: ReadonlyMap<string, string>,
): string | undefined {
  const key = path.join('.');
  const other = byPathKey.get(key)?.name ?? namespaces.get(key);
  if (other !== undefined)
    return `Tools ${other} and ${name} both land on tools.${key}; give one a codePath of its own`;
  for (let length = 1; length < path.length; length += 1) {
    const prefix = path.slice(0, length).join('.');
    const leaf = byPathKey.get(prefix);
    if (leaf !== undefined) {
      return `Tool ${name} at tools.${key} needs tools.${prefix} to be a namespace, but it is tool ${leaf.name}`;
    }
  }
  return undefined;
}

function defaultPath(name: string): string[] {
  const separator = name.indexOf('__');
  if (separator > 0 && separator < name.length - 2) return [name.slice(0, separator), name.slice(separator + 2)];
  return [name];
}

function identifier(segment: string): string {
  const cleaned = segment.replace(/[^\w$]/g, '_');
  return cleaned === '' || /^\d/.test(cleaned) ? `_${cleaned}` : cleaned;
}

/** A tool's method declaration, with its description and tier as the JSDoc above it. */
function declarationOf(entry: RegistryEntry, path: readonly string[]): string {
  const method = path.at(-1) as string;
  const doc = `/** ${commentText(entry.description)} (${tierWords[entry.tier]}) */`;
  return `${doc}\n${method}(args: ${typeOf(entry.parameters, '')}): Promise<unknown>;`;
}

/** The nested `{ ns: { method(...): ...; }; }` type of `tools` at `level` under the path `prefix`. */
function namespaceBlock(tools: readonly RegisteredTool[], level: number, indent: string): string {
  const inner = `${indent}  `;
  const lines: string[] = [];
  const groups = new Map<string, RegisteredTool[]>();
  for (const tool of tools) {
    const segment = tool.path[level] as string;
    if (tool.path.length === level + 1) {
      lines.push(`${inner}/** ${commentText(tool.description)} (${tierWords[tool.tier]}) */`);
      lines.push(`${inner}${segment}(args: ${typeOf(tool.parameters, inner)}): Promise<unknown>;`);
    } else {
      const group = groups.get(segment) ?? [];
      group.push(tool);
      groups.set(segment, group);
    }
  }
  for (const [segment, group] of groups) {
    lines.push(`${inner}${segment}: ${namespaceBlock(group, level + 1, inner)};`);
  }
  return lines.length === 0 ? '{}' : `{\n${lines.join('\n')}\n${indent}}`;
}

/** Word overlap: a name or path hit weighs most, then the description; ties keep registry order. */
function searchTools(tools: readonly RegisteredTool[], query: string, limit: number): RegisteredTool[] {
  const words = wordsOf(query);
  if (words.length === 0) return [];
  const scored = tools.map((tool, order) => {
    const nameWords = new Set([...wordsOf(tool.name), ...tool.path.flatMap(wordsOf)]);
    const descriptionWords = new Set(wordsOf(tool.description));
    const exact = tool.name.toLowerCase() === query.trim().toLowerCase() || tool.path.join('.') === query.trim();
    let score = exact ? 100 : 0;
    for (const word of words) {
      if (nameWords.has(word)) score += 10;
      else if ([...nameWords].some((name) => name.startsWith(word) || word.startsWith(name))) score += 5;
      if (descriptionWords.has(word)) score += 3;
      else if (
        [...descriptionWords].some((known) => known.length > 3 && (known.startsWith(word) || word.startsWith(known)))
      )
        score += 1;
    }
    return { tool, score, order };
  });
  return scored
    .filter((entry) => entry.score > 0)
    .sort((a, b) => b.score - a.score || a.order - b.order)
    .slice(0, limit)
    .map((entry) => entry.tool);
}

const stopWords = new Set([
  'a',
  'an',
  'the',
  'to',
  'of',
  'for',
  'and',
  'or',
  'in',
  'on',
  'with',
  'by',
  'my',
  'me',
  'it',
]);

function wordsOf(text: string): string[] {
  return text
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .filter((word) => word !== '' && !stopWords.has(word));
}
