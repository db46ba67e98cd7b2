import { registerSecretValue } from '@assistant/errors';
import { afterEach, describe, expect, it } from 'vitest';
import * as z from 'zod';
import type { ChatMessage } from '../chat-types.ts';
import { Conversation } from '../conversation.ts';
import { LlmContextTooLongError, LlmRequestError, LlmResponseMalformedError } from '../llm-errors.ts';
import { ModelGate, ModelUnavailableError } from '../model-gate.ts';
import { createProviderChatModel } from './provider-chat-model.ts';
import { type WireReply, WireServer } from './wire-server.test-helper.ts';

let server: WireServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

/** The profile's key, registered as secrets.yaml values are, so an echo of it is scrubbed. */
const apiKey = 'sk-ant-api03-abcdefghijklmnopqrstuvwxyz012345';
registerSecretValue(apiKey);

const waits: number[] = [];
const noWait = async (ms: number) => {
  waits.push(ms);
};

async function claude(replies: WireReply[], options: Record<string, unknown> = {}) {
  server = await WireServer.start(replies);
  waits.length = 0;
  return createProviderChatModel({
    provider: 'anthropic',
    name: 'claude',
    model: 'claude-sonnet-4-5',
    baseUrl: `${server.url}/v1`,
    apiKey,
    sleep: noWait,
    ...options,
  });
}

const message = (content: unknown[], extra: Record<string, unknown> = {}) => ({
  json: {
    id: 'msg_1',
    type: 'message',
    role: 'assistant',
    model: 'claude-sonnet-4-5-20250929',
    content,
    stop_reason: 'end_turn',
    stop_sequence: null,
    usage: { input_tokens: 20, output_tokens: 5, cache_read_input_tokens: 12, cache_creation_input_tokens: 3 },
    ...extra,
  },
});

const anthropicError = (status: number, type: string, text: string, headers: Record<string, string> = {}) => ({
  status,
  headers,
  json: { type: 'error', error: { type, message: text } },
});

/** A streamed message: text in two deltas, then a tool call whose input arrives in two pieces. */
function streamedEvents(toolInput = ['{"q":', '"x"}']): unknown[] {
  return [
    {
      type: 'message_start',
      message: {
        id: 'msg_2',
        type: 'message',
        role: 'assistant',
        model: 'claude-sonnet-4-5-20250929',
        content: [],
        stop_reason: null,
        usage: { input_tokens: 30, output_tokens: 1, cache_read_input_tokens: 25 },
      },
    },
    { type: 'content_block_start', index: 0, content_block: { type: 'thinking', thinking: '' } },
    { type: 'content_block_delta', index: 0, delta: { type: 'thinking_delta', thinking: 'Let me look.' } },
    { type: 'content_block_delta', index: 0, delta: { type: 'signature_delta', signature: 'sig-stream' } },
    { type: 'content_block_stop', index: 0 },
    { type: 'content_block_start', index: 1, content_block: { type: 'text', text: '' } },
    { type: 'content_block_delta', index: 1, delta: { type: 'text_delta', text: 'Hello' } },
    { type: 'content_block_delta', index: 1, delta: { type: 'text_delta', text: ' there' } },
    { type: 'content_block_stop', index: 1 },
    {
      type: 'content_block_start',
      index: 2,
      content_block: { type: 'tool_use', id: 'toolu_9', name: 'lookup', input: {} },
    },
    ...toolInput.map((piece) => ({
      type: 'content_block_delta',
      index: 2,
      delta: { type: 'input_json_delta', partial_json: piece },
    })),
    { type: 'content_block_stop', index: 2 },
    { type: 'message_delta', delta: { stop_reason: 'tool_use', stop_sequence: null }, usage: { output_tokens: 9 } },
    { type: 'message_stop' },
  ];
}

const tools = [{ name: 'lookup', description: 'looks things up', parameters: { type: 'object' } }];

describe('Anthropic adapter (createProviderChatModel provider anthropic)', () => {
  it('returns text, thinking with its signature, tool calls and cached-token usage', async () => {
    const usages: unknown[] = [];
    const model = await claude(
      [
        message([
          { type: 'thinking', thinking: 'Hmm.', signature: 'sig-1' },
          { type: 'redacted_thinking', data: 'opaque' },
          { type: 'text', text: 'Hello' },
          { type: 'tool_use', id: 'toolu_1', name: 'lookup', input: { q: 'x' } },
        ]),
      ],
      { onUsage: (usage: unknown) => usages.push(usage) },
    );
    const response = await model.chat({ messages: [{ role: 'user', content: 'hi' }], tools });
    expect(response.message).toEqual({
      role: 'assistant',
      content: 'Hello',
      toolCalls: [{ id: 'toolu_1', name: 'lookup', arguments: '{"q":"x"}' }],
      reasoning: [
        { provider: 'anthropic', text: 'Hmm.', signature: 'sig-1' },
        { provider: 'anthropic', text: '', redacted: 'opaque' },
      ],
    });
    expect(response.finishReason).toBe('tool_calls');
    expect(response.usage).toEqual({
      promptTokens: 35,
      completionTokens: 5,
      totalTokens: 40,
      cachedPromptTokens: 12,
      cacheWriteTokens: 3,
    });
    expect(usages).toHaveLength(1);
    expect(server?.requests[0]?.url).toBe('/v1/messages');
    expect(server?.requests[0]?.headers['x-api-key']).toBe(apiKey);
  });

  it('puts cache_control on the stable system prompt and the last tool, with the time line after it', async () => {
    const model = await claude([message([{ type: 'text', text: 'ok' }])]);
    await model.chat({
      messages: [
        {
          role: 'system',
          content: 'You are helpful.\n\nCurrent time: 2026-11-28T04:00:00+01:00 (Saturday), time zone Europe/Paris.',
        },
        { role: 'user', content: 'hi' },
      ],
      tools: [...tools, { name: 'second', description: 'another', parameters: { type: 'object' } }],
    });
    const body = server?.requests[0]?.body as { system: unknown[]; tools: Record<string, unknown>[] };
    expect(body.system).toEqual([
      { type: 'text', text: 'You are helpful.', cache_control: { type: 'ephemeral' } },
      { type: 'text', text: 'Current time: 2026-11-28T04:00:00+01:00 (Saturday), time zone Europe/Paris.' },
    ]);
    expect(body.tools[0]?.cache_control).toBeUndefined();
    expect(body.tools[1]?.cache_control).toEqual({ type: 'ephemeral' });
  });

  it('sends no cache_control with promptCache false', async () => {
    const model = await claude([message([{ type: 'text', text: 'ok' }])], { promptCache: false });
    await model.chat({
      messages: [
        { role: 'system', content: 'Stable.' },
        { role: 'user', content: 'hi' },
      ],
      tools,
    });
    expect(JSON.stringify(server?.requests[0]?.body)).not.toContain('cache_control');
  });

  it('streams text deltas, assembles the streamed tool call and the thinking signature', async () => {
    const model = await claude([{ events: streamedEvents(), named: true }]);
    const deltas: string[] = [];
    const response = await model.chat(
      { messages: [{ role: 'user', content: 'hi' }], tools },
      { onDelta: (delta) => deltas.push(delta.text) },
    );
    expect(deltas).toEqual(['Hello', ' there']);
    expect(response.message.content).toBe('Hello there');
    expect(response.message.toolCalls).toEqual([{ id: 'toolu_9', name: 'lookup', arguments: '{"q":"x"}' }]);
    expect(response.message.reasoning).toEqual([
      { provider: 'anthropic', text: 'Let me look.', signature: 'sig-stream' },
    ]);
    expect(response.usage).toMatchObject({ promptTokens: 55, completionTokens: 9, cachedPromptTokens: 25 });
    expect(server?.requests[0]?.body.stream).toBe(true);
  });

  it('answers a structured request through a single forced tool, its input becoming the content', async () => {
    const model = await claude([
      message([{ type: 'tool_use', id: 'toolu_2', name: 'classification', input: { kind: 'bill', urgent: true } }], {
        stop_reason: 'tool_use',
      }),
    ]);
    const conversation = new Conversation(model);
    const answer = await conversation.structured(
      z.object({ kind: z.enum(['bill', 'spam']), urgent: z.boolean() }),
      'Classify this.',
      { name: 'classification' },
    );
    expect(answer).toEqual({ kind: 'bill', urgent: true });
    const body = server?.requests[0]?.body as { tools: { name: string }[]; tool_choice: unknown };
    expect(body.tools.map((tool) => tool.name)).toEqual(['classification']);
    expect(body.tool_choice).toMatchObject({ type: 'tool', name: 'classification' });
  });

  it('refuses a 401 at once with a hint naming api_key, its body scrubbed', async () => {
    const model = await claude([anthropicError(401, 'authentication_error', `invalid x-api-key ${apiKey}`)]);
    const error = await model.chat({ messages: [{ role: 'user', content: 'hi' }] }).catch((caught) => caught);
    expect(error).toBeInstanceOf(LlmRequestError);
    expect((error as LlmRequestError).status).toBe(401);
    expect((error as LlmRequestError).hint).toMatch(/api_key/);
    expect((error as Error).message).not.toContain('abcdefghijklmnopqrstuvwxyz012345');
    expect(server?.requests).toHaveLength(1);
  });

  it('retries 429 honouring retry-after, 529 overloaded and 500 with backoff, then succeeds', async () => {
    const model = await claude([
      anthropicError(429, 'rate_limit_error', 'slow down', { 'retry-after': '7' }),
      anthropicError(529, 'overloaded_error', 'Overloaded'),
      anthropicError(500, 'api_error', 'boom'),
      message([{ type: 'text', text: 'finally' }]),
    ]);
    const response = await model.chat({ messages: [{ role: 'user', content: 'hi' }] });
    expect(response.message.content).toBe('finally');
    expect(waits).toEqual([7_000, 2_000, 4_000]);
  });

  it('waits the retry-after on the gate: a 429 opens the breaker until then', async () => {
    const gate = new ModelGate({
      profile: 'claude',
      model: 'claude-sonnet-4-5',
      baseUrl: 'x',
      maxInFlight: 1,
      inlineWaitMs: 0,
    });
    const model = await claude([anthropicError(429, 'rate_limit_error', 'slow down', { 'retry-after': '30' })], {
      gate,
      maxRetries: 0,
    });
    const before = Date.now();
    const error = await model.chat({ messages: [{ role: 'user', content: 'hi' }] }).catch((caught) => caught);
    expect(error).toBeInstanceOf(ModelUnavailableError);
    expect((error as ModelUnavailableError).retryAtMs).toBeGreaterThanOrEqual(before + 30_000);
    expect(gate.status().breaker.state).toBe('open');
  });

  it('treats a refused connection as an outage and retries it', async () => {
    const model = createProviderChatModel({
      provider: 'anthropic',
      name: 'claude',
      model: 'claude-sonnet-4-5',
      baseUrl: 'http://127.0.0.1:1/v1',
      apiKey: 'k',
      sleep: noWait,
      maxRetries: 2,
    });
    waits.length = 0;
    const error = await model.chat({ messages: [{ role: 'user', content: 'hi' }] }).catch((caught) => caught);
    expect(error).toBeInstanceOf(LlmRequestError);
    expect((error as LlmRequestError).hint).toMatch(/reachable/);
    expect(waits).toEqual([1_000, 2_000]);
  });

  it('maps "prompt is too long" to LlmContextTooLongError without retrying', async () => {
    const model = await claude([
      anthropicError(400, 'invalid_request_error', 'prompt is too long: 210000 tokens > 200000 maximum'),
    ]);
    const error = await model.chat({ messages: [{ role: 'user', content: 'hi' }] }).catch((caught) => caught);
    expect(error).toBeInstanceOf(LlmContextTooLongError);
    expect(server?.requests).toHaveLength(1);
  });

  it('retries a stream cut before its end with a restart, and reports a stream that stays cut as malformed', async () => {
    const cut = { events: streamedEvents(), named: true, cutAfter: 7 };
    const model = await claude([cut, { events: streamedEvents(), named: true }]);
    const deltas: { text: string; restart?: boolean }[] = [];
    const response = await model.chat(
      { messages: [{ role: 'user', content: 'hi' }] },
      { onDelta: (delta) => deltas.push(delta) },
    );
    expect(response.message.content).toBe('Hello there');
    expect(deltas.map((delta) => (delta.restart ? '<restart>' : delta.text))).toEqual([
      'Hello',
      '<restart>',
      'Hello',
      ' there',
    ]);

    const broken = await claude([cut, cut], { maxRetries: 1 });
    const error = await broken
      .chat({ messages: [{ role: 'user', content: 'hi' }] }, { onDelta: () => {} })
      .catch((caught) => caught);
    expect(error).toBeInstanceOf(LlmResponseMalformedError);
  });

  it('reports a tool call whose streamed arguments are not JSON as malformed, with an excerpt', async () => {
    const model = await claude([{ events: streamedEvents([`{"q": "x", ${apiKey}`]), named: true }]);
    const error = await model
      .chat({ messages: [{ role: 'user', content: 'hi' }], tools }, { onDelta: () => {} })
      .catch((caught) => caught);
    expect(error).toBeInstanceOf(LlmResponseMalformedError);
    expect((error as LlmResponseMalformedError).excerpt).toContain('"q"');
    expect((error as LlmResponseMalformedError).excerpt).not.toContain(apiKey);
  });

  it('accepts a history written by Gemini and OpenAI: foreign thinking dropped, ids rewritten, tool names known', async () => {
    const model = await claude([message([{ type: 'text', text: 'done' }])]);
    const history: ChatMessage[] = [
      { role: 'user', content: 'look it up' },
      {
        role: 'assistant',
        content: null,
        reasoning: [{ provider: 'google', text: 'gemini thought', signature: 'g-sig' }],
        toolCalls: [
          {
            id: 'call:with/odd.chars-and-a-very-long-suffix-0123456789abcdef',
            name: 'lookup',
            arguments: '{"q":"x"}',
            signature: { provider: 'google', value: 'g-sig' },
          },
        ],
      },
      { role: 'tool', toolCallId: 'call:with/odd.chars-and-a-very-long-suffix-0123456789abcdef', content: 'found' },
      { role: 'assistant', content: 'It is found.' },
      { role: 'user', content: 'thanks' },
    ];
    await model.chat({ messages: history });
    const body = server?.requests[0]?.body as { messages: { role: string; content: Record<string, unknown>[] }[] };
    const toolUse = body.messages[1]?.content.find((part) => part.type === 'tool_use');
    const toolResult = body.messages[2]?.content.find((part) => part.type === 'tool_result');
    expect(String(toolUse?.id)).toMatch(/^[a-zA-Z0-9_-]{1,64}$/);
    expect(toolResult?.tool_use_id).toBe(toolUse?.id);
    expect(JSON.stringify(body)).not.toContain('gemini thought');
    expect(JSON.stringify(body)).not.toContain('g-sig');
  });
});
