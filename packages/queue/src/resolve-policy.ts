import type { QueueConfig, QueuePolicy } from './queue-config.ts';

/**
 * The policy for a task type: the defaults, overridden by every matching pattern from the least to the most
 * specific (`*` < `service.*` < `service.research.*` < `service.research.search`), so an exact type always wins.
 */
export function resolvePolicy(policies: QueueConfig['policies'], type: string): QueuePolicy {
  const matching = Object.entries(policies.overrides)
    .filter(([pattern]) => patternMatches(pattern, type))
    .sort(([left], [right]) => specificity(left) - specificity(right));
  let policy: QueuePolicy = policies.defaults;
  for (const [, override] of matching) policy = { ...policy, ...override };
  return policy;
}

/** `*` matches one or more characters within the type, dots included: `service.*` matches `service.a.b`. */
export function patternMatches(pattern: string, type: string): boolean {
  if (!pattern.includes('*')) return pattern === type;
  const expression = pattern
    .split('*')
    .map((part) => part.replace(/[.+?^${}()|[\]\\]/g, '\\$&'))
    .join('.+');
  return new RegExp(`^${expression}$`).test(type);
}

// More literal characters is more specific; a pattern without a wildcard beats any pattern with one.
function specificity(pattern: string): number {
  const literal = pattern.replaceAll('*', '').length;
  return pattern.includes('*') ? literal : 10_000 + literal;
}
