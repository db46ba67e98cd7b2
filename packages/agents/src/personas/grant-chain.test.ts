import { describe, expect, it } from 'vitest';
import type { Persona, ToolGrants } from '../persona-types.ts';
import { childGrantChain, grants, grantVerdict, rootGrantChain } from './grant-chain.ts';

function persona(name: string, tools: Partial<ToolGrants>, delegable: string[] = []): Persona {
  return {
    name,
    source: 'test',
    instructions: name,
    tools: { allow: [], deny: [], approve: [], ...tools },
    delegable,
    mcpServers: [],
    maxDepth: 3,
    maxChildren: 5,
    budget: { maxSteps: 20 },
  };
}

describe('rootGrantChain', () => {
  it("runs what the persona allows and refuses the rest, naming the persona's layer", () => {
    const chain = rootGrantChain(persona('manager', { allow: ['read_note', 'files__*'], deny: ['files__write'] }));
    expect(grantVerdict(chain, 'read_note')).toEqual({ verdict: 'run' });
    expect(grantVerdict(chain, 'files__read')).toEqual({ verdict: 'run' });
    expect(grantVerdict(chain, 'files__write')).toEqual({
      verdict: 'deny',
      because: 'persona manager denies files__write',
    });
    expect(grantVerdict(chain, 'send_reply')).toEqual({
      verdict: 'deny',
      because: 'persona manager does not grant send_reply',
    });
  });

  it('grants nothing to a persona without tools, and says so', () => {
    expect(grantVerdict(rootGrantChain(persona('quiet', {})), 'read_note')).toEqual({
      verdict: 'deny',
      because: 'persona quiet grants no tools',
    });
  });

  it('grants what approve names, each call asking the owner; deny still wins', () => {
    const chain = rootGrantChain(persona('mailer', { allow: ['read_note'], approve: ['send_*'], deny: ['send_fax'] }));
    expect(grantVerdict(chain, 'send_reply')).toEqual({
      verdict: 'ask',
      because: "a persona's tools.approve lists send_*",
    });
    expect(grantVerdict(chain, 'send_fax').verdict).toBe('deny');
    expect(grantVerdict(chain, 'read_note').verdict).toBe('run');
  });
});

describe('childGrantChain', () => {
  const manager = persona('manager', { allow: ['read_note', 'search_notes', 'send_reply'] }, ['read_*', 'send_reply']);

  it("gives a child only what it grants itself, within the parent's delegable and the parent's own grants", () => {
    const researcher = persona('researcher', { allow: ['*'] });
    const chain = childGrantChain(rootGrantChain(manager), manager, researcher);
    expect(grants(chain, 'read_note')).toBe(true);
    // The manager may search, but does not hand it on.
    expect(grantVerdict(chain, 'search_notes')).toEqual({
      verdict: 'deny',
      because: 'delegable of persona manager does not grant search_notes',
    });
    // `read_*` is delegable, but the manager itself has no read_file to hand on.
    expect(grantVerdict(chain, 'read_file')).toEqual({
      verdict: 'deny',
      because: 'persona manager does not grant read_file',
    });
  });

  it("refuses what the child's persona does not grant, even when the parent delegates it", () => {
    const reader = persona('reader', { allow: ['read_note'] });
    const chain = childGrantChain(rootGrantChain(manager), manager, reader);
    expect(grantVerdict(chain, 'send_reply')).toEqual({
      verdict: 'deny',
      because: 'persona reader does not grant send_reply',
    });
  });

  it('refuses everything to the child of a parent that delegates nothing', () => {
    const stingy = persona('stingy', { allow: ['*'] });
    const chain = childGrantChain(rootGrantChain(stingy), stingy, persona('child', { allow: ['*'] }));
    expect(grantVerdict(chain, 'read_note')).toEqual({
      verdict: 'deny',
      because: 'delegable of persona stingy grants no tools',
    });
  });

  it("keeps an ancestor's approve: a grandchild's call of it asks the owner", () => {
    const careful = persona('careful', { allow: ['*'], approve: ['send_reply'] }, ['*']);
    const middle = persona('middle', { allow: ['*'] }, ['*']);
    const leaf = persona('leaf', { allow: ['send_reply'] });
    const middleChain = childGrantChain(rootGrantChain(careful), careful, middle);
    const leafChain = childGrantChain(middleChain, middle, leaf);
    expect(grantVerdict(leafChain, 'send_reply').verdict).toBe('ask');
    expect(leafChain.layers.map((layer) => layer.by)).toEqual([
      'persona careful',
      'delegable of persona careful',
      'persona middle',
      'delegable of persona middle',
      'persona leaf',
    ]);
  });

  it('is fixed at spawn: changing a persona afterwards changes no chain made from it', () => {
    const parent = persona('parent', { allow: ['read_note'] }, ['read_note']);
    const child = persona('child', { allow: ['read_note'] });
    const chain = childGrantChain(rootGrantChain(parent), parent, child);
    parent.tools.allow.push('send_reply');
    parent.delegable.push('send_reply');
    child.tools.allow.push('send_reply');
    expect(grants(chain, 'send_reply')).toBe(false);
  });
});
