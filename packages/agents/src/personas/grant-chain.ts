import { matchesToolPattern } from '@assistant/actions';
import type { GrantChain, GrantLayer, Persona } from '../persona-types.ts';

/** What the grants say about one tool: it runs, it runs after the owner approves, or it is refused (and why). */
export type GrantVerdict =
  | { verdict: 'run' }
  | { verdict: 'ask'; because: string }
  | { verdict: 'deny'; because: string };

/**
 * A persona's own layer. What `tools.approve` names is granted too (its calls wait for the owner), as in config.yaml's
 * `tools:`: a persona listing `approve: [send_reply]` and no `allow` means "send_reply, after I approve", not "never".
 */
function personaLayer(persona: Persona): GrantLayer {
  return {
    by: `persona ${persona.name}`,
    allow: [...new Set([...persona.tools.allow, ...persona.tools.approve])],
    deny: [...persona.tools.deny],
  };
}

/** The grant chain of a loop that no one spawned: its persona's grants, one layer. */
export function rootGrantChain(persona: Persona): GrantChain {
  return { layers: [personaLayer(persona)], approve: [...persona.tools.approve] };
}

/**
 * The grant chain a child gets when `parent` (running under `parentChain`) spawns it as `child`: the parent's layers,
 * the parent's `delegable`, then the child persona's own grants. Fixed at spawn: editing a persona later changes new
 * spawns, never a running child.
 */
export function childGrantChain(parentChain: GrantChain, parent: Persona, child: Persona): GrantChain {
  return {
    layers: [
      ...parentChain.layers.map((layer) => ({ by: layer.by, allow: [...layer.allow], deny: [...layer.deny] })),
      { by: `delegable of persona ${parent.name}`, allow: [...parent.delegable], deny: [] },
      personaLayer(child),
    ],
    approve: [...new Set([...parentChain.approve, ...child.tools.approve])],
  };
}

/** Whether a loop under `chain` may call `toolName`: every layer must allow it; any `approve` makes it ask. */
export function grantVerdict(chain: GrantChain, toolName: string): GrantVerdict {
  for (const layer of chain.layers) {
    const denied = layer.deny.find((pattern) => matchesToolPattern(pattern, toolName));
    if (denied !== undefined) return { verdict: 'deny', because: `${layer.by} denies ${denied}` };
    if (!layer.allow.some((pattern) => matchesToolPattern(pattern, toolName))) {
      return {
        verdict: 'deny',
        because: layer.allow.length === 0 ? `${layer.by} grants no tools` : `${layer.by} does not grant ${toolName}`,
      };
    }
  }
  const approve = chain.approve.find((pattern) => matchesToolPattern(pattern, toolName));
  if (approve !== undefined) return { verdict: 'ask', because: `a persona's tools.approve lists ${approve}` };
  return { verdict: 'run' };
}

/** Whether `chain` lets `toolName` through at all (run or ask). */
export function grants(chain: GrantChain, toolName: string): boolean {
  return grantVerdict(chain, toolName).verdict !== 'deny';
}
