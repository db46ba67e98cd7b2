import { readFileSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { FakeAnthropicServer } from '../testing/fake-anthropic-server.ts';
import { FakeGeminiServer } from '../testing/fake-gemini-server.ts';
import { createProviderChatModel } from './provider-chat-model.ts';

// Real answers of the live APIs, recorded by the AI SDK's maintainers (testing/ai-sdk-captures/SOURCE.md), replayed
// byte for byte by the fakes and read by our adapters: the adapters meet the providers' real wire data, not only
// what our fakes generate.
const capture = (name: string): string =>
  readFileSync(new URL(`../testing/ai-sdk-captures/${name}`, import.meta.url), 'utf8');
const lines = (name: string): string[] => capture(name).split('\n').filter(Boolean);

let fake: { close(): Promise<void> } | undefined;
afterEach(async () => {
  await fake?.close();
  fake = undefined;
});

const waits: number[] = [];
const sleep = async (ms: number) => {
  waits.push(ms);
};
const hi = { messages: [{ role: 'user' as const, content: 'hi' }] };

describe('the adapters on real captured answers', () => {
  it('Anthropic: a streamed text with pings, and its usage', async () => {
    const server = await FakeAnthropicServer.start({ replies: [{ rawEvents: lines('anthropic-text.chunks.txt') }] });
    fake = server;
    const model = createProviderChatModel({
      provider: 'anthropic',
      name: 'c',
      model: 'claude-sonnet-4-5',
      baseUrl: server.url,
      apiKey: 'k',
    });
    const deltas: string[] = [];
    const response = await model.chat(hi, { onDelta: (delta) => deltas.push(delta.text) });
    expect(response.message.content).toBe(
      "Hello! I'm doing well, thank you for asking. How are you doing today? Is there anything I can help you with?",
    );
    expect(deltas.join('')).toBe(response.message.content);
    expect(response.model).toBe('claude-sonnet-4-5-20250929');
    expect(response.usage?.promptTokens).toBe(12);
  });

  it('Anthropic: a streamed tool call without arguments has `{}` as its arguments', async () => {
    const server = await FakeAnthropicServer.start({
      replies: [{ rawEvents: lines('anthropic-tool-no-args.chunks.txt') }],
    });
    fake = server;
    const model = createProviderChatModel({
      provider: 'anthropic',
      name: 'c',
      model: 'claude-sonnet-4-5',
      baseUrl: server.url,
      apiKey: 'k',
    });
    const response = await model.chat(
      { ...hi, tools: [{ name: 'updateIssueList', description: 'updates', parameters: { type: 'object' } }] },
      { onDelta: () => {} },
    );
    expect(response.message.content).toBe("I'll update the issue list for you.");
    expect(response.message.toolCalls).toEqual([
      { id: 'toolu_01QE1WLsSVp5hy5Q3GmGTmjP', name: 'updateIssueList', arguments: '{}' },
    ]);
    expect(response.finishReason).toBe('tool_calls');
  });

  it('Gemini 3: a streamed function call keeps its thought signature for the next turn', async () => {
    const server = await FakeGeminiServer.start({
      replies: [{ rawEvents: lines('google-tool-call-gemini3.chunks.txt') }],
    });
    fake = server;
    const model = createProviderChatModel({
      provider: 'google',
      name: 'g',
      model: 'gemini-3-pro-preview',
      baseUrl: server.url,
      apiKey: 'k',
    });
    const response = await model.chat(
      { ...hi, tools: [{ name: 'weather', description: 'weather', parameters: { type: 'object' } }] },
      { onDelta: () => {} },
    );
    expect(response.message.toolCalls).toMatchObject([
      { name: 'weather', arguments: '{"location":"San Francisco"}', signature: { provider: 'google' } },
    ]);
    expect(response.message.toolCalls[0]?.signature?.value).toMatch(/^EpEgCo4gAb4/);
    expect(response.usage?.reasoningTokens).toBeGreaterThan(0);
  });

  it('Gemini: a 429 with RetryInfo waits its retryDelay (34.4 s)', async () => {
    const server = await FakeGeminiServer.start({
      replies: [
        { rawBody: capture('google-429-retry-info.json'), status: 429 },
        { rawBody: capture('google-text.json') },
      ],
    });
    fake = server;
    waits.length = 0;
    const model = createProviderChatModel({
      provider: 'google',
      name: 'g',
      model: 'gemini-2.5-flash',
      baseUrl: server.url,
      apiKey: 'k',
      sleep,
    });
    const response = await model.chat(hi);
    expect(waits).toEqual([34_400]);
    expect(response.message.content).toEqual(expect.any(String));
    expect(response.message.content).not.toBe('');
  });
});

describe('Gemini 3 text signatures', () => {
  it('keeps the signature of a signed text answer and sends it back on that text', async () => {
    const server = await FakeGeminiServer.start({
      replies: [{ rawBody: capture('google-reasoning-gemini3.json') }, { text: 'ok' }],
    });
    fake = server;
    const model = createProviderChatModel({
      provider: 'google',
      name: 'g',
      model: 'gemini-3-pro-preview',
      baseUrl: server.url,
      apiKey: 'k',
    });
    const first = await model.chat(hi);
    expect(first.message.content).toMatch(/There are \*\*3\*\* "r"s in strawberry/);
    expect(first.message.reasoning).toEqual([
      { provider: 'google', text: '', signature: expect.stringMatching(/^EswFCskFAb4/) },
    ]);
    await model.chat({ messages: [...hi.messages, first.message, { role: 'user', content: 'and in raspberry?' }] });
    const contents = server.generationRequests[1]?.body?.contents as {
      role: string;
      parts: Record<string, unknown>[];
    }[];
    expect(contents[1]?.parts).toEqual([
      { text: first.message.content, thoughtSignature: first.message.reasoning?.[0]?.signature },
    ]);
  });
});
