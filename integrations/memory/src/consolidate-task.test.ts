import { describe, expect, it } from 'vitest';
import { learned } from './consolidate-task.ts';

describe("memory.consolidate's human-log line", () => {
  it('says what was learned in counts and contact names, never the text of a fact', () => {
    expect(
      learned('email/personal/2026/11/m-1.md', {
        contacts: { created: [{ name: 'Bob Stone', slug: 'bob-stone' }], observed: ['alice-martin'] },
        facts: { created: [{ statement: 'a secret plan' }], superseded: 1, refused: 0 },
        tasks: { created: 2 },
      }),
    ).toBe(
      'memory from email/personal/2026/11/m-1.md: new contact Bob Stone; seen again alice-martin; 1 fact; 1 superseded; 2 follow-ups',
    );
    expect(learned('chats/c-1.md#m-2', {})).toBe('memory from chats/c-1.md#m-2: 0 facts; 0 follow-ups');
    expect(learned('x', { facts: { created: 0, refused: 2 } })).toContain('2 supersede refused (owner facts)');
  });
});
