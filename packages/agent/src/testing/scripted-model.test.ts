import { describe, expect, it } from 'vitest';
import { createScriptedModel } from './scripted-model.ts';

describe('createScriptedModel', () => {
  it('answers in order, numbers tool calls, records requests, and fails when the script runs out', async () => {
    const model = createScriptedModel({
      replies: [{ toolCalls: [{ name: 'search', arguments: { query: 'x' } }] }, 'done'],
    });

    const first = await model.chat({ messages: [{ role: 'user', content: 'hi' }] });
    const second = await model.chat({ messages: [{ role: 'user', content: 'again' }] });

    expect(first.message.toolCalls).toEqual([{ id: 'call_1_0', name: 'search', arguments: '{"query":"x"}' }]);
    expect(first.finishReason).toBe('tool_calls');
    expect(second.message).toEqual({ role: 'assistant', content: 'done', toolCalls: [] });
    expect(model.requests.map((request) => request.messages[0]?.content)).toEqual(['hi', 'again']);
    await expect(model.chat({ messages: [] })).rejects.toThrow('has no reply for call 3');
  });

  it('streams the reply text a word a piece to onDelta, or the scripted deltas', async () => {
    const model = createScriptedModel({
      replies: [
        'one two  three',
        { content: 'calling', toolCalls: [{ name: 'search' }] },
        { content: 'ab', deltas: [{ text: 'a' }, { text: '', restart: true }, { text: 'ab' }] },
        { toolCalls: [{ name: 'search' }] },
      ],
    });
    const received: unknown[][] = [];
    for (let call = 0; call < 4; call += 1) {
      const deltas: unknown[] = [];
      await model.chat({ messages: [] }, { onDelta: (delta) => deltas.push(delta) });
      received.push(deltas);
    }
    expect(received).toEqual([
      [{ text: 'one ' }, { text: 'two  ' }, { text: 'three' }],
      [{ text: 'calling' }],
      [{ text: 'a' }, { text: '', restart: true }, { text: 'ab' }],
      [],
    ]);
  });

  it('rejects with an AbortError when the call is aborted while its reply is pending', async () => {
    const model = createScriptedModel({ replies: () => new Promise<never>(() => {}) });
    const controller = new AbortController();

    const pending = model.chat({ messages: [] }, { signal: controller.signal });
    controller.abort();

    await expect(pending).rejects.toMatchObject({ name: 'AbortError' });
  });
});
