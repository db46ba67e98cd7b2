import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { jsonTextNestingDepth, maxTaskNestingDepth, valueNestingDepth, yamlTextNestingDepth } from './input-limits.ts';

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

describe('yamlTextNestingDepth', () => {
  // Strings that YAML must quote, fold or write as block scalars: leading spaces, newlines, indicators, brackets.
  const awkwardString = fc.oneof(
    fc.string(),
    fc
      .array(
        fc.constantFrom(
          ' ',
          '  ',
          '\n',
          '- ',
          ': ',
          '? ',
          '[',
          ']',
          '{',
          '}',
          '#',
          '|',
          '>',
          '"',
          "'",
          'x',
          '&a',
          '*a',
          '!t',
        ),
        {
          maxLength: 12,
        },
      )
      .map((parts) => parts.join('')),
  );
  const awkwardJson = fc.letrec<{ value: unknown }>((tie) => ({
    value: fc.oneof(
      { depthSize: 'small', withCrossShrink: true },
      fc.oneof(awkwardString, fc.integer(), fc.boolean(), fc.constant(null)),
      fc.array(tie('value'), { maxLength: 3 }),
      fc.dictionary(awkwardString, tie('value'), { maxKeys: 3 }),
    ),
  })).value;

  it('hole 17: measures exactly the depth of what the task writer produces', () => {
    fc.assert(
      fc.property(awkwardJson, (value) => {
        const text = stringify({ payload: value }, { lineWidth: 0, aliasDuplicateObjects: false });
        expect(yamlTextNestingDepth(text)).toBe(valueNestingDepth({ payload: value }));
      }),
      { numRuns: 300 },
    );
  });

  it('hole 17: counts hand-written block, compact and flow nesting, and stops early', () => {
    expect(yamlTextNestingDepth('a: 1\n')).toBe(1);
    expect(yamlTextNestingDepth('a:\n- b: [1, {c: 2}]\n')).toBe(5);
    expect(yamlTextNestingDepth('? - a\n: - - b\n')).toBe(3);
    expect(yamlTextNestingDepth('a: |\n  - - - - not nesting\n  [[[[\nb: "[[["\n# [[[[\n')).toBe(1);
    expect(yamlTextNestingDepth(`${'- '.repeat(200_000)}x`, maxTaskNestingDepth)).toBe(maxTaskNestingDepth + 1);
  });
});
