import { describe, expect, it } from 'vitest';
import type { ChatMessage } from '../chat-types.ts';
import { assertGeminiSchema } from './gemini-schema.ts';
import { historyForProvider, missingToolResult } from './provider-switch.ts';

const longId = 'toolu_01:ABC/def.with-a-suffix-far-longer-than-forty-characters-0123456789';

const history: ChatMessage[] = [
  { role: 'system', content: 'Be brief.' },
  { role: 'user', content: 'find x' },
  {
    role: 'assistant',
    content: 'Looking.',
    reasoning: [
      { provider: 'anthropic', text: 'claude thinks', signature: 'a-sig' },
      { provider: 'google', text: 'gemini thinks', signature: 'g-sig' },
    ],
    toolCalls: [
      { id: longId, name: 'lookup', arguments: '{"q":"x"}', signature: { provider: 'google', value: 'g-call' } },
      { id: 'call_ok', name: 'lookup', arguments: '{"q":"y"}' },
    ],
  },
  { role: 'tool', toolCallId: longId, content: 'x found' },
  { role: 'tool', toolCallId: 'not-a-call-here', content: 'orphan' },
  { role: 'assistant', content: 'Done.' },
];

describe('historyForProvider', () => {
  it('keeps only the target provider reasoning and signatures', () => {
    const forAnthropic = historyForProvider('anthropic', history);
    const assistant = forAnthropic[2] as Extract<ChatMessage, { role: 'assistant' }>;
    expect(assistant.reasoning).toEqual([{ provider: 'anthropic', text: 'claude thinks', signature: 'a-sig' }]);
    expect(assistant.toolCalls?.[0]?.signature).toBeUndefined();

    const forGoogle = historyForProvider('google', history)[2] as Extract<ChatMessage, { role: 'assistant' }>;
    expect(forGoogle.reasoning).toEqual([{ provider: 'google', text: 'gemini thinks', signature: 'g-sig' }]);
    expect(forGoogle.toolCalls?.[0]?.signature).toEqual({ provider: 'google', value: 'g-call' });

    const forOpenAi = historyForProvider('openai', history)[2] as Extract<ChatMessage, { role: 'assistant' }>;
    expect(forOpenAi.reasoning).toBeUndefined();
    expect(forOpenAi.content).toBe('Looking.');
  });

  it('rewrites ids every provider would refuse, the same way for the call and its result, and keeps good ones', () => {
    const converted = historyForProvider('openai', history);
    const assistant = converted[2] as Extract<ChatMessage, { role: 'assistant' }>;
    const rewritten = assistant.toolCalls?.[0]?.id ?? '';
    expect(rewritten).toMatch(/^[a-zA-Z0-9_-]{1,40}$/);
    expect(rewritten).not.toBe(longId);
    expect(assistant.toolCalls?.[1]?.id).toBe('call_ok');
    expect(converted[3]).toEqual({ role: 'tool', toolCallId: rewritten, content: 'x found' });
    // Deterministic: the same history converts the same way on every turn (and for the prompt cache).
    expect(historyForProvider('anthropic', history)).toEqual(historyForProvider('anthropic', history));
  });

  it('drops a result without its call and pairs a call without its result', () => {
    const converted = historyForProvider('anthropic', history);
    expect(converted.map((message) => (message.role === 'tool' ? `tool:${message.content}` : message.role))).toEqual([
      'system',
      'user',
      'assistant',
      'tool:x found',
      `tool:${missingToolResult}`,
      'assistant',
    ]);
    expect(converted[4]).toMatchObject({ toolCallId: 'call_ok' });
  });

  it('drops an assistant message left empty and does not change its input', () => {
    const input: ChatMessage[] = [
      { role: 'user', content: 'hi' },
      { role: 'assistant', content: '', reasoning: [{ provider: 'google', text: 'hm' }] },
      { role: 'user', content: 'hello?' },
    ];
    const copy = structuredClone(input);
    expect(historyForProvider('anthropic', input).map((message) => message.role)).toEqual(['user', 'user']);
    expect(input).toEqual(copy);
  });
});

describe('assertGeminiSchema', () => {
  it.each([
    ['not', { type: 'object', properties: { a: { not: { type: 'null' } } } }, '/properties/a/not'],
    // JSON Schema's `then` keyword, built so no object literal has a `then` property (a thenable to lint).
    ['if', { type: 'object', if: {}, ...Object.fromEntries([['then', {}]]) }, '/if'],
    ['allOf', { allOf: [{ type: 'object' }] }, '/allOf'],
    ['patternProperties', { type: 'object', patternProperties: { '^x': {} } }, '/patternProperties'],
    ['not', { type: 'array', items: { anyOf: [{ type: 'string' }, { not: {} }] } }, '/items/anyOf/1/not'],
    ['not', { $defs: { 'a/b': { not: {} } } }, '/$defs/a~1b/not'],
  ])('refuses %s at its JSON pointer', (construct, schema, pointer) => {
    expect(() => assertGeminiSchema(schema)).toThrow(expect.objectContaining({ construct, path: pointer }));
  });

  it('accepts what Gemini takes: refs, unions, nullable types, enums, bounds, a property named "not"', () => {
    expect(() =>
      assertGeminiSchema({
        type: 'object',
        properties: {
          not: { type: ['string', 'null'] },
          kind: { enum: ['a', 'b'] },
          score: { type: 'number', minimum: 0, maximum: 1 },
          item: { $ref: '#/$defs/item' },
          either: { anyOf: [{ type: 'string' }, { type: 'integer' }] },
        },
        required: ['kind'],
        additionalProperties: false,
        $defs: { item: { type: 'object', properties: { name: { type: 'string', const: 'x' } } } },
      }),
    ).not.toThrow();
  });
});
