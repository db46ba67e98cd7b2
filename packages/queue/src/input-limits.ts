import { CST, Lexer } from 'yaml';

/**
 * One nesting limit for everything that can become a task, enforced where input enters (the REST API, the CLI,
 * `enqueue`) and again where a task file is read, so that what the API accepts the worker can always parse and run.
 * Recursive parsers and serialisers (YAML, JSON, zod, canonical JSON for fingerprints) cost stack and memory per
 * level; 64 levels is far beyond any real payload and far below where they break.
 */
export const maxTaskNestingDepth = 64;

/**
 * The deepest nesting of `[`/`{` in JSON text, without parsing it (strings and their escapes are skipped). Stops
 * counting once `stopAbove` is passed, so a hostile 10 MB of `[` costs one linear scan and no stack.
 */
export function jsonTextNestingDepth(text: string, stopAbove = Number.POSITIVE_INFINITY): number {
  let depth = 0;
  let deepest = 0;
  let inString = false;
  for (let index = 0; index < text.length; index++) {
    const code = text.charCodeAt(index);
    if (inString) {
      if (code === 0x5c /* \ */) index++;
      else if (code === 0x22 /* " */) inString = false;
      continue;
    }
    if (code === 0x22) inString = true;
    else if (code === 0x5b /* [ */ || code === 0x7b /* { */) {
      depth++;
      if (depth > deepest) {
        deepest = depth;
        if (deepest > stopAbove) return deepest;
      }
    } else if (code === 0x5d /* ] */ || code === 0x7d /* } */) depth--;
  }
  return deepest;
}

/** The nesting depth of a parsed value (a scalar is 0, `[]` and `{}` are 1), iteratively, stopping past `stopAbove`. */
export function valueNestingDepth(value: unknown, stopAbove = Number.POSITIVE_INFINITY): number {
  let deepest = 0;
  const stack: { value: unknown; depth: number }[] = [{ value, depth: 0 }];
  while (stack.length > 0) {
    const next = stack.pop() as { value: unknown; depth: number };
    if (next.value === null || typeof next.value !== 'object') continue;
    const depth = next.depth + 1;
    if (depth > deepest) {
      deepest = depth;
      if (deepest > stopAbove) return deepest;
    }
    for (const child of Array.isArray(next.value) ? next.value : Object.values(next.value)) {
      if (child !== null && typeof child === 'object') stack.push({ value: child, depth });
    }
  }
  return deepest;
}

/**
 * An upper bound on the nesting depth of YAML text, without parsing it: one pass of the `yaml` lexer (which keeps
 * counters, not a stack, and gets quoting, comments and block scalars exactly right) over a stack of block
 * indentation levels that never grows past `stopAbove`. Block collections count by the column where they start (a
 * sequence at the column of its parent key is one level deeper), flow brackets count one each. Scalars are leaves
 * and do not count, so a mapping with a scalar value is 1 and `payload: [[1]]` is 3. Stops past `stopAbove`, so a
 * 200 000-deep sequence costs one lexer pass and a stack of `stopAbove + 1` numbers.
 */
export function yamlTextNestingDepth(text: string, stopAbove = Number.POSITIVE_INFINITY): number {
  return yamlTextNesting(text, stopAbove).depth;
}

/**
 * {@link yamlTextNestingDepth}, and whether the text holds an alias (`*name`): only an alias can nest a collection
 * inside another without the text showing it, so without one the parsed value is no deeper than `depth`.
 */
export function yamlTextNesting(
  text: string,
  stopAbove = Number.POSITIVE_INFINITY,
): { depth: number; hasAlias: boolean } {
  // Open block collections: the column where each starts and its kind, outermost first.
  const columns: number[] = [];
  const kinds: ('seq' | 'map')[] = [];
  let flowDepth = 0;
  let deepest = 0;
  let column = 0;
  // True at the start of a line and after `- `, `? ` or a leading `: `: the next content starts a (block) node.
  let nodeExpected = true;
  // The column of the node that started this line: a mapping when a `:` follows it on the same line.
  let keyColumn: number | undefined;
  let nextIsScalar = false;
  let hasAlias = false;

  const measure = (): boolean => {
    const depth = columns.length + flowDepth;
    if (depth > deepest) deepest = depth;
    return deepest > stopAbove;
  };
  // A block collection of `kind` starting at `at`: closes the deeper ones, and opens it unless it is a sibling.
  const open = (at: number, kind: 'seq' | 'map'): boolean => {
    for (;;) {
      const top = columns.length - 1;
      const topColumn = columns[top];
      if (topColumn === undefined || topColumn < at) break;
      if (topColumn === at) {
        if (kinds[top] === kind) return measure();
        // `key:` followed by `- item` at the key's own column: the sequence is the key's value, one level deeper.
        if (kinds[top] === 'map' && kind === 'seq') break;
      }
      columns.pop();
      kinds.pop();
    }
    columns.push(at);
    kinds.push(kind);
    return measure();
  };

  for (const token of new Lexer().lex(text)) {
    if (token === CST.SCALAR) {
      nextIsScalar = true;
      continue;
    }
    const type = nextIsScalar ? 'scalar' : CST.tokenType(token);
    nextIsScalar = false;
    if (type === 'alias') hasAlias = true;
    const at = column;
    const newline = token.lastIndexOf('\n');
    if (newline >= 0) column = token.length - newline - 1;
    else if (type !== 'doc-mode' && type !== 'byte-order-mark' && type !== 'flow-error-end') column += token.length;

    if (type === 'flow-error-end') {
      flowDepth = 0;
    } else if (type === 'flow-seq-start' || type === 'flow-map-start') {
      if (flowDepth === 0 && nodeExpected) {
        keyColumn = at;
        nodeExpected = false;
      }
      flowDepth += 1;
      if (measure()) return { depth: deepest, hasAlias };
    } else if (type === 'flow-seq-end' || type === 'flow-map-end') {
      flowDepth = Math.max(0, flowDepth - 1);
    } else if (flowDepth > 0) {
      // Inside brackets only brackets nest.
    } else if (type === 'doc-start' || type === 'doc-end') {
      columns.length = 0;
      kinds.length = 0;
      nodeExpected = true;
    } else if (type === 'seq-item-ind' || type === 'explicit-key-ind') {
      // Counted wherever it appears, even where YAML would refuse it: nothing the parser might nest goes uncounted.
      if (open(at, type === 'seq-item-ind' ? 'seq' : 'map')) return { depth: deepest, hasAlias };
      nodeExpected = true;
      keyColumn = undefined;
    } else if (type === 'map-value-ind') {
      if (keyColumn !== undefined) {
        if (open(keyColumn, 'map')) return { depth: deepest, hasAlias };
      } else if (nodeExpected) {
        // A `:` that starts a line is the value of an explicit `? key`, in the same mapping.
        if (open(at, 'map')) return { depth: deepest, hasAlias };
        nodeExpected = true;
        continue;
      }
      keyColumn = undefined;
      nodeExpected = false;
    } else if (
      type === 'scalar' ||
      type === 'single-quoted-scalar' ||
      type === 'double-quoted-scalar' ||
      type === 'alias'
    ) {
      if (nodeExpected) keyColumn = at;
      nodeExpected = false;
    } else if (type === 'block-scalar-header') {
      nodeExpected = false;
      keyColumn = undefined;
    }
    if (newline >= 0 && flowDepth === 0) {
      // A new line: whatever starts it is a new node; a key candidate does not survive the line break.
      nodeExpected = true;
      keyColumn = undefined;
    }
  }
  return { depth: deepest, hasAlias };
}
