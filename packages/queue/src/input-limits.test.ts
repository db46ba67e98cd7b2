import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { jsonTextNestingDepth, maxTaskNestingDepth, valueNestingDepth } from './input-limits.ts';

describe('nesting depth', () => {
  it('agrees between JSON text and the parsed value', () => {
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 8 }), (value) => {
        expect(jsonTextNestingDepth(JSON.stringify(value))).toBe(valueNestingDepth(value));
      }),
    );
  });

  it('ignores brackets inside strings, escaped quotes included', () => {
    expect(jsonTextNestingDepth(JSON.stringify({ text: '[[[{{"\\"[[' }))).toBe(1);
  });

  it('stops early on hostile input without using the stack', () => {
    const hostile = '['.repeat(5_000_000);
    expect(jsonTextNestingDepth(hostile, maxTaskNestingDepth)).toBe(maxTaskNestingDepth + 1);
    let deep: unknown = 1;
    for (let index = 0; index < 200_000; index++) deep = [deep];
    expect(valueNestingDepth(deep)).toBe(200_000);
  });
});
