import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { taskFingerprint } from './fingerprint.ts';
import { newTaskId, taskIdPattern, taskIdTimeMs } from './task-id.ts';
import { decodeTaskName, encodeTaskName, formatNameTimestamp, type TaskName } from './task-name.ts';

const word = fc.stringMatching(/^[a-z0-9][a-z0-9_-]{0,8}$/);
const taskType = fc.array(word, { minLength: 1, maxLength: 4 }).map((words) => words.join('.'));
const idAlphabet = '0123456789abcdefghjkmnpqrstvwxyz';
const taskId = fc
  .array(fc.integer({ min: 0, max: 31 }), { minLength: 26, maxLength: 26 })
  .map((digits) => digits.map((digit) => idAlphabet[digit]).join(''));
const taskName: fc.Arbitrary<TaskName> = fc.record({
  priority: fc.integer({ min: 0, max: 9 }),
  readyAtMs: fc.integer({ min: 0, max: Date.UTC(9999, 11, 31, 23, 59, 59, 999) }),
  id: taskId,
  fingerprint: fc.stringMatching(/^[0-9a-f]{16}$/),
  type: taskType,
});

describe('task names', () => {
  it('decode what they encode', () => {
    fc.assert(
      fc.property(taskName, (name) => {
        expect(decodeTaskName(encodeTaskName(name))).toEqual(name);
      }),
      { numRuns: 500 },
    );
  });

  it('sort into run order: priority, then ready time, then id', () => {
    fc.assert(
      fc.property(fc.array(taskName, { minLength: 2, maxLength: 30 }), (names) => {
        const byName = names.map(encodeTaskName).sort();
        const byFields = [...names]
          .sort(
            (left, right) =>
              left.priority - right.priority ||
              left.readyAtMs - right.readyAtMs ||
              (left.id < right.id ? -1 : left.id > right.id ? 1 : 0) ||
              (left.fingerprint < right.fingerprint ? -1 : left.fingerprint > right.fingerprint ? 1 : 0),
          )
          .map(encodeTaskName);
        // Names tie only when every field ties, so the two orders agree wherever they are defined.
        expect(byName.map((name) => name.slice(0, 50))).toEqual(byFields.map((name) => name.slice(0, 50)));
      }),
      { numRuns: 300 },
    );
  });

  it('reads as the design says', () => {
    const name = encodeTaskName({
      priority: 3,
      readyAtMs: Date.UTC(2026, 10, 22, 15, 45, 1, 123),
      id: '01m81zbz7e0rvw1d46qzvhsksj',
      fingerprint: taskFingerprint('email.inbox.check', { account: 'personal' }),
      type: 'email.inbox.check',
    });
    expect(name).toMatch(/^3_20261122T154501123Z_01m81zbz7e0rvw1d46qzvhsksj--[0-9a-f]{16}--email\.inbox\.check\.yaml$/);
  });

  it('refuses names that are not task names', () => {
    for (const fileName of [
      'garbage.yaml',
      '5_20261122T154501123Z_01m81zbz7e0rvw1d46qzvhsksj--b2ddc0673723193f--system.echo.yml',
      '5_20261131T154501123Z_01m81zbz7e0rvw1d46qzvhsksj--b2ddc0673723193f--system.echo.yaml', // 31 November
      '5_20261122T154501123Z_01m81zbz7e0rvw1d46qzvhsksi--b2ddc0673723193f--system.echo.yaml', // i is not base32
      '5_20261122T154501123Z_01m81zbz7e0rvw1d46qzvhsksj--b2ddc0673723193f--System.Echo.yaml',
      '12_20261122T154501123Z_01m81zbz7e0rvw1d46qzvhsksj--b2ddc0673723193f--system.echo.yaml',
    ]) {
      expect(decodeTaskName(fileName), fileName).toBeUndefined();
    }
  });

  it('refuses to encode fields that would break the format, saying what it got', () => {
    const base = { priority: 5, readyAtMs: 0, id: newTaskId(), fingerprint: '0123456789abcdef', type: 'a.b' };
    expect(() => encodeTaskName({ ...base, priority: 12 })).toThrow('Expected `priority` to be a digit 0-9, got `12`');
    expect(() => encodeTaskName({ ...base, type: 'A b' })).toThrow('got `A b`');
    expect(() => formatNameTimestamp(Date.UTC(10_000, 0))).toThrow(RangeError);
  });
});

describe('task ids', () => {
  it('carry their creation time and increase within one millisecond', () => {
    // A time later than any id made so far in this process: ids never go back in time, even when the clock does.
    const timeMs = Date.UTC(2100, 0, 1);
    const ids = Array.from({ length: 1000 }, () => newTaskId(timeMs));
    for (const id of ids) {
      expect(id).toMatch(taskIdPattern);
      expect(taskIdTimeMs(id)).toBe(timeMs);
    }
    expect([...ids].sort()).toEqual(ids);
    expect(new Set(ids).size).toBe(ids.length);
  });
});
