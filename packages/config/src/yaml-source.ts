import { CST, isAlias, isMap, isScalar, isSeq, Lexer, LineCounter, type Node, parseDocument } from 'yaml';
import type { ConfigPath, ConfigProblem, SourcePosition } from './problems.ts';
import { Secret } from './secret.ts';
import { Yolo } from './yolo.ts';

/**
 * Limits on config.yaml and secrets.yaml, checked before the YAML parser builds anything: the parser's memory grows
 * with size and nesting (a 20 MB value took 1.6 GB, a 20,000-deep mapping 1 GB) and it recurses per level. A real
 * config is a few kilobytes, a few hundred values and under ten levels deep.
 */
export const configLimits = {
  /** Bytes of one file. */
  maxBytes: 1024 * 1024,
  /** Values (scalars, aliases, lists, mappings), after aliases expand (a "billion laughs" file). */
  maxValues: 100_000,
  /** Nested mappings and lists. */
  maxDepth: 64,
} as const;
const maxNodes = configLimits.maxValues;

export interface YamlSource {
  /** Plain data: objects, arrays, strings, numbers, booleans, null, plus Secret and Yolo markers. */
  data: unknown;
  /** Problems found while reading: syntax, unknown tags, missing secrets. */
  problems: ConfigProblem[];
  /** Where the value at a path starts. */
  valueAt(path: ConfigPath): SourcePosition | undefined;
  /** Where the key naming the value at a path starts (undefined for list items and the root). */
  keyAt(path: ConfigPath): SourcePosition | undefined;
  /** Paths of every `!yolo`-tagged value, in document order. */
  yoloPaths: ConfigPath[];
}

export interface ReadYamlOptions {
  text: string;
  /** The file name used in problems. */
  file: string;
  /**
   * Looks up `!secret name`. Undefined when the document may not use `!secret` (secrets.yaml itself).
   * Returns the value, or a problem message and hint when the secret cannot be resolved.
   */
  resolveSecret?: (name: string) => { value: string } | { message: string; hint: string };
}

const pathKey = (path: ConfigPath): string => JSON.stringify(path);

/** Parses YAML into plain data while remembering where every key and value came from. */
export function readYaml(options: ReadYamlOptions): YamlSource {
  const { file, resolveSecret } = options;
  const refusal = yamlLimitProblem(options.text);
  if (refusal !== undefined) {
    const { message, position, hint } = refusal;
    return {
      data: undefined,
      problems: [{ severity: 'error', file, path: [], position, message, ...(hint === undefined ? {} : { hint }) }],
      valueAt: () => undefined,
      keyAt: () => undefined,
      yoloPaths: [],
    };
  }
  const lineCounter = new LineCounter();
  // Duplicate keys are found below with a set: the parser's own check compares every key with every other one,
  // which for a mapping of 100,000 keys is minutes of CPU.
  const document = parseDocument(options.text, { lineCounter, prettyErrors: false, uniqueKeys: false });
  const problems: ConfigProblem[] = [];
  const values = new Map<string, SourcePosition>();
  const keys = new Map<string, SourcePosition>();
  const yoloPaths: ConfigPath[] = [];
  const positionOf = (offset: number): SourcePosition => lineCounter.linePos(offset);
  const problem = (path: ConfigPath, offset: number | undefined, message: string, hint?: string): void => {
    problems.push({
      severity: 'error',
      file,
      path,
      message,
      ...(offset === undefined ? {} : { position: positionOf(offset) }),
      ...(hint === undefined ? {} : { hint }),
    });
  };

  for (const error of document.errors) {
    problems.push({
      severity: 'error',
      file,
      path: [],
      position: positionOf(error.pos[0]),
      message: `YAML syntax: ${error.message.split('\n')[0]}`,
    });
  }
  const empty: YamlSource = {
    data: undefined,
    problems,
    valueAt: () => undefined,
    keyAt: () => undefined,
    yoloPaths,
  };
  if (problems.length > 0) return empty;

  let nodeCount = 0;
  const convert = (node: Node | null | undefined, path: ConfigPath): unknown => {
    if (++nodeCount > maxNodes) throw new TooLarge();
    if (node === null || node === undefined) return null;
    if (node.range) values.set(pathKey(path), positionOf(node.range[0]));
    if (isAlias(node)) {
      const target = node.resolve(document);
      if (target === undefined) {
        problem(path, node.range?.[0], `alias *${node.source} names no anchor`);
        return null;
      }
      // Record positions of what the alias expands to under the alias' own path, so errors point at the use.
      const result = convert(target, path);
      if (node.range) values.set(pathKey(path), positionOf(node.range[0]));
      return result;
    }
    const tag = node.tag;
    if (tag === '!secret') return convertSecret(node, path);
    if (tag === '!yolo') {
      yoloPaths.push(path);
      const inner = node.clone() as Node;
      delete inner.tag;
      return new Yolo(convert(inner, path));
    }
    if (tag !== undefined && !tag.startsWith('tag:yaml.org,2002:')) {
      problem(path, node.range?.[0], `unknown tag ${tag}`, 'Assistant understands `!secret name` and `!yolo`');
      // Carry on with the untagged value so the same line is not reported twice.
      const inner = node.clone() as Node;
      delete inner.tag;
      return convert(inner, path);
    }
    if (isMap(node)) {
      const object: Record<string, unknown> = {};
      const seen = new Set<string>();
      for (const pair of node.items) {
        const keyNode = pair.key as Node | null;
        const keyValue = isScalar(keyNode) ? keyNode.value : undefined;
        if (typeof keyValue !== 'string' && typeof keyValue !== 'number' && typeof keyValue !== 'boolean') {
          problem(path, keyNode?.range?.[0] ?? node.range?.[0], 'keys must be plain words, not lists or maps');
          continue;
        }
        const key = String(keyValue);
        if (seen.has(key)) {
          problem(path, keyNode?.range?.[0], 'YAML syntax: Map keys must be unique');
          continue;
        }
        seen.add(key);
        const childPath = [...path, key];
        if (keyNode?.range) keys.set(pathKey(childPath), positionOf(keyNode.range[0]));
        // defineProperty, so a key named __proto__ is data rather than a prototype change.
        Object.defineProperty(object, key, {
          value: convert(pair.value as Node | null, childPath),
          enumerable: true,
          writable: true,
          configurable: true,
        });
        if (pair.value === null && keyNode?.range) values.set(pathKey(childPath), positionOf(keyNode.range[0]));
      }
      return object;
    }
    if (isSeq(node)) return node.items.map((item, index) => convert(item as Node | null, [...path, index]));
    if (isScalar(node)) return node.value;
    return null;
  };

  const convertSecret = (node: Node, path: ConfigPath): unknown => {
    const offset = node.range?.[0];
    if (!resolveSecret) {
      problem(path, offset, '`!secret` cannot be used inside secrets.yaml');
      return null;
    }
    const name = isScalar(node) ? node.value : undefined;
    if (typeof name !== 'string' || name.trim() === '') {
      problem(path, offset, '`!secret` needs the name of an entry in secrets.yaml', 'write `password: !secret name`');
      return new Secret('', '');
    }
    const resolved = resolveSecret(name);
    if ('message' in resolved) {
      problem(path, offset, resolved.message, resolved.hint);
      // A stand-in keeps schema validation from reporting the same key a second time.
      return new Secret(name, '');
    }
    return new Secret(name, resolved.value);
  };

  let data: unknown;
  try {
    data = convert(document.contents, []);
  } catch (error) {
    if (!(error instanceof TooLarge)) throw error;
    problem(
      [],
      0,
      `the document expands to more than ${maxNodes} values`,
      'aliases (*name) that nest aliases multiply',
    );
    return empty;
  }
  // A duplicate key is a syntax error: nothing read from such a file is trusted.
  if (problems.some((entry) => entry.message.startsWith('YAML syntax:'))) return { ...empty, problems };
  return {
    data,
    problems,
    valueAt: (path) => values.get(pathKey(path)),
    keyAt: (path) => keys.get(pathKey(path)),
    yoloPaths,
  };
}

class TooLarge extends Error {}

const mebibytes = (bytes: number) => `${bytes / (1024 * 1024)} MiB`;

/** The refusal of a file of `bytes` bytes, past {@link configLimits}.maxBytes: for text and for a file read capped. */
export function fileSizeProblem(bytes: number): { message: string; hint: string } {
  return {
    message: `the file is ${bytes} bytes; the limit is ${configLimits.maxBytes} bytes (${mebibytes(configLimits.maxBytes)})`,
    hint: 'config.yaml and secrets.yaml hold settings, not data; move large content into a file the config names',
  };
}

/**
 * Why YAML text is refused before parsing (too large, too many values, nested too deep), with where; undefined when
 * it is within {@link configLimits}. One linear pass of the YAML lexer, which neither recurses nor builds nodes.
 * Nesting is measured from indentation and indicators, so a `[` or `- ` inside a scalar never counts.
 */
export function yamlLimitProblem(
  text: string,
): { message: string; position: SourcePosition; hint?: string } | undefined {
  const bytes = Buffer.byteLength(text, 'utf8');
  if (bytes > configLimits.maxBytes) return { ...fileSizeProblem(bytes), position: { line: 1, col: 1 } };
  const positionOf = (offset: number): SourcePosition => {
    let line = 1;
    let lineStart = 0;
    for (let index = text.indexOf('\n'); index !== -1 && index < offset; index = text.indexOf('\n', index + 1)) {
      line++;
      lineStart = index + 1;
    }
    return { line, col: offset - lineStart + 1 };
  };
  // Open block collections by column; a list may sit at its parent key's column (`key:\n- item`).
  const blocks: { column: number; kind: 'map' | 'seq' }[] = [];
  let flow = 0;
  let values = 0;
  let offset = 0;
  let column = 0;
  let nodeColumn: number | undefined;
  const tooDeep = () => blocks.length + flow > configLimits.maxDepth;
  const open = (at: number, kind: 'map' | 'seq') => {
    while ((blocks.at(-1)?.column ?? -1) > at) blocks.pop();
    const top = blocks.at(-1);
    // A key at a list's column ends the list (`key:\n- item\nnext: …`).
    if (top?.column === at && top.kind === 'seq' && kind === 'map') blocks.pop();
    const current = blocks.at(-1);
    if (current?.column !== at || current.kind !== kind) blocks.push({ column: at, kind });
  };
  const deep = (at: number) => ({
    message: `the document nests deeper than ${configLimits.maxDepth} levels; the limit is ${configLimits.maxDepth}`,
    position: positionOf(at),
  });
  for (const token of new Lexer().lex(text)) {
    // Control tokens mark what follows (a scalar, a document) and are not part of the source.
    if (token.length === 1 && token < ' ' && token !== '\n' && token !== '\t') {
      if (token === '\x1f' && ++values > configLimits.maxValues) break;
      continue;
    }
    const start = offset;
    const startColumn = column;
    offset += token.length;
    const newline = token.lastIndexOf('\n');
    column = newline === -1 ? column + token.length : token.length - newline - 1;
    switch (CST.tokenType(token)) {
      case 'newline':
        nodeColumn = undefined;
        break;
      case 'space':
      case 'comment':
      case 'comma':
      case 'directive-line':
        break;
      case 'doc-start':
        blocks.length = 0;
        flow = 0;
        break;
      case 'seq-item-ind':
      case 'explicit-key-ind':
        if (flow === 0) {
          open(startColumn, CST.tokenType(token) === 'seq-item-ind' ? 'seq' : 'map');
          if (tooDeep()) return deep(start);
        }
        nodeColumn = undefined;
        break;
      case 'map-value-ind':
        if (flow === 0) {
          open(nodeColumn ?? startColumn, 'map');
          if (tooDeep()) return deep(start);
        }
        nodeColumn = undefined;
        break;
      case 'flow-map-start':
      case 'flow-seq-start':
        flow++;
        if (++values > configLimits.maxValues) break;
        if (tooDeep()) return deep(start);
        nodeColumn ??= startColumn;
        break;
      case 'flow-map-end':
      case 'flow-seq-end':
        flow = Math.max(0, flow - 1);
        break;
      case 'alias':
        values++;
        nodeColumn ??= startColumn;
        break;
      default:
        nodeColumn ??= startColumn;
    }
    if (values > configLimits.maxValues) break;
  }
  if (values > configLimits.maxValues) {
    return {
      message: `the document has more than ${configLimits.maxValues} values; the limit is ${configLimits.maxValues}`,
      position: { line: 1, col: 1 },
    };
  }
  return undefined;
}
