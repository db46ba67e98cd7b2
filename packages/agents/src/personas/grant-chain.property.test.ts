// 0 escalations: over random persona trees, no loop can call a tool its parent could not call and delegate, or that
// its own persona does not grant, and an `approve` anywhere on the way down is never lost. The oracle below is written
// from the rules in docs/agents.md ("Personas"), not from grant-chain.ts, and has its own glob matcher.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { GrantChain, Persona } from '../persona-types.ts';
import { childGrantChain, grants, grantVerdict, rootGrantChain } from './grant-chain.ts';

const toolNames = ['read_note', 'search_notes', 'spawn_agent', 'files__read', 'files__write', 'send_reply', 'other'];
const patterns = [...toolNames.slice(0, -1), '*', 'files__*', '*_notes', 'read_*', 's*', '*__*', 'nothing'];

/** `*` is any run of characters, by recursion over the two strings (no regular expressions, unlike the code). */
function globMatches(pattern: string, name: string): boolean {
  if (pattern === '') return name === '';
  if (pattern[0] === '*') {
    for (let skip = 0; skip <= name.length; skip++) if (globMatches(pattern.slice(1), name.slice(skip))) return true;
    return false;
  }
  return name !== '' && pattern[0] === name[0] && globMatches(pattern.slice(1), name.slice(1));
}

const any = (list: readonly string[], name: string) => list.some((pattern) => globMatches(pattern, name));

/** What a persona grants by itself: an allow or approve pattern matches, and no deny pattern does. */
const ownGrant = (persona: Persona, name: string) =>
  (any(persona.tools.allow, name) || any(persona.tools.approve, name)) && !any(persona.tools.deny, name);

interface TreeNode {
  persona: Persona;
  children: TreeNode[];
}

const patternList = fc.uniqueArray(fc.constantFrom(...patterns), { maxLength: 4 });
let counter = 0;
const personaArbitrary = fc
  .record({ allow: patternList, deny: patternList, approve: patternList, delegable: patternList })
  .map(
    ({ allow, deny, approve, delegable }): Persona => ({
      name: `p${counter++}`,
      source: 'property test',
      instructions: 'x',
      tools: { allow, deny, approve },
      delegable,
      mcpServers: [],
      maxDepth: 3,
      maxChildren: 5,
      budget: { maxSteps: 20 },
    }),
  );

/** A persona tree at most `depth` levels below its root, each loop with up to 3 children. */
function treeOf(depth: number): fc.Arbitrary<TreeNode> {
  if (depth === 0) return personaArbitrary.map((persona) => ({ persona, children: [] }));
  return fc.record({ persona: personaArbitrary, children: fc.array(treeOf(depth - 1), { maxLength: 3 }) });
}
// Depth up to 4 below the root (a root at depth 0 and its great-great-grandchildren).
const treeArbitrary = fc.integer({ min: 0, max: 4 }).chain(treeOf);

interface Visited {
  chain: GrantChain;
  /** The personas from the root down to this loop, itself last. */
  path: Persona[];
  parent?: { chain: GrantChain; persona: Persona };
}

function visit(node: TreeNode, into: Visited[], parent?: { chain: GrantChain; path: Persona[] }): void {
  const parentPersona = parent?.path.at(-1);
  const chain =
    parent && parentPersona ? childGrantChain(parent.chain, parentPersona, node.persona) : rootGrantChain(node.persona);
  const path = [...(parent?.path ?? []), node.persona];
  into.push({
    chain,
    path,
    ...(parent && parentPersona ? { parent: { chain: parent.chain, persona: parentPersona } } : {}),
  });
  for (const child of node.children) visit(child, into, { chain, path });
}

describe('grant chains over random persona trees', () => {
  it('never grants a child a tool its parent could not call and delegate, or its own persona does not grant', () => {
    let checkedChildren = 0;
    fc.assert(
      fc.property(treeArbitrary, (tree) => {
        const loops: Visited[] = [];
        visit(tree, loops);
        for (const loop of loops) {
          for (const name of toolNames) {
            const granted = grants(loop.chain, name);
            const self = loop.path.at(-1) as Persona;
            if (loop.parent === undefined) {
              // A root loop has exactly its persona's grants.
              expect(granted).toBe(ownGrant(self, name));
              continue;
            }
            checkedChildren++;
            const expected =
              grants(loop.parent.chain, name) && any(loop.parent.persona.delegable, name) && ownGrant(self, name);
            // Granted exactly when all three hold: "if" is the 0 escalations, "only if" that nothing is lost.
            expect(granted).toBe(expected);
            if (granted) {
              // By induction, every persona on the way up grants it, and every parent delegates it.
              for (const [index, persona] of loop.path.entries()) {
                expect(ownGrant(persona, name)).toBe(true);
                if (index < loop.path.length - 1) expect(any(persona.delegable, name)).toBe(true);
              }
            }
          }
        }
      }),
      { numRuns: 300 },
    );
    // The trees did have children (a generator stuck at roots would make the test vacuous).
    expect(checkedChildren).toBeGreaterThan(0);
  });

  it("makes a granted tool 'ask' exactly when a persona on the way down lists it under approve", () => {
    fc.assert(
      fc.property(treeArbitrary, (tree) => {
        const loops: Visited[] = [];
        visit(tree, loops);
        for (const loop of loops) {
          for (const name of toolNames) {
            const verdict = grantVerdict(loop.chain, name).verdict;
            if (verdict === 'deny') continue;
            const asked = loop.path.some((persona) => any(persona.tools.approve, name));
            expect(verdict).toBe(asked ? 'ask' : 'run');
          }
        }
      }),
      { numRuns: 300 },
    );
  });

  it('gives the same verdicts to a chain and to its copy: a chain fixed at spawn is not changed by later spawns', () => {
    fc.assert(
      fc.property(personaArbitrary, personaArbitrary, personaArbitrary, (root, child, grandchild) => {
        const rootChain = rootGrantChain(root);
        const before = toolNames.map((name) => grantVerdict(rootChain, name));
        const childChain = childGrantChain(rootChain, root, child);
        childGrantChain(childChain, child, grandchild);
        expect(toolNames.map((name) => grantVerdict(rootChain, name))).toEqual(before);
        expect(rootChain.layers).toHaveLength(1);
        expect(childChain.layers).toHaveLength(3);
      }),
    );
  });
});
