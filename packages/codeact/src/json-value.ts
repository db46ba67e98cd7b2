/** A value that survives JSON unchanged: what crosses the sandbox's bridge in both directions. */
export type JSONValue = null | boolean | number | string | JSONValue[] | { [key: string]: JSONValue };

/**
 * Why `value` is not JSON, naming where (`.items[2].when`), or undefined when it is. Plain objects and arrays only:
 * a function, symbol, bigint, undefined, a non-finite number (NaN would become null on the way), a class instance
 * (a Date, a Map) or a cycle is refused, so what the sandbox receives is exactly what the host meant.
 */
export function whyNotJson(value: unknown, at = '', seen = new Set<object>()): string | undefined {
  if (value === null || typeof value === 'string' || typeof value === 'boolean') return undefined;
  if (typeof value === 'number') return Number.isFinite(value) ? undefined : `${String(value)} at ${at || 'the top'}`;
  if (typeof value !== 'object') return `a ${typeof value} at ${at || 'the top'}`;
  if (seen.has(value)) return `a cycle at ${at || 'the top'}`;
  const prototype = Object.getPrototypeOf(value);
  if (!Array.isArray(value) && prototype !== Object.prototype && prototype !== null) {
    return `a ${value.constructor?.name ?? 'non-plain'} object at ${at || 'the top'}`;
  }
  seen.add(value);
  try {
    if (Array.isArray(value)) {
      for (let index = 0; index < value.length; index += 1) {
        const reason = whyNotJson(value[index], `${at}[${index}]`, seen);
        if (reason !== undefined) return reason;
      }
      return undefined;
    }
    for (const [key, item] of Object.entries(value)) {
      const reason = whyNotJson(item, `${at}.${key}`, seen);
      if (reason !== undefined) return reason;
    }
    return undefined;
  } finally {
    seen.delete(value);
  }
}
