import { isAlias, isMap, isScalar, isSeq, LineCounter, type Node, parseDocument } from 'yaml';
import type { ConfigPath, ConfigProblem, SourcePosition } from './problems.ts';
import { Secret } from './secret.ts';
import { Yolo } from './yolo.ts';

/** Refuse configs whose aliases expand past this many nodes (a "billion laughs" file). */
const maxNodes = 100_000;

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
  const lineCounter = new LineCounter();
  const document = parseDocument(options.text, { lineCounter, prettyErrors: false, uniqueKeys: true });
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
      for (const pair of node.items) {
        const keyNode = pair.key as Node | null;
        const keyValue = isScalar(keyNode) ? keyNode.value : undefined;
        if (typeof keyValue !== 'string' && typeof keyValue !== 'number' && typeof keyValue !== 'boolean') {
          problem(path, keyNode?.range?.[0] ?? node.range?.[0], 'keys must be plain words, not lists or maps');
          continue;
        }
        const key = String(keyValue);
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
  return {
    data,
    problems,
    valueAt: (path) => values.get(pathKey(path)),
    keyAt: (path) => keys.get(pathKey(path)),
    yoloPaths,
  };
}

class TooLarge extends Error {}
