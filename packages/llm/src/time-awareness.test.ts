import { describe, expect, it } from 'vitest';
import type { ChatModel, ChatRequest } from './chat-types.ts';
import { currentTimeLine, timeAwareChatModel, withCurrentTime, zonedDay } from './time-awareness.ts';

const saturdayMorning = new Date('2026-11-28T08:14:05.600Z');
const now = () => saturdayMorning;

describe('currentTimeLine', () => {
  it('says the date, time with offset, weekday and zone', () => {
    expect(currentTimeLine(saturdayMorning, 'Europe/Berlin')).toBe(
      'Current time: 2026-11-28T09:14:05+01:00 (Saturday), time zone Europe/Berlin.',
    );
    expect(currentTimeLine(saturdayMorning, 'America/New_York')).toBe(
      'Current time: 2026-11-28T03:14:05-05:00 (Saturday), time zone America/New_York.',
    );
    expect(currentTimeLine(saturdayMorning, 'Asia/Kolkata')).toBe(
      'Current time: 2026-11-28T13:44:05+05:30 (Saturday), time zone Asia/Kolkata.',
    );
    expect(currentTimeLine(saturdayMorning, 'UTC')).toBe(
      'Current time: 2026-11-28T08:14:05+00:00 (Saturday), time zone UTC.',
    );
  });

  it('follows daylight saving time and the owner’s midnight', () => {
    expect(currentTimeLine(new Date('2026-07-01T22:30:00Z'), 'Europe/Berlin')).toBe(
      'Current time: 2026-07-02T00:30:00+02:00 (Thursday), time zone Europe/Berlin.',
    );
    expect(zonedDay(new Date('2026-07-01T22:30:00Z'), 'Europe/Berlin')).toBe('2026-07-02');
    expect(zonedDay(new Date('2026-07-01T22:30:00Z'), 'UTC')).toBe('2026-07-01');
  });
});

describe('withCurrentTime', () => {
  const options = { timeZone: 'Europe/Berlin', now };

  it('appends the line last in the first system message, leaving the input unchanged', () => {
    const messages = [
      { role: 'system' as const, content: 'You sort mail.' },
      { role: 'user' as const, content: 'Hi' },
      { role: 'system' as const, content: 'second' },
    ];
    expect(withCurrentTime(messages, options)).toEqual([
      {
        role: 'system',
        content: 'You sort mail.\n\nCurrent time: 2026-11-28T09:14:05+01:00 (Saturday), time zone Europe/Berlin.',
      },
      { role: 'user', content: 'Hi' },
      { role: 'system', content: 'second' },
    ]);
    expect(messages[0]?.content).toBe('You sort mail.');
  });

  it('adds a system message when there is none', () => {
    expect(withCurrentTime([{ role: 'user', content: 'Hi' }], options)).toEqual([
      { role: 'system', content: 'Current time: 2026-11-28T09:14:05+01:00 (Saturday), time zone Europe/Berlin.' },
      { role: 'user', content: 'Hi' },
    ]);
  });

  it('replaces a line an earlier request left rather than stacking two', () => {
    const once = withCurrentTime([{ role: 'system', content: 'Be brief.' }], {
      timeZone: 'UTC',
      now: () => new Date('2026-01-01T00:00:00Z'),
    });
    const twice = withCurrentTime(once, options);
    expect(twice[0]?.content).toBe(
      'Be brief.\n\nCurrent time: 2026-11-28T09:14:05+01:00 (Saturday), time zone Europe/Berlin.',
    );
  });

  it('shows a user message’s time in the owner’s zone, and drops `at` once shown', () => {
    const shown = withCurrentTime(
      [
        { role: 'user', content: 'Remind me tomorrow', at: '2026-11-20T21:30:00Z' },
        { role: 'assistant', content: 'Will do.', at: '2026-11-20T21:30:04Z' },
        { role: 'user', content: 'no time' },
      ],
      options,
    );
    expect(shown.slice(1)).toEqual([
      { role: 'user', content: '[2026-11-20 22:30] Remind me tomorrow' },
      { role: 'assistant', content: 'Will do.', at: '2026-11-20T21:30:04Z' },
      { role: 'user', content: 'no time' },
    ]);
  });
});

describe('timeAwareChatModel', () => {
  it('sends every request with the time line and keeps the model’s own properties', async () => {
    const seen: ChatRequest[] = [];
    const model: ChatModel & { capabilities: { tools: boolean } } = {
      name: 'fast',
      model: 'm',
      provider: 'anthropic',
      contextWindow: 1000,
      capabilities: { tools: true },
      async chat(request) {
        seen.push(request);
        return { message: { role: 'assistant', content: 'ok', toolCalls: [] }, finishReason: 'stop', model: 'm' };
      },
    };
    const wrapped = timeAwareChatModel(model, options());
    expect(wrapped.capabilities).toEqual({ tools: true });
    expect([wrapped.name, wrapped.provider, wrapped.contextWindow]).toEqual(['fast', 'anthropic', 1000]);
    await wrapped.chat({ messages: [{ role: 'user', content: 'Hi' }] });
    expect(seen[0]?.messages[0]).toEqual({
      role: 'system',
      content: 'Current time: 2026-11-28T08:14:05+00:00 (Saturday), time zone UTC.',
    });
  });
});

function options() {
  return { timeZone: 'UTC', now };
}
