import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { encodeTaskName } from '../task-name.ts';
import { PendingIndex } from './pending-index.ts';

const types = ['email.inbox.check', 'email.inbox.classify', 'github.issues.act'] as const;
const baseMs = Date.parse('2026-11-22T00:00:00.000Z');

const taskName = fc.record({
  priority: fc.integer({ min: 0, max: 9 }),
  readyAtMs: fc.integer({ min: baseMs, max: baseMs + 10_000 }),
  id: fc.stringMatching(/^[0-9a-hjkmnp-tv-z]{26}$/),
  fingerprint: fc.constant('0000000000000000'),
  type: fc.constantFrom(...types),
});

describe('PendingIndex', () => {
  it('takes what sorting the accepted, ready names would give, and counts each type', () => {
    fc.assert(
      fc.property(
        fc.uniqueArray(taskName, { selector: (name) => name.id, maxLength: 40 }),
        fc.subarray([...types]),
        fc.integer({ min: baseMs, max: baseMs + 10_000 }),
        (names, accepted, nowMs) => {
          const index = new PendingIndex();
          const fileNames = names.map(encodeTaskName);
          index.reset(fileNames);
          for (const type of types) {
            expect(index.count(type)).toBe(names.filter((name) => name.type === type).length);
          }
          const accept = (type: string) => (accepted as string[]).includes(type);
          const expected = names
            .filter((name) => accept(name.type) && name.readyAtMs <= nowMs)
            .map(encodeTaskName)
            .sort();
          const taken: string[] = [];
          for (;;) {
            const next = index.takeReady(nowMs, accept);
            if (next === undefined) break;
            taken.push(next);
          }
          // Names sort into run order: priority digit, ready time, id.
          expect(taken).toEqual(expected);
          expect(index.size).toBe(names.length - expected.length);
          const left = names.filter((name) => !expected.includes(encodeTaskName(name)));
          const earliest = left.filter((name) => accept(name.type)).map((name) => name.readyAtMs);
          expect(index.nextReadyAtMs(accept)).toBe(earliest.length > 0 ? Math.min(...earliest) : undefined);
          for (const type of types) {
            expect(index.count(type)).toBe(left.filter((name) => name.type === type).length);
          }
        },
      ),
    );
  });

  it('holds one name per task id, the later version, and hands the other over to be removed', () => {
    const id = '01m81zbz7e0rvw1d46qzvhsksj';
    const name = { priority: 5, readyAtMs: baseMs, id, fingerprint: '0000000000000000', type: 'email.inbox.check' };
    const first = encodeTaskName(name);
    const copy = encodeTaskName({ ...name, readyAtMs: baseMs + 1 });
    const other = encodeTaskName({ ...name, id: '01m81zbz7e0rvw1d46qzvhsksk' });
    const index = new PendingIndex();
    index.reset([first, other]);
    expect(index.add(copy)).toBe(true);
    expect(index.add(first)).toBe(false);
    expect(index.takeSuperseded()).toEqual([first, first]);
    expect(index.count('email.inbox.check')).toBe(2);
    const taken = [index.takeReady(baseMs + 10), index.takeReady(baseMs + 10), index.takeReady(baseMs + 10)];
    expect(taken).toEqual([other, copy, undefined]);
    // A listing that holds both keeps the later one too, whatever the order.
    index.reset([copy, first]);
    expect(index.takeSuperseded()).toEqual([first]);
    expect(index.takeReady(baseMs + 10)).toBe(copy);
    expect(index.takeReady(baseMs + 10)).toBeUndefined();
  });
});
