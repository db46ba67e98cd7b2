import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { canonicalJson, taskFingerprint } from './fingerprint.ts';

// Rebuilds an object with its keys in reverse order at every depth.
function reverseKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(reverseKeys);
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(
    Object.entries(value)
      .reverse()
      .map(([key, member]) => [key, reverseKeys(member)]),
  );
}

describe('taskFingerprint', () => {
  it('does not depend on the key order of the payload', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (payload) => {
        expect(taskFingerprint('a.b', reverseKeys(payload))).toBe(taskFingerprint('a.b', payload));
      }),
      { numRuns: 300 },
    );
  });

  it('differs by type and by payload', () => {
    expect(taskFingerprint('a.b', { x: 1 })).not.toBe(taskFingerprint('a.c', { x: 1 }));
    expect(taskFingerprint('a.b', { x: 1 })).not.toBe(taskFingerprint('a.b', { x: 2 }));
    expect(taskFingerprint('a.b', [1, 2])).not.toBe(taskFingerprint('a.b', [2, 1]));
    expect(taskFingerprint('a.b', undefined)).toBe(taskFingerprint('a.b', null));
    expect(taskFingerprint('a.b', null)).toMatch(/^[0-9a-f]{16}$/);
  });

  it('serialises canonically', () => {
    expect(canonicalJson({ b: [1, { d: 1, c: 2 }], a: 'x', skipped: undefined })).toBe(
      '{"a":"x","b":[1,{"c":2,"d":1}]}',
    );
  });
});
