import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { fixtureKey } from './fixture-files.ts';
import { canonicalJson, firstDifference, recognizeModelRequest, sortedKeys } from './wire-formats.ts';

function keyOf(url: string, body: Record<string, unknown>, provider = 'test'): string {
  const request = recognizeModelRequest({ method: 'POST', url, body });
  if (request === undefined) throw new Error(`not recognised: ${url}`);
  return fixtureKey({ provider, canonical: request.canonical });
}

const time = (iso: string) => `\n\nCurrent time: ${iso} (Saturday), time zone Europe/Paris.`;

describe('recognizeModelRequest', () => {
  it('recognises each wire format and nothing else', () => {
    const post = (url: string, body: unknown) => recognizeModelRequest({ method: 'POST', url, body })?.wire;
    expect(post('https://api.openai.com/v1/chat/completions', { model: 'm', messages: [] })).toBe('openai');
    expect(post('https://api.anthropic.com/v1/messages', { model: 'm', messages: [] })).toBe('anthropic');
    expect(
      post('https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:generateContent', {
        contents: [],
      }),
    ).toBe('gemini');
    expect(post('https://x/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse', { contents: [] })).toBe(
      'gemini',
    );
    expect(post('https://api.openai.com/v1/embeddings', { model: 'm', input: 'x' })).toBeUndefined();
    expect(post('https://api.anthropic.com/v1/messages/count_tokens', { model: 'm', messages: [] })).toBeUndefined();
    expect(post('https://x/v1beta/models/text-embedding-004:embedContent', { content: {} })).toBeUndefined();
    expect(
      recognizeModelRequest({ method: 'GET', url: 'https://api.openai.com/v1/models', body: undefined }),
    ).toBeUndefined();
  });

  it('takes the Gemini model from the URL path', () => {
    const request = recognizeModelRequest({
      method: 'POST',
      url: 'https://x/v1beta/models/gemini-2.5-pro:generateContent?key=secret',
      body: { contents: [] },
    });
    expect(request?.model).toBe('gemini-2.5-pro');
    expect(request?.canonical.model).toBe('gemini-2.5-pro');
    expect(JSON.stringify(request)).not.toContain('secret');
  });
});

describe('the key of a request', () => {
  it('ignores OpenAI sampling, stream, max_tokens and the time line, and sorts object keys', () => {
    const url = 'https://api.openai.com/v1/chat/completions';
    const base = {
      model: 'gpt-4.1',
      messages: [
        { role: 'system', content: `You sort mail.${time('2026-11-28T05:00:00+01:00')}` },
        { role: 'user', content: 'Hi' },
      ],
      tools: [{ type: 'function', function: { name: 'lookup', parameters: { type: 'object' } } }],
    };
    const variant = {
      stream: true,
      stream_options: { include_usage: true },
      temperature: 0.7,
      max_tokens: 10,
      tools: [{ function: { parameters: { type: 'object' }, name: 'lookup' }, type: 'function' }],
      messages: [
        { content: `You sort mail.${time('2027-02-03T10:11:12-05:00')}`, role: 'system' },
        { role: 'user', content: 'Hi' },
      ],
      model: 'gpt-4.1',
    };
    expect(keyOf('http://127.0.0.1:1/proxy/v1/chat/completions', variant)).toBe(keyOf(url, base));
  });

  it('changes with the model, messages, tools, tool_choice, response_format, the provider and the system prompt', () => {
    const url = 'https://api.openai.com/v1/chat/completions';
    const base = { model: 'gpt-4.1', messages: [{ role: 'system', content: 'A' }] };
    const keys = new Set([
      keyOf(url, base),
      keyOf(url, base, 'other-provider'),
      keyOf(url, { ...base, model: 'gpt-5' }),
      keyOf(url, { ...base, messages: [{ role: 'system', content: 'B' }] }),
      keyOf(url, { ...base, tools: [] }),
      keyOf(url, { ...base, tool_choice: 'required' }),
      keyOf(url, { ...base, response_format: { type: 'json_object' } }),
    ]);
    expect(keys.size).toBe(7);
  });

  it('ignores Anthropic cache_control, max_tokens, sampling and the time block, but not thinking or stream', () => {
    const url = 'https://api.anthropic.com/v1/messages';
    const base = {
      model: 'claude-sonnet-4-5',
      max_tokens: 1024,
      system: [
        { type: 'text', text: 'You help.', cache_control: { type: 'ephemeral' } },
        { type: 'text', text: 'Current time: 2026-11-28T05:00:00+01:00 (Saturday), time zone Europe/Paris.' },
      ],
      messages: [{ role: 'user', content: [{ type: 'text', text: 'Hi', cache_control: { type: 'ephemeral' } }] }],
    };
    const same = {
      ...base,
      max_tokens: 99,
      temperature: 1,
      top_k: 5,
      system: [
        { type: 'text', text: 'You help.' },
        { type: 'text', text: 'Current time: 2030-01-01T00:00:00Z (Tuesday), time zone UTC.' },
      ],
      messages: [{ role: 'user', content: [{ type: 'text', text: 'Hi' }] }],
    };
    expect(keyOf(url, same)).toBe(keyOf(url, base));
    expect(keyOf(url, { ...base, thinking: { type: 'enabled', budget_tokens: 2048 } })).not.toBe(keyOf(url, base));
    expect(keyOf(url, { ...base, stream: true })).not.toBe(keyOf(url, base));
    expect(keyOf(url, { ...base, system: 'You help.' })).not.toBe(keyOf(url, base));
  });

  it('keeps only the decisive parts of a Gemini generationConfig and ignores its time line', () => {
    const url = 'https://x/v1beta/models/gemini-2.5-flash:generateContent';
    const base = {
      contents: [{ role: 'user', parts: [{ text: 'Hi' }] }],
      systemInstruction: { parts: [{ text: `You help.${time('2026-11-28T05:00:00+01:00')}` }] },
      generationConfig: { temperature: 0.1, maxOutputTokens: 100, responseMimeType: 'application/json' },
    };
    const same = {
      ...base,
      systemInstruction: { parts: [{ text: `You help.${time('2026-12-01T08:00:00+01:00')}` }] },
      generationConfig: { temperature: 0.9, topP: 0.5, responseMimeType: 'application/json' },
    };
    expect(keyOf(`${url}?key=one`, same)).toBe(keyOf(url, base));
    expect(keyOf(url, { ...base, generationConfig: { responseSchema: { type: 'object' } } })).not.toBe(
      keyOf(url, base),
    );
    expect(keyOf(url.replace(':generateContent', ':streamGenerateContent'), base)).not.toBe(keyOf(url, base));
    expect(keyOf(url.replace('gemini-2.5-flash', 'gemini-2.5-pro'), base)).not.toBe(keyOf(url, base));
  });

  it('keeps a time line that is not the last line of the system prompt', () => {
    const url = 'https://api.openai.com/v1/chat/completions';
    const body = (text: string) => ({ model: 'm', messages: [{ role: 'system', content: text }] });
    expect(keyOf(url, body('Current time: 1\nRules follow.'))).not.toBe(
      keyOf(url, body('Current time: 2\nRules follow.')),
    );
  });
});

describe('tool-call ids in the key', () => {
  const url = 'https://api.openai.com/v1/chat/completions';
  const conversation = (first: string, second: string) => ({
    model: 'm',
    messages: [
      { role: 'user', content: 'Look two things up' },
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          { id: first, type: 'function', function: { name: 'lookup', arguments: '{}' } },
          { id: second, type: 'function', function: { name: 'lookup', arguments: '{"q":1}' } },
        ],
      },
      { role: 'tool', tool_call_id: first, content: 'one' },
      { role: 'tool', tool_call_id: second, content: 'two' },
    ],
  });

  it('does not depend on the ids a client made up, only on which result answers which call', () => {
    expect(keyOf(url, conversation('call_a1', 'call_b2'))).toBe(keyOf(url, conversation('random-x', 'random-y')));
    const swapped = conversation('call_a1', 'call_b2');
    swapped.messages[2] = { role: 'tool', tool_call_id: 'call_b2', content: 'one' };
    swapped.messages[3] = { role: 'tool', tool_call_id: 'call_a1', content: 'two' };
    expect(keyOf(url, swapped)).not.toBe(keyOf(url, conversation('call_a1', 'call_b2')));
  });

  it('stabilises Anthropic tool_use ids and Gemini function call ids too', () => {
    const anthropic = (id: string) => ({
      model: 'claude',
      messages: [
        { role: 'assistant', content: [{ type: 'tool_use', id, name: 'lookup', input: {} }] },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: id, content: 'ok' }] },
      ],
    });
    const anthropicUrl = 'https://api.anthropic.com/v1/messages';
    expect(keyOf(anthropicUrl, anthropic('toolu_1'))).toBe(keyOf(anthropicUrl, anthropic('toolu_2')));
    const gemini = (id: string) => ({
      contents: [
        { role: 'model', parts: [{ functionCall: { id, name: 'lookup', args: {} } }] },
        { role: 'user', parts: [{ functionResponse: { id, name: 'lookup', response: {} } }] },
      ],
    });
    const geminiUrl = 'https://x/v1beta/models/gemini-2.5-flash:generateContent';
    expect(keyOf(geminiUrl, gemini('a'))).toBe(keyOf(geminiUrl, gemini('b')));
  });
});

describe('firstDifference', () => {
  it('names the first differing JSON path and both values', () => {
    expect(firstDifference({ a: [1, { b: 'x' }] }, { a: [1, { b: 'y' }] })).toEqual({
      path: '$.a[1].b',
      recorded: 'x',
      requested: 'y',
    });
    expect(firstDifference({ a: [1] }, { a: [1, 2] })).toEqual({ path: '$.a[1]', recorded: '(absent)', requested: 2 });
    expect(firstDifference({ 'a-b': 1 }, {})).toEqual({ path: '$["a-b"]', recorded: 1, requested: '(absent)' });
    expect(firstDifference({ a: 1 }, { a: 1 })).toBeUndefined();
  });
});

describe('canonical JSON', () => {
  // Objects rebuilt with their keys in reverse order, at every depth.
  const reversed = (value: unknown): unknown => {
    if (Array.isArray(value)) return value.map(reversed);
    if (typeof value !== 'object' || value === null) return value;
    return Object.fromEntries(
      Object.entries(value)
        .reverse()
        .map(([name, item]) => [name, reversed(item)]),
    );
  };

  it('keeps a key named __proto__ (JSON.parse makes it an own property), so it still tells requests apart', () => {
    const withProto = JSON.parse('{"b":1,"__proto__":[]}') as unknown;
    expect(canonicalJson(sortedKeys(withProto))).toBe('{"__proto__":[],"b":1}');
    expect(canonicalJson(withProto)).not.toBe(canonicalJson({ b: 1 }));
  });

  it('does not depend on key order, and firstDifference finds a difference exactly when it differs', () => {
    fc.assert(
      fc.property(fc.jsonValue(), fc.jsonValue(), (left, right) => {
        expect(canonicalJson(reversed(left))).toBe(canonicalJson(left));
        expect(canonicalJson(sortedKeys(left))).toBe(canonicalJson(left));
        expect(firstDifference(left, reversed(left))).toBeUndefined();
        const same = canonicalJson(left) === canonicalJson(right);
        expect(firstDifference(left, right) === undefined).toBe(same);
      }),
    );
  });
});
