import { registerSecretValue } from '@assistant/errors';
import { afterEach, describe, expect, it, vi } from 'vitest';
import * as z from 'zod';
import type { ChatMessage, ChatModel } from '../chat-types.ts';
import { Conversation } from '../conversation.ts';
import { LlmAbortedError, LlmContextTooLongError, LlmRequestError, LlmResponseMalformedError } from '../llm-errors.ts';
import { ModelGate, ModelUnavailableError } from '../model-gate.ts';
import { ReplayMissError } from '../record-replay/record-replay-fetch.ts';
import { FakeAnthropicServer } from '../testing/fake-anthropic-server.ts';
import { FakeGeminiServer } from '../testing/fake-gemini-server.ts';
import type {
  FakeProviderReply,
  FakeProviderRequest,
  FakeProviderServerOptions,
} from '../testing/fake-provider-server.ts';
import { createProviderChatModel } from './provider-chat-model.ts';

/**
 * The adapter conformance suite: every provider adapter passes the same contract against the fake server that speaks
 * its wire format and refuses, as the real API does, a request it would refuse (h32-fakes' FakeAnthropicServer and
 * FakeGeminiServer). A provider is correct when it passes this suite, not its own private tests.
 */

const apiKey = 'contract-test-key-0123456789abcdefghij';
registerSecretValue(apiKey);

interface Fake {
  url: string;
  generationRequests: FakeProviderRequest[];
  close(): Promise<void>;
}

const providers = [
  {
    provider: 'anthropic' as const,
    model: 'claude-sonnet-4-5',
    start: (options: FakeProviderServerOptions): Promise<Fake> => FakeAnthropicServer.start(options),
    overloaded: 529,
  },
  {
    provider: 'google' as const,
    model: 'gemini-2.5-flash',
    start: (options: FakeProviderServerOptions): Promise<Fake> => FakeGeminiServer.start(options),
    overloaded: 503,
  },
];

let fake: Fake | undefined;
afterEach(async () => {
  await fake?.close();
  fake = undefined;
});

const waits: number[] = [];
const noWait = async (ms: number) => {
  waits.push(ms);
};

const tools = [
  {
    name: 'lookup',
    description: 'looks things up',
    parameters: { type: 'object', properties: { q: { type: 'string' } }, required: ['q'] },
  },
];
const hi: ChatMessage[] = [{ role: 'user', content: 'hi' }];

describe.each(providers)('provider contract: $provider', ({ provider, model: modelName, start, overloaded }) => {
  async function modelOn(
    replies: FakeProviderReply[],
    options: Record<string, unknown> = {},
    fakeOptions: FakeProviderServerOptions = {},
  ): Promise<ChatModel> {
    fake = await start({ replies, apiKey, ...fakeOptions });
    waits.length = 0;
    return createProviderChatModel({
      provider,
      name: 'contract',
      model: modelName,
      baseUrl: fake.url,
      apiKey,
      sleep: noWait,
      ...options,
    });
  }

  it('answers text, with usage including cached tokens', async () => {
    const model = await modelOn([{ text: 'Hello there', usage: { input: 10, output: 3, cacheRead: 20 } }]);
    const response = await model.chat({ messages: [{ role: 'system', content: 'Be kind.' }, ...hi] });
    expect(response.message.content).toBe('Hello there');
    expect(response.usage?.cachedPromptTokens).toBe(20);
    expect(response.usage?.completionTokens).toBe(3);
    expect(model.provider).toBe(provider);
  });

  it('streams text in pieces, the pieces joined being the content', async () => {
    const model = await modelOn([{ text: 'One two three four' }]);
    const deltas: string[] = [];
    const response = await model.chat({ messages: hi }, { onDelta: (delta) => deltas.push(delta.text) });
    expect(deltas.join('')).toBe('One two three four');
    expect(response.message.content).toBe('One two three four');
  });

  it.each([false, true])('calls tools (streamed: %s) and takes the results back in an agent loop', async (streamed) => {
    const model = await modelOn([
      {
        toolCalls: [{ name: 'lookup', arguments: { q: 'x' }, signature: 'sig-call' }],
        thinking: { text: 'I should look it up.', signature: 'sig-think' },
      },
      { text: 'x is 42' },
    ]);
    const options = streamed ? { onDelta: () => {} } : {};
    // Gemini sends its thoughts only when asked: a provider option passed through the profile's parameters.
    const parameters = provider === 'google' ? { thinkingConfig: { includeThoughts: true } } : {};
    const messages: ChatMessage[] = [{ role: 'system', content: 'Use tools.' }, ...hi];
    const first = await model.chat({ messages, tools, parameters }, options);
    expect(first.finishReason).toBe('tool_calls');
    expect(first.message.toolCalls).toMatchObject([{ name: 'lookup', arguments: '{"q":"x"}' }]);
    expect(first.message.reasoning?.[0]).toMatchObject({ provider, text: 'I should look it up.' });
    // Anthropic signs the thinking block; Gemini signs the function call.
    if (provider === 'anthropic') expect(first.message.reasoning?.[0]?.signature).toBe('sig-think');
    else expect(first.message.toolCalls[0]?.signature).toEqual({ provider, value: 'sig-call' });
    messages.push(first.message, { role: 'tool', toolCallId: first.message.toolCalls[0]?.id ?? '', content: '42' });
    const second = await model.chat({ messages, tools, parameters }, options);
    expect(second.message.content).toBe('x is 42');
    // The fake refuses a history the real API would (pairing, signatures, thinking first): both were accepted.
    expect(fake?.generationRequests.map((request) => request.rejected)).toEqual([undefined, undefined]);
  });

  it('gives a structured answer that validates', async () => {
    const answer = { kind: 'bill', urgent: true };
    const model = await modelOn([
      provider === 'anthropic'
        ? { toolCalls: [{ name: 'classification', arguments: answer }] }
        : { text: JSON.stringify(answer) },
    ]);
    const result = await new Conversation(model).structured(
      z.object({ kind: z.enum(['bill', 'spam']), urgent: z.boolean() }),
      'Classify.',
      { name: 'classification' },
    );
    expect(result).toEqual(answer);
  });

  it('gives a structured answer on a profile that thinks (Anthropic refuses a forced tool with thinking on)', async () => {
    const answer = { kind: 'spam' };
    const model = await modelOn(
      [
        provider === 'anthropic'
          ? { toolCalls: [{ name: 'answer', arguments: answer }] }
          : { text: JSON.stringify(answer) },
      ],
      {
        parameters:
          provider === 'anthropic'
            ? { thinking: { type: 'enabled', budgetTokens: 1024 } }
            : { thinkingConfig: { includeThoughts: true } },
      },
    );
    const result = await new Conversation(model).structured(z.object({ kind: z.enum(['bill', 'spam']) }), 'Classify.');
    expect(result).toEqual(answer);
    expect(fake?.generationRequests[0]?.rejected).toBeUndefined();
    // Still forced: the SDK would otherwise fall back to `auto` and the model could answer in prose.
    if (provider === 'anthropic')
      expect(fake?.generationRequests[0]?.body?.tool_choice).toMatchObject({ type: 'tool' });
  });

  it('refuses a wrong key at once, with a hint naming api_key', async () => {
    const model = await modelOn([{ text: 'never' }], { apiKey: 'wrong-key' });
    const error = await model.chat({ messages: hi }).catch((caught) => caught);
    expect(error).toBeInstanceOf(LlmRequestError);
    expect([400, 401, 403]).toContain((error as LlmRequestError).status);
    expect((error as LlmRequestError).hint).toMatch(/api_key/);
    expect(fake?.generationRequests).toHaveLength(1);
  });

  it('waits out a 429 retry-after, an overload and a 500, then answers', async () => {
    const model = await modelOn([
      { error: { status: 429, retryAfterSeconds: 9 } },
      { error: { status: overloaded } },
      { error: { status: 500 } },
      { text: 'finally' },
    ]);
    const response = await model.chat({ messages: hi });
    expect(response.message.content).toBe('finally');
    expect(waits).toEqual([9_000, 2_000, 4_000]);
  });

  it('opens the gate for the retry-after of a 429', async () => {
    const gate = new ModelGate({
      profile: 'contract',
      model: modelName,
      baseUrl: 'x',
      maxInFlight: 1,
      inlineWaitMs: 0,
    });
    const model = await modelOn([{ error: { status: 429, retryAfterSeconds: 40 } }], { gate, maxRetries: 0 });
    const before = Date.now();
    const error = await model.chat({ messages: hi }).catch((caught) => caught);
    expect(error).toBeInstanceOf(ModelUnavailableError);
    expect((error as ModelUnavailableError).retryAtMs).toBeGreaterThanOrEqual(before + 40_000);
  });

  it('treats a refused connection as an outage', async () => {
    const gate = new ModelGate({
      profile: 'contract',
      model: modelName,
      baseUrl: 'x',
      maxInFlight: 1,
      inlineWaitMs: 0,
    });
    const model = createProviderChatModel({
      provider,
      name: 'contract',
      model: modelName,
      baseUrl: 'http://127.0.0.1:1/v1',
      apiKey,
      gate,
      maxRetries: 0,
    });
    const error = await model.chat({ messages: hi }).catch((caught) => caught);
    expect(error).toBeInstanceOf(ModelUnavailableError);
    expect(gate.status().breaker.state).toBe('open');
  });

  it('reports a context too long without retrying', async () => {
    const model = await modelOn([{ text: 'never' }], {}, { maxInputTokens: 10 });
    const error = await model
      .chat({ messages: [{ role: 'user', content: 'a long question '.repeat(40) }] })
      .catch((caught) => caught);
    expect(error).toBeInstanceOf(LlmContextTooLongError);
    expect(fake?.generationRequests).toHaveLength(1);
  });

  it('retries a stream cut mid-way with a restart, then answers', async () => {
    const model = await modelOn([
      { text: 'alpha beta gamma delta', cutAfterEvents: 3 },
      { text: 'alpha beta gamma delta' },
    ]);
    const deltas: { text: string; restart?: boolean }[] = [];
    const response = await model.chat({ messages: hi }, { onDelta: (delta) => deltas.push(delta) });
    expect(response.message.content).toBe('alpha beta gamma delta');
    const restart = deltas.findIndex((delta) => delta.restart);
    expect(
      deltas
        .slice(restart + 1)
        .map((delta) => delta.text)
        .join(''),
    ).toBe('alpha beta gamma delta');
    expect(fake?.generationRequests).toHaveLength(2);
  });

  it('gives up a stream that goes silent for longer than the timeout, and retries it', async () => {
    const model = await modelOn([{ text: 'alpha beta', chunkDelayMs: 120_000 }, { text: 'alpha beta' }], {
      timeoutMs: 2_000,
    });
    const response = await model.chat({ messages: hi }, { onDelta: () => {} });
    expect(response.message.content).toBe('alpha beta');
    expect(fake?.generationRequests).toHaveLength(2);
    expect(waits).toEqual([1_000]);
  });

  it('retries after the provider error event in the middle of a stream, with a restart', async () => {
    const model = await modelOn([
      {
        text: 'alpha beta gamma',
        streamError: { type: provider === 'anthropic' ? 'overloaded_error' : 'UNAVAILABLE', afterEvents: 3 },
      },
      { text: 'alpha beta gamma' },
    ]);
    const deltas: { text: string; restart?: boolean }[] = [];
    const response = await model.chat({ messages: hi }, { onDelta: (delta) => deltas.push(delta) });
    expect(response.message.content).toBe('alpha beta gamma');
    expect(fake?.generationRequests).toHaveLength(2);
    const restart = deltas.findLastIndex((delta) => delta.restart);
    expect(
      deltas
        .slice(restart + 1)
        .map((delta) => delta.text)
        .join(''),
    ).toBe('alpha beta gamma');
  });

  it('reports tool arguments that are not JSON as a malformed answer', async () => {
    const model = await modelOn([{ toolCalls: [{ name: 'lookup', arguments: { q: 'x' } }], malformedToolJson: true }]);
    const error = await model.chat({ messages: hi, tools }, { onDelta: () => {} }).catch((caught) => caught);
    expect(error).toBeInstanceOf(LlmResponseMalformedError);
  });

  it('turns an abort in flight into a cancellation, not retried and not counted as a failure', async () => {
    const gate = new ModelGate({ profile: 'contract', model: modelName, baseUrl: 'x', maxInFlight: 1 });
    const model = await modelOn([{ text: 'late', delayMs: 60_000 }], { gate });
    const controller = new AbortController();
    const pending = model.chat({ messages: hi }, { signal: controller.signal }).catch((caught) => caught);
    await vi.waitFor(() => expect(fake?.generationRequests).toHaveLength(1), { timeout: 15_000, interval: 5 });
    controller.abort();
    expect(await pending).toBeInstanceOf(LlmAbortedError);
    expect(gate.status()).toMatchObject({ failures: 0, inFlight: 0, breaker: { state: 'closed' } });
    expect(waits).toEqual([]);
  });

  it.each([false, true])('fails a replay miss at once, never retried (streamed: %s)', async (streamed) => {
    const miss = new ReplayMissError({ key: 'abc123', provider, directory: 'tests/fixtures/llm/x' });
    let calls = 0;
    const model = createProviderChatModel({
      provider,
      name: 'contract',
      model: modelName,
      baseUrl: 'http://127.0.0.1:1/v1',
      apiKey,
      sleep: noWait,
      fetch: async () => {
        calls += 1;
        throw miss;
      },
    });
    const error = await model.chat({ messages: hi }, streamed ? { onDelta: () => {} } : {}).catch((caught) => caught);
    expect(error).toBe(miss);
    expect(calls).toBe(1);
  });

  it('sends an image in a user turn as the provider takes it', async () => {
    const model = await modelOn([{ text: 'a red dot' }]);
    const png = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==';
    const response = await model.chat({
      messages: [{ role: 'user', content: 'What is this?', images: [{ mediaType: 'image/png', data: png }] }],
    });
    expect(response.message.content).toBe('a red dot');
    expect(fake?.generationRequests[0]?.rejected).toBeUndefined();
    const body = JSON.stringify(fake?.generationRequests[0]?.body);
    expect(body).toContain(png);
    expect(body).toContain(provider === 'anthropic' ? '"type":"image"' : '"inlineData"');
  });

  it('takes a history another provider wrote', async () => {
    const model = await modelOn([{ text: 'ok' }]);
    const other = provider === 'anthropic' ? 'google' : 'anthropic';
    const history: ChatMessage[] = [
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'find x' },
      {
        role: 'assistant',
        content: null,
        reasoning: [{ provider: other, text: 'foreign thought', signature: 'foreign-sig' }],
        toolCalls: [
          {
            id: 'call.from:another/provider#0123456789-0123456789-0123456789-0123456789',
            name: 'lookup',
            arguments: '{"q":"x"}',
            signature: { provider: other, value: 'foreign-call-sig' },
          },
        ],
      },
      {
        role: 'tool',
        toolCallId: 'call.from:another/provider#0123456789-0123456789-0123456789-0123456789',
        content: 'x is 42',
      },
      { role: 'assistant', content: 'x is 42.' },
      { role: 'user', content: 'thanks' },
    ];
    const response = await model.chat({ messages: history, tools });
    expect(response.message.content).toBe('ok');
    expect(fake?.generationRequests[0]?.rejected).toBeUndefined();
    expect(JSON.stringify(fake?.generationRequests[0]?.body)).not.toContain('foreign');
  });
});
