import { afterEach, describe, expect, it } from 'vitest';
import type { ChatDelta, ChatRequest } from './chat-types.ts';
import { LlmAbortedError, LlmRequestError } from './llm-errors.ts';
import { createOpenAiChatModel } from './openai-chat-model.ts';
import { FakeOpenAiServer, type FakeReply } from './testing/fake-openai-server.ts';

let server: FakeOpenAiServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const waits: number[] = [];
const noWait = async (ms: number) => {
  waits.push(ms);
};

async function modelWith(replies: FakeReply[], options: Record<string, unknown> = {}) {
  server = await FakeOpenAiServer.start({ replies });
  waits.length = 0;
  return createOpenAiChatModel({ name: 'test', baseUrl: server.url, model: 'fake-model', sleep: noWait, ...options });
}

const hello: ChatRequest = { messages: [{ role: 'user', content: 'hi' }] };
const answer = 'The quick brown fox jumps over the lazy dog.';
const lookup = { name: 'lookup', description: 'looks things up', parameters: { type: 'object' } };

describe('createOpenAiChatModel with onDelta', () => {
  it('streams the text in several deltas and returns what the non-streaming request returns', async () => {
    const usage = { prompt: 11, completion: 9 };
    const usages: number[] = [];
    const model = await modelWith(
      [
        { text: answer, usage },
        { text: answer, usage },
      ],
      {
        onUsage: (reported: { totalTokens: number }) => usages.push(reported.totalTokens),
      },
    );
    const deltas: ChatDelta[] = [];

    const streamed = await model.chat(hello, { onDelta: (delta) => deltas.push(delta) });
    const plain = await model.chat(hello);

    expect(deltas.length).toBeGreaterThan(3);
    expect(deltas.every((delta) => delta.restart === undefined && delta.text !== '')).toBe(true);
    expect(deltas.map((delta) => delta.text).join('')).toBe(answer);
    expect(streamed).toEqual(plain);
    expect(streamed.usage).toEqual({ promptTokens: 11, completionTokens: 9, totalTokens: 20 });
    expect(usages).toEqual([20, 20]);
    expect(server?.requests[0]?.body).toMatchObject({ stream: true, stream_options: { include_usage: true } });
    expect(server?.requests[1]?.body.stream).toBeUndefined();
  });

  it('assembles streamed tool calls by index, with the content that came alongside', async () => {
    const reply: FakeReply = {
      text: 'Looking both up.',
      toolCalls: [
        { name: 'lookup', arguments: { q: 'first thing with a long query' }, id: 'call_a' },
        { name: 'lookup', arguments: { q: 'second' }, id: 'call_b' },
      ],
    };
    const model = await modelWith([reply, reply]);
    const deltas: string[] = [];

    const streamed = await model.chat({ ...hello, tools: [lookup] }, { onDelta: (delta) => deltas.push(delta.text) });
    const plain = await model.chat({ ...hello, tools: [lookup] });

    expect(streamed.message.toolCalls).toEqual([
      { id: 'call_a', name: 'lookup', arguments: '{"q":"first thing with a long query"}' },
      { id: 'call_b', name: 'lookup', arguments: '{"q":"second"}' },
    ]);
    expect(streamed.finishReason).toBe('tool_calls');
    expect(deltas.join('')).toBe('Looking both up.');
    expect(streamed).toEqual(plain);
  });

  it('returns null content, like the plain request, for a reply with only tool calls', async () => {
    const reply: FakeReply = { toolCalls: [{ name: 'lookup', arguments: { q: 'x' } }] };
    const model = await modelWith([reply, reply]);
    const deltas: string[] = [];
    const streamed = await model.chat({ ...hello, tools: [lookup] }, { onDelta: (delta) => deltas.push(delta.text) });
    const plain = await model.chat({ ...hello, tools: [lookup] });
    expect(streamed.message.content).toBeNull();
    expect(deltas).toEqual([]);
    expect({ ...streamed, message: { ...streamed.message, toolCalls: [] } }).toEqual({
      ...plain,
      message: { ...plain.message, toolCalls: [] },
    });
  });

  it('sends a restart before the retry of a stream that broke mid-way, then the whole answer', async () => {
    const model = await modelWith([
      { text: answer, breakAfterChunks: 4 },
      { error: { status: 503 } },
      { text: answer },
    ]);
    const deltas: ChatDelta[] = [];

    const response = await model.chat(hello, { onDelta: (delta) => deltas.push(delta) });

    expect(response.message.content).toBe(answer);
    const restarts = deltas.flatMap((delta, index) => (delta.restart ? [index] : []));
    // One restart: the 503 came before any text, so its retry has nothing to discard.
    expect(restarts).toHaveLength(1);
    const restart = restarts[0] ?? -1;
    expect(deltas[restart]).toEqual({ text: '', restart: true });
    const before = deltas.slice(0, restart).map((delta) => delta.text);
    expect(before.length).toBeGreaterThan(0);
    expect(answer.startsWith(before.join(''))).toBe(true);
    expect(
      deltas
        .slice(restart + 1)
        .map((delta) => delta.text)
        .join(''),
    ).toBe(answer);
    expect(waits).toHaveLength(2);
    expect(server?.requests).toHaveLength(3);
  });

  it('fails with LlmRequestError when every attempt breaks off or is malformed', async () => {
    const model = await modelWith([{ text: answer, breakAfterChunks: 2 }, { malformed: true }], { maxRetries: 1 });
    const deltas: ChatDelta[] = [];
    const error = await model
      .chat(hello, { onDelta: (delta) => deltas.push(delta) })
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(LlmRequestError);
    expect((error as LlmRequestError).message).toMatch(/failed after 2 attempts: .*malformed/);
    expect(deltas.at(-1)).toEqual({ text: '', restart: true });
  });

  it('gives up a stream that stalls longer than the timeout and retries it, with a restart', async () => {
    const model = await modelWith([{ text: answer, chunkDelayMs: 60_000 }, { text: answer }], { timeoutMs: 300 });
    const deltas: ChatDelta[] = [];
    const response = await model.chat(hello, { onDelta: (delta) => deltas.push(delta) });
    expect(response.message.content).toBe(answer);
    expect(deltas.slice(0, 2)).toEqual([{ text: 'The ' }, { text: '', restart: true }]);
    expect(
      deltas
        .slice(2)
        .map((delta) => delta.text)
        .join(''),
    ).toBe(answer);
    expect(server?.requests).toHaveLength(2);
  });

  it('turns an abort in the middle of the stream into LlmAbortedError and stops delivering text', async () => {
    const model = await modelWith([{ text: answer, chunkDelayMs: 60_000 }]);
    const controller = new AbortController();
    const deltas: string[] = [];
    const error = await model
      .chat(hello, {
        signal: controller.signal,
        onDelta: (delta) => {
          deltas.push(delta.text);
          controller.abort(new Error('the owner stopped it'));
        },
      })
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(LlmAbortedError);
    expect(deltas).toEqual(['The ']);
    expect(server?.requests).toHaveLength(1);
  });

  it('does not stream the ReAct replies of a model without native tools, but does stream its plain replies', async () => {
    const model = await modelWith(
      [{ text: 'Thought: done.\nFinal Answer: sunny and warm' }, { text: 'just words here' }],
      { model: 'llama3:8b' },
    );
    const deltas: string[] = [];
    const onDelta = (delta: ChatDelta) => deltas.push(delta.text);

    const react = await model.chat({ ...hello, tools: [lookup] }, { onDelta });
    expect(react.message.content).toBe('sunny and warm');
    expect(deltas).toEqual([]);
    expect(server?.requests[0]?.body.stream).toBeUndefined();

    const plain = await model.chat(hello, { onDelta });
    expect(plain.message.content).toBe('just words here');
    expect(deltas.join('')).toBe('just words here');
  });

  it('ignores a listener that throws', async () => {
    const model = await modelWith([{ text: answer }]);
    const response = await model.chat(hello, {
      onDelta: () => {
        throw new Error('a broken listener');
      },
    });
    expect(response.message.content).toBe(answer);
    expect(server?.requests).toHaveLength(1);
  });
});
