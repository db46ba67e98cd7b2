import { afterEach, describe, expect, it } from 'vitest';
import { LlmContextTooLongError, LlmRequestError } from '../llm-errors.ts';
import { createProviderChatModel, defaultBaseUrls } from './provider-chat-model.ts';
import { type WireReply, WireServer } from './wire-server.test-helper.ts';

let server: WireServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

async function openAi(replies: WireReply[]) {
  server = await WireServer.start(replies);
  return createProviderChatModel({
    provider: 'openai',
    name: 'gpt',
    model: 'gpt-4.1-mini',
    baseUrl: `${server.url}/v1`,
    apiKey: 'sk-test',
    sleep: async () => {},
  });
}

const completion = (usage: Record<string, unknown>) => ({
  json: {
    id: 'chatcmpl-1',
    object: 'chat.completion',
    created: 1,
    model: 'gpt-4.1-mini-2025-04-14',
    choices: [{ index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' }],
    usage,
  },
});

describe('OpenAI adapter (createProviderChatModel provider openai)', () => {
  it('reports cached prompt tokens and reasoning tokens', async () => {
    const model = await openAi([
      completion({
        prompt_tokens: 2000,
        completion_tokens: 30,
        total_tokens: 2030,
        prompt_tokens_details: { cached_tokens: 1536 },
        completion_tokens_details: { reasoning_tokens: 12 },
      }),
    ]);
    const response = await model.chat({ messages: [{ role: 'user', content: 'hi' }] });
    expect(response.usage).toEqual({
      promptTokens: 2000,
      completionTokens: 30,
      totalTokens: 2030,
      cachedPromptTokens: 1536,
      reasoningTokens: 12,
    });
    expect(model.provider).toBe('openai');
    expect(server?.requests[0]?.headers.authorization).toBe('Bearer sk-test');
  });

  it('sends images as image_url parts, system and tools first and the time line last', async () => {
    const model = await openAi([completion({ prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 })]);
    await model.chat({
      messages: [
        { role: 'system', content: 'Stable.\n\nCurrent time: 2026-11-28T04:00:00Z (Saturday), time zone UTC.' },
        {
          role: 'user',
          content: 'what is this?',
          images: [
            { mediaType: 'image/png', data: 'iVBORw0KGgo=' },
            { mediaType: 'image/jpeg', url: 'https://example.com/cat.jpg' },
          ],
        },
      ],
      tools: [{ name: 'lookup', description: 'looks up', parameters: { type: 'object' } }],
    });
    const body = server?.requests[0]?.body as { messages: { role: string; content: unknown }[]; tools: unknown[] };
    expect(Object.keys(body).indexOf('messages')).toBeLessThan(Object.keys(body).indexOf('tools'));
    expect(body.messages[0]?.content).toMatch(/^Stable\.\n\nCurrent time: .*UTC\.$/);
    expect(body.messages[1]?.content).toEqual([
      { type: 'text', text: 'what is this?' },
      { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0KGgo=' } },
      { type: 'image_url', image_url: { url: 'https://example.com/cat.jpg' } },
    ]);
  });

  it('maps context_length_exceeded to LlmContextTooLongError without retrying', async () => {
    const model = await openAi([
      {
        status: 400,
        json: {
          error: {
            message: "This model's maximum context length is 128000 tokens.",
            type: 'invalid_request_error',
            code: 'context_length_exceeded',
          },
        },
      },
    ]);
    const error = await model.chat({ messages: [{ role: 'user', content: 'hi' }] }).catch((caught) => caught);
    expect(error).toBeInstanceOf(LlmContextTooLongError);
    expect(server?.requests).toHaveLength(1);
  });

  it('defaults each provider to its API address; openai-compatible needs a base_url', () => {
    expect(defaultBaseUrls).toEqual({
      'openai-compatible': undefined,
      openai: 'https://api.openai.com/v1',
      anthropic: 'https://api.anthropic.com/v1',
      google: 'https://generativelanguage.googleapis.com/v1beta',
    });
    expect(() => createProviderChatModel({ provider: 'openai-compatible', name: 'local', model: 'llama3.1' })).toThrow(
      /local.*base_url/,
    );
    expect(createProviderChatModel({ provider: 'anthropic', name: 'c', model: 'claude-sonnet-4-5' }).provider).toBe(
      'anthropic',
    );
  });

  it('keeps the ReAct polyfill for a model without native tools, on any provider', async () => {
    server = await WireServer.start([
      {
        json: {
          id: 'msg_1',
          type: 'message',
          role: 'assistant',
          model: 'claude-x',
          content: [{ type: 'text', text: 'Thought: look\nAction: lookup\nAction Input: {"q":"x"}' }],
          stop_reason: 'end_turn',
          usage: { input_tokens: 5, output_tokens: 5 },
        },
      },
    ]);
    const model = createProviderChatModel({
      provider: 'anthropic',
      name: 'c',
      model: 'claude-x',
      baseUrl: `${server.url}/v1`,
      apiKey: 'k',
      capabilities: { tools: false },
    });
    const response = await model.chat({
      messages: [{ role: 'user', content: 'find x' }],
      tools: [{ name: 'lookup', description: 'looks up', parameters: { type: 'object' } }],
    });
    expect(response.message.toolCalls).toMatchObject([{ name: 'lookup', arguments: '{"q":"x"}' }]);
    expect(server.requests[0]?.body.tools).toBeUndefined();
    expect(JSON.stringify(server.requests[0]?.body.system)).toContain('Action Input');
  });

  it('names the api_key in the hint of a 401', async () => {
    const model = await openAi([
      { status: 401, json: { error: { message: 'Incorrect API key', type: 'invalid_request_error' } } },
    ]);
    const error = await model.chat({ messages: [{ role: 'user', content: 'hi' }] }).catch((caught) => caught);
    expect(error).toBeInstanceOf(LlmRequestError);
    expect((error as LlmRequestError).hint).toMatch(/api_key/);
  });
});
