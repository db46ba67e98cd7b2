import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { matchesToolPattern, type ToolPolicy, toolVerdict } from './tool-policy.ts';

const none: ToolPolicy = { allow: [], deny: [], approve: [] };

describe('matchesToolPattern', () => {
  it.each([
    ['notes_*', 'notes_search', true],
    ['notes_*', 'notes_', true],
    ['notes_*', 'my_notes_search', false],
    ['*__write_file', 'filesystem__write_file', true],
    ['filesystem__*', 'filesystem__read_file', true],
    ['filesystem__*', 'filesystemX__read_file', false],
    ['trigger', 'trigger', true],
    ['trigger', 'trigger_all', false],
    ['*', 'anything-at-all', true],
    ['a*b*c', 'aXXbYYc', true],
    ['a*b*c', 'aXXcYYb', false],
  ])('%s matches %s: %s', (pattern, name, expected) => {
    expect(matchesToolPattern(pattern, name)).toBe(expected);
  });

  it('matches every name by itself and never a different name without *', () => {
    const name = fc.stringMatching(/^[A-Za-z0-9_-]{1,20}$/);
    fc.assert(
      fc.property(name, name, (left, right) => {
        expect(matchesToolPattern(left, left)).toBe(true);
        expect(matchesToolPattern(left, right)).toBe(left === right);
      }),
    );
  });
});

describe('toolVerdict', () => {
  it('runs read-only and soft tools and asks for irreversible ones when config says nothing', () => {
    expect(toolVerdict({ name: 'notes_search', tier: 'read_only', policy: none }).verdict).toBe('run');
    expect(toolVerdict({ name: 'propose', tier: 'soft', policy: none }).verdict).toBe('run');
    expect(toolVerdict({ name: 'fs__write', tier: 'irreversible', policy: none })).toEqual({
      verdict: 'ask',
      because: "fs__write is irreversible and config.yaml's tools.allow does not list it",
    });
  });

  it('lets allow run an irreversible tool', () => {
    const policy = { ...none, allow: ['everything__*'] };
    expect(toolVerdict({ name: 'everything__echo', tier: 'irreversible', policy })).toEqual({
      verdict: 'run',
      because: "config.yaml's tools.allow lists everything__*",
    });
  });

  it('lets approve ask even for a read-only tool, over allow', () => {
    const policy = { ...none, allow: ['*'], approve: ['trigger'] };
    expect(toolVerdict({ name: 'trigger', tier: 'read_only', policy }).verdict).toBe('ask');
  });

  it('lets deny win over approve and allow', () => {
    const policy = { allow: ['fs__*'], approve: ['fs__write'], deny: ['fs__write'] };
    expect(toolVerdict({ name: 'fs__write', tier: 'read_only', policy })).toEqual({
      verdict: 'deny',
      because: "config.yaml's tools.deny lists fs__write",
    });
  });

  it('follows deny > approve > allow > tier for every combination', () => {
    const tiers = ['read_only', 'soft', 'irreversible'] as const;
    fc.assert(
      fc.property(fc.boolean(), fc.boolean(), fc.boolean(), fc.constantFrom(...tiers), (deny, approve, allow, tier) => {
        const policy = {
          deny: deny ? ['x*'] : [],
          approve: approve ? ['*x'] : [],
          allow: allow ? ['x'] : [],
        };
        const expected = deny ? 'deny' : approve ? 'ask' : allow ? 'run' : tier === 'irreversible' ? 'ask' : 'run';
        expect(toolVerdict({ name: 'x', tier, policy }).verdict).toBe(expected);
      }),
    );
  });
});
