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
