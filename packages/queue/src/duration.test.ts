import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { formatDuration, parseDuration } from './duration.ts';

describe('parseDuration', () => {
  it('reads the units people write', () => {
    expect(parseDuration('250ms')).toBe(250);
    expect(parseDuration('30s')).toBe(30_000);
    expect(parseDuration('30m')).toBe(1_800_000);
    expect(parseDuration('2h')).toBe(7_200_000);
    expect(parseDuration('1d')).toBe(86_400_000);
    expect(parseDuration('1w')).toBe(604_800_000);
    expect(parseDuration('1h30m')).toBe(5_400_000);
    expect(parseDuration('1.5h')).toBe(5_400_000);
  });

  it('refuses text without a unit or with an unknown one', () => {
    for (const text of ['30', '30x', '', 'm', '1h 30m', '-5m', '30 minutes', '1e3s']) {
      expect(parseDuration(text), text).toBeUndefined();
    }
  });

  it('formats any whole number of milliseconds so that it parses back', () => {
    fc.assert(
      fc.property(fc.nat({ max: 10 * 365 * 86_400_000 }), (ms) => {
        expect(parseDuration(formatDuration(ms))).toBe(ms);
      }),
    );
    expect(formatDuration(2_592_000_000)).toBe('30d');
    expect(formatDuration(5_400_000)).toBe('1h30m');
  });
});
