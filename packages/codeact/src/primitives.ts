import type { JSONValue } from './json-value.ts';

/** One call a cell makes to a primitive, as the host side receives it. */
export interface PrimitiveCall {
  /** The primitive's name in the sandbox, e.g. `['email', 'search']` for `tools.email.search`. */
  path: readonly string[];
  /** The arguments, checked to be JSON inside the sandbox and copied out as JSON text. */
  args: JSONValue[];
  /**
   * The call's position in the cell (0 for its first call, in the order the cell made them): what a durable call
   * log keys on, so that a cell run again can be answered from the log.
   */
  index: number;
  /** Aborted when the cell ends for any reason (done, deadline, abort): stop the work, its answer is not read. */
  signal: AbortSignal;
}

/**
 * The host side of a primitive. Its resolved value must be JSON (anything else is refused and the cell's call
 * rejects); a rejection reaches the cell as a `PrimitiveError` with the error's message.
 */
export type PrimitiveHandler = (call: PrimitiveCall) => Promise<JSONValue>;

/** The namespace a cell sees as `tools`: nested names, each leaf a primitive. */
export interface Primitives {
  readonly [name: string]: Primitives | PrimitiveHandler;
}

export interface FlatPrimitive {
  path: string[];
  handler: PrimitiveHandler;
}

const namePattern = /^[A-Za-z_$][\w$]*$/;

/** The leaves of `primitives` in a stable order, or why a name cannot be one (an identifier, not `__proto__`). */
export function flattenPrimitives(
  primitives: Primitives,
  prefix: string[] = [],
): { ok: true; flat: FlatPrimitive[] } | { ok: false; message: string } {
  const flat: FlatPrimitive[] = [];
  for (const [name, entry] of Object.entries(primitives)) {
    const path = [...prefix, name];
    if (!namePattern.test(name) || name === '__proto__') {
      return {
        ok: false,
        message: `primitive name \`${path.join('.')}\` is not usable: each part must be an identifier (letters, digits, _ or $) other than __proto__`,
      };
    }
    if (typeof entry === 'function') {
      flat.push({ path, handler: entry });
    } else if (typeof entry === 'object' && entry !== null) {
      const nested = flattenPrimitives(entry, path);
      if (!nested.ok) return nested;
      flat.push(...nested.flat);
    } else {
      return {
        ok: false,
        message: `primitive \`${path.join('.')}\` is a ${typeof entry}, expected a function or a namespace`,
      };
    }
  }
  return { ok: true, flat };
}

/**
 * The nested namespace a cell sees as `tools`, one leaf per path, each the handler `leaf` gives it. Namespaces have no
 * prototype, so a path such as `['x', 'constructor']` or a namespace named `valueOf` is the tool, never `Object`'s own.
 */
export function namespaceOfPaths<T>(
  entries: readonly T[],
  pathOf: (entry: T) => readonly string[],
  leaf: (entry: T) => PrimitiveHandler,
): Primitives {
  interface Namespace {
    [name: string]: Namespace | PrimitiveHandler;
  }
  const root: Namespace = Object.create(null);
  for (const entry of entries) {
    const path = pathOf(entry);
    let namespace = root;
    for (const segment of path.slice(0, -1)) {
      const existing = Object.hasOwn(namespace, segment) ? namespace[segment] : undefined;
      if (typeof existing === 'object') namespace = existing;
      else {
        const created: Namespace = Object.create(null);
        namespace[segment] = created;
        namespace = created;
      }
    }
    const name = path.at(-1);
    if (name !== undefined) namespace[name] = leaf(entry);
  }
  return root;
}
