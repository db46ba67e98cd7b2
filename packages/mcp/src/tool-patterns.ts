/**
 * True when `name` matches one of `patterns`: a tool's own name as its server calls it, `*` standing for any run of
 * characters (`read_*`, `*_file`, `*`). Everything else matches itself, case included.
 */
export function matchesToolPattern(name: string, patterns: readonly string[]): boolean {
  return patterns.some((pattern) => {
    const source = pattern
      .split('*')
      .map((part) => part.replace(/[.+?^${}()|[\]\\]/g, '\\$&'))
      .join('.*');
    return new RegExp(`^${source}$`, 's').test(name);
  });
}

/** Whether config offers a tool at all: `allow` matches it and `deny` does not. */
export function isToolAllowed(name: string, rules: { allow: readonly string[]; deny: readonly string[] }): boolean {
  return matchesToolPattern(name, rules.allow) && !matchesToolPattern(name, rules.deny);
}
