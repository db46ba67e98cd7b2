import { describe, expect, it } from 'vitest';
import { summarizeEventData, withoutControlCharacters } from './event-summary.ts';
import { parseEventTime } from './event-time.ts';

describe('parseEventTime', () => {
  const nowMs = Date.parse('2026-11-28T12:00:00.000Z');

  it('takes ISO 8601 times and durations back from now', () => {
    expect(parseEventTime({ text: '2026-11-28T08:00:00Z', name: 'since', nowMs })).toBe('2026-11-28T08:00:00.000Z');
    expect(parseEventTime({ text: '2026-11-27', name: 'since', nowMs })).toBe('2026-11-27T00:00:00.000Z');
    expect(parseEventTime({ text: '1h', name: 'since', nowMs })).toBe('2026-11-28T11:00:00.000Z');
    expect(parseEventTime({ text: '7d', name: 'since', nowMs })).toBe('2026-11-21T12:00:00.000Z');
    expect(parseEventTime({ text: '90s', name: 'since', nowMs })).toBe('2026-11-28T11:58:30.000Z');
  });

  it('refuses anything else with EVENT_QUERY_INVALID, quoting it and saying what is valid', () => {
    for (const text of ['yesterday', '1 hour', '12', '', '2026-13-45', 'Nov 28 2026']) {
      expect(() => parseEventTime({ text, name: '--since', nowMs })).toThrowError(
        expect.objectContaining({
          code: 'EVENT_QUERY_INVALID',
          message: expect.stringContaining(`--since: expected an ISO 8601 time`),
        }),
      );
    }
  });
});

describe('summarizeEventData', () => {
  it('shows the first values as key=value, cut to a length, with control characters replaced', () => {
    expect(summarizeEventData({ data: { from: 'anna@example.com', count: 3, empty: null } })).toBe(
      'from="anna@example.com" count=3',
    );
    const long = summarizeEventData({ data: { subject: 'x'.repeat(500), other: 'y' }, maxChars: 40 });
    expect(long.length).toBeLessThanOrEqual(40);
    expect(long.endsWith('…')).toBe(true);
    // Strings are JSON-quoted, so an escape sequence shows as its escaped text, never as the byte itself.
    expect(summarizeEventData({ data: { subject: 'a\u001b[2Jb\rc' } })).toBe('subject="a\\u001b[2Jb\\rc"');
    expect(withoutControlCharacters('a\nb\u0007c\u2028d')).toBe('a b c d');
  });
});
