/** What calling a tool can do, as agent tools declare it (`@assistant/agent`'s ToolTier). */
export const toolTiers = ['read_only', 'soft', 'irreversible'] as const;
export type ToolTier = (typeof toolTiers)[number];

/** What config.yaml's `tools:` says about agent tool calls (the normalised `config.tools`, patterns as written). */
export interface ToolPolicy {
  /** Run without asking, whatever the tier. */
  allow: readonly string[];
  /** Never run: refused with a reason the model reads. */
  deny: readonly string[];
  /** Always ask the owner first, even read-only tools. */
  approve: readonly string[];
}

/** What the gate does with one call, and why, in words for the model, the approval note and the human log. */
export type ToolVerdict =
  | { verdict: 'run'; because: string }
  | { verdict: 'ask'; because: string }
  | { verdict: 'deny'; because: string };

/**
 * Whether `pattern` matches the whole of `name`, `*` standing for any run of characters (none included). Patterns
 * hold only letters, digits, `_`, `-` and `*` (config validates them), so nothing else is special.
 */
export function matchesToolPattern(pattern: string, name: string): boolean {
  const source = pattern
    .split('*')
    .map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
    .join('.*');
  return new RegExp(`^${source}$`).test(name);
}

/**
 * The gate's decision table: deny > approve > allow > tier (read_only and soft run, irreversible asks). A tool the
 * owner both allows and denies is denied: the narrower intent wins, and refusing is the safe side.
 */
export function toolVerdict(options: { name: string; tier: ToolTier; policy: ToolPolicy }): ToolVerdict {
  const { name, tier, policy } = options;
  const first = (patterns: readonly string[]) => patterns.find((pattern) => matchesToolPattern(pattern, name));
  const denied = first(policy.deny);
  if (denied !== undefined) return { verdict: 'deny', because: `config.yaml's tools.deny lists ${denied}` };
  const approve = first(policy.approve);
  if (approve !== undefined) {
    return { verdict: 'ask', because: `config.yaml's tools.approve lists ${approve}` };
  }
  const allowed = first(policy.allow);
  if (allowed !== undefined) return { verdict: 'run', because: `config.yaml's tools.allow lists ${allowed}` };
  if (tier === 'irreversible') {
    return { verdict: 'ask', because: `${name} is irreversible and config.yaml's tools.allow does not list it` };
  }
  return { verdict: 'run', because: `${name} is ${tier.replace('_', '-')}` };
}
