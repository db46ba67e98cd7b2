import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { agentToolName } from './tool-names.ts';

describe('agentToolName', () => {
  it('joins server and tool with two underscores', () => {
    expect(agentToolName('files', 'read_text_file', new Set())).toBe('files__read_text_file');
  });

  it('turns characters chat APIs refuse into _', () => {
    expect(agentToolName('web', 'search.v2 (beta)', new Set())).toBe('web__search_v2__beta_');
  });

  it('cuts to 64 characters and keeps names unique with a suffix', () => {
    const taken = new Set<string>();
    const long = 'x'.repeat(100);
    const first = agentToolName('server', `${long}_a`, taken);
    const second = agentToolName('server', `${long}_b`, taken);
    expect(first).toHaveLength(64);
    expect(second).toHaveLength(64);
    expect(second.endsWith('_2')).toBe(true);
    expect(first).not.toBe(second);
  });

  it('always gives a valid, unique name', () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.string({ minLength: 1 }), fc.string({ minLength: 1 })), { maxLength: 30 }),
        (pairs) => {
          const taken = new Set<string>();
          const names = pairs.map(([server, tool]) => agentToolName(server, tool, taken));
          for (const name of names) expect(name).toMatch(/^[A-Za-z0-9_-]{1,64}$/);
          expect(new Set(names).size).toBe(names.length);
        },
      ),
    );
  });
});
