import { registerSecretValue } from '@assistant/errors';
import { afterEach, describe, expect, it } from 'vitest';
import * as z from 'zod';
import type { ChatMessage } from '../chat-types.ts';
import { Conversation } from '../conversation.ts';
import {
  LlmContextTooLongError,
  LlmRequestError,
  LlmResponseMalformedError,
  LlmSchemaUnsupportedError,
} from '../llm-errors.ts';
import { createProviderChatModel } from './provider-chat-model.ts';
import { type WireReply, WireServer } from './wire-server.test-helper.ts';

const apiKey = 'AIzaSyTest-gemini-key-0123456789abcdef';
registerSecretValue(apiKey);

let server: WireServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const waits: number[] = [];
const noWait = async (ms: number) => {
  waits.push(ms);
};

async function gemini(replies: WireReply[], options: Record<string, unknown> = {}) {
  server = await WireServer.start(replies);
  waits.length = 0;
  return createProviderChatModel({
    provider: 'google',
    name: 'gemini',
    model: 'gemini-2.5-flash',
    baseUrl: `${server.url}/v1beta`,
    apiKey,
    sleep: noWait,
    ...options,
  });
}

const usageMetadata = {
  promptTokenCount: 40,
  candidatesTokenCount: 6,
  totalTokenCount: 50,
  cachedContentTokenCount: 32,
  thoughtsTokenCount: 4,
};

const answer = (parts: unknown[], finishReason = 'STOP') => ({
  json: {
    candidates: [{ content: { role: 'model', parts }, finishReason, index: 0 }],
    usageMetadata,
    modelVersion: 'gemini-2.5-flash-001',
  },
});

const googleError = (status: number, text: string, extra: Record<string, unknown> = {}, headers = {}) => ({
  status,
  headers,
  json: { error: { code: status, message: text, status: 'ERROR', ...extra } },
});

const tools = [{ name: 'lookup', description: 'looks things up', parameters: { type: 'object' } }];

describe('Gemini adapter (createProviderChatModel provider google)', () => {
  it('returns text, thoughts, function calls with their thought signature and cached-token usage', async () => {
    const model = await gemini([
      answer([
        { text: 'Thinking about it.', thought: true, thoughtSignature: 'th-sig' },
        { text: 'Hello' },
        { functionCall: { name: 'lookup', args: { q: 'x' } }, thoughtSignature: 'call-sig' },
      ]),
    ]);
    const response = await model.chat({ messages: [{ role: 'user', content: 'hi' }], tools });
    expect(response.message.content).toBe('Hello');
    expect(response.message.reasoning).toEqual([
      { provider: 'google', text: 'Thinking about it.', signature: 'th-sig' },
    ]);
    expect(response.message.toolCalls).toEqual([
      {
        id: expect.any(String),
        name: 'lookup',
        arguments: '{"q":"x"}',
        signature: { provider: 'google', value: 'call-sig' },
      },
    ]);
    expect(response.usage).toMatchObject({ promptTokens: 40, cachedPromptTokens: 32, reasoningTokens: 4 });
    expect(server?.requests[0]?.url).toBe('/v1beta/models/gemini-2.5-flash:generateContent');
    expect(server?.requests[0]?.headers['x-goog-api-key']).toBe(apiKey);
  });

  it('sends the thought signature back with its function call on the next turn', async () => {
    const model = await gemini([answer([{ text: 'ok' }])]);
    const history: ChatMessage[] = [
      { role: 'user', content: 'look' },
      {
        role: 'assistant',
        content: null,
        toolCalls: [
          { id: 'c1', name: 'lookup', arguments: '{"q":"x"}', signature: { provider: 'google', value: 'call-sig' } },
        ],
      },
      { role: 'tool', toolCallId: 'c1', content: 'found' },
    ];
    await model.chat({ messages: history, tools });
    const contents = server?.requests[0]?.body.contents as { role: string; parts: Record<string, unknown>[] }[];
    expect(contents[1]?.parts[0]).toMatchObject({
      functionCall: { name: 'lookup', args: { q: 'x' } },
      thoughtSignature: 'call-sig',
    });
    expect(contents[2]?.parts[0]).toMatchObject({ functionResponse: { name: 'lookup' } });
  });

  it('streams text deltas and a function call, with usage from the last chunk', async () => {
    const model = await gemini([
      {
        events: [
          { candidates: [{ content: { role: 'model', parts: [{ text: 'Hel' }] } }] },
          { candidates: [{ content: { role: 'model', parts: [{ text: 'lo' }] } }] },
          {
            candidates: [
              {
                content: { role: 'model', parts: [{ functionCall: { name: 'lookup', args: { q: 'y' } } }] },
                finishReason: 'STOP',
              },
            ],
            usageMetadata,
          },
        ],
      },
    ]);
    const deltas: string[] = [];
    const response = await model.chat(
      { messages: [{ role: 'user', content: 'hi' }], tools },
      { onDelta: (delta) => deltas.push(delta.text) },
    );
    expect(deltas).toEqual(['Hel', 'lo']);
    expect(response.message.content).toBe('Hello');
    expect(response.message.toolCalls).toMatchObject([{ name: 'lookup', arguments: '{"q":"y"}' }]);
    expect(response.usage).toMatchObject({ promptTokens: 40, cachedPromptTokens: 32 });
    expect(server?.requests[0]?.url).toBe('/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse');
  });

  it('asks for structured output with a response schema and validates it', async () => {
    const model = await gemini([answer([{ text: '{"kind":"bill"}' }])]);
    const result = await new Conversation(model).structured(z.object({ kind: z.enum(['bill', 'spam']) }), 'Classify.');
    expect(result).toEqual({ kind: 'bill' });
    const config = server?.requests[0]?.body.generationConfig as Record<string, unknown>;
    expect(config.responseMimeType).toBe('application/json');
    expect(config.responseJsonSchema).toMatchObject({
      type: 'object',
      properties: { kind: { enum: ['bill', 'spam'] } },
    });
  });

  it('refuses a schema construct Gemini cannot express, naming it and where, before sending', async () => {
    const model = await gemini([]);
    const error = await model
      .chat({
        messages: [{ role: 'user', content: 'hi' }],
        responseFormat: {
          name: 'answer',
          schema: { type: 'object', properties: { when: { type: 'string', not: { const: '' } } } },
        },
      })
      .catch((caught) => caught);
    expect(error).toBeInstanceOf(LlmSchemaUnsupportedError);
    expect((error as LlmSchemaUnsupportedError).construct).toBe('not');
    expect((error as LlmSchemaUnsupportedError).path).toBe('/responseFormat/schema/properties/when/not');
    expect(server?.requests).toHaveLength(0);
  });

  it('honours the RetryInfo retryDelay of a 429 body, retries a 503, then succeeds', async () => {
    const model = await gemini([
      googleError(429, 'Resource exhausted', {
        details: [{ '@type': 'type.googleapis.com/google.rpc.RetryInfo', retryDelay: '12s' }],
      }),
      googleError(503, 'The model is overloaded.'),
      answer([{ text: 'ok' }]),
    ]);
    const response = await model.chat({ messages: [{ role: 'user', content: 'hi' }] });
    expect(response.message.content).toBe('ok');
    expect(waits).toEqual([12_000, 2_000]);
  });

  it('refuses a 403 with a hint naming api_key, and maps an input too long to LlmContextTooLongError', async () => {
    const refused = await gemini([googleError(403, `API key not valid: ${apiKey}`)]);
    const error = await refused.chat({ messages: [{ role: 'user', content: 'hi' }] }).catch((caught) => caught);
    expect(error).toBeInstanceOf(LlmRequestError);
    expect((error as LlmRequestError).hint).toMatch(/api_key/);
    expect((error as Error).message).not.toContain(apiKey);
    await server?.close();

    const long = await gemini([
      googleError(400, 'The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).'),
    ]);
    const tooLong = await long.chat({ messages: [{ role: 'user', content: 'hi' }] }).catch((caught) => caught);
    expect(tooLong).toBeInstanceOf(LlmContextTooLongError);
    expect(server?.requests).toHaveLength(1);
  });

  it('retries a stream cut before its finish and reports one that stays cut as malformed', async () => {
    const cut = { events: [{ candidates: [{ content: { role: 'model', parts: [{ text: 'Hel' }] } }] }] };
    const model = await gemini([cut, cut], { maxRetries: 1 });
    const deltas: { text: string; restart?: boolean }[] = [];
    const error = await model
      .chat({ messages: [{ role: 'user', content: 'hi' }] }, { onDelta: (delta) => deltas.push(delta) })
      .catch((caught) => caught);
    expect(error).toBeInstanceOf(LlmResponseMalformedError);
    expect(deltas).toEqual([{ text: 'Hel' }, { text: '', restart: true }, { text: 'Hel' }]);
    expect(waits).toEqual([1_000]);
  });

  it('accepts a history Anthropic wrote: its thinking and signatures dropped', async () => {
    const model = await gemini([answer([{ text: 'ok' }])]);
    await model.chat({
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'hi' },
        {
          role: 'assistant',
          content: 'Hello',
          reasoning: [{ provider: 'anthropic', text: 'claude thought', signature: 'a-sig' }],
        },
        { role: 'user', content: 'again' },
      ],
    });
    const body = JSON.stringify(server?.requests[0]?.body);
    expect(body).not.toContain('claude thought');
    expect(body).not.toContain('a-sig');
    expect(server?.requests[0]?.body.systemInstruction).toEqual({ parts: [{ text: 'Be brief.' }] });
  });
});
