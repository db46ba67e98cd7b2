import { readFileSync } from 'node:fs';
import { createAnthropic } from '@ai-sdk/anthropic';
import { APICallError, type LanguageModelV4Prompt, type LanguageModelV4StreamPart } from '@ai-sdk/provider';
import { afterEach, describe, expect, it } from 'vitest';
import { FakeAnthropicServer, type FakeAnthropicServerOptions } from './fake-anthropic-server.ts';

let fake: FakeAnthropicServer | undefined;

afterEach(async () => {
  await fake?.close();
  fake = undefined;
});

async function start(options: FakeAnthropicServerOptions = {}) {
  fake = await FakeAnthropicServer.start(options);
  const provider = createAnthropic({ baseURL: fake.url, apiKey: 'test-key' });
  return { fake, model: provider.languageModel('claude-sonnet-4-5') };
}

const prompt: LanguageModelV4Prompt = [{ role: 'user', content: [{ type: 'text', text: 'Hello' }] }];

async function collect(stream: ReadableStream<LanguageModelV4StreamPart>): Promise<LanguageModelV4StreamPart[]> {
  const parts: LanguageModelV4StreamPart[] = [];
  for await (const part of stream) parts.push(part);
  return parts;
}

/** What a promise rejects with; fails the test when it fulfils. */
async function rejectionOf(promise: PromiseLike<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error('Expected the call to fail, but it succeeded.');
}

function textOf(parts: LanguageModelV4StreamPart[]): string {
  return parts.map((part) => (part.type === 'text-delta' ? part.delta : '')).join('');
}

async function post(url: string, body: unknown, headers: Record<string, string>) {
  const response = await fetch(`${url}/messages`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
  return {
    status: response.status,
    headers: response.headers,
    body: (await response.json()) as Record<string, unknown>,
  };
}

const validHeaders = { 'x-api-key': 'k', 'anthropic-version': '2023-06-01' };

describe('FakeAnthropicServer through @ai-sdk/anthropic', () => {
  it('answers text, non-streaming, with Anthropic usage including cached tokens', async () => {
    const { model, fake } = await start({
      replies: [{ text: 'Hi there', usage: { input: 10, output: 3, cacheRead: 90, cacheWrite: 5 } }],
    });
    const result = await model.doGenerate({ prompt });
    expect(result.content).toEqual([{ type: 'text', text: 'Hi there' }]);
    expect(result.finishReason.unified).toBe('stop');
    expect(result.usage.inputTokens).toMatchObject({ noCache: 10, cacheRead: 90, cacheWrite: 5, total: 105 });
    expect(result.usage.outputTokens.total).toBe(3);
    const request = fake.generationRequests[0];
    expect(request?.headers['x-api-key']).toBe('test-key');
    expect(request?.headers['anthropic-version']).toBe('2023-06-01');
    expect(request?.body?.model).toBe('claude-sonnet-4-5');
  });

  it('streams text word by word with the real event sequence', async () => {
    const { model } = await start({ replies: [{ text: 'one two three four' }] });
    const { stream } = await model.doStream({ prompt });
    const parts = await collect(stream);
    expect(parts.filter((part) => part.type === 'text-delta').length).toBeGreaterThan(1);
    expect(textOf(parts)).toBe('one two three four');
    const finish = parts.find((part) => part.type === 'finish');
    expect(finish).toMatchObject({ finishReason: { unified: 'stop', raw: 'end_turn' } });
  });

  it('streams tool calls whose input arrives as input_json_delta pieces', async () => {
    const { model } = await start({
      replies: [
        {
          text: 'Let me look.',
          toolCalls: [{ name: 'search', arguments: { query: 'weather in Paris' }, id: 'toolu_1' }],
        },
      ],
    });
    const { stream } = await model.doStream({
      prompt,
      tools: [
        {
          type: 'function',
          name: 'search',
          inputSchema: { type: 'object', properties: { query: { type: 'string' } } },
        },
      ],
    });
    const parts = await collect(stream);
    const deltas = parts.filter((part) => part.type === 'tool-input-delta');
    expect(deltas.length).toBeGreaterThan(1);
    expect(parts.find((part) => part.type === 'tool-call')).toMatchObject({
      toolCallId: 'toolu_1',
      toolName: 'search',
      input: '{"query":"weather in Paris"}',
    });
    expect(parts.find((part) => part.type === 'finish')).toMatchObject({ finishReason: { raw: 'tool_use' } });
  });

  it('streams thinking with its signature, non-streamed thinking too', async () => {
    const { model } = await start({
      replies: [
        { thinking: { text: 'Let me think about it', signature: 'sig-abc' }, text: 'Done' },
        { thinking: { text: 'Quietly', signature: 'sig-def' }, redactedThinking: 'opaque-data', text: 'Ok' },
      ],
    });
    const parts = await collect((await model.doStream({ prompt })).stream);
    const reasoning = parts
      .filter((part) => part.type === 'reasoning-delta')
      .map((part) => (part.type === 'reasoning-delta' ? part.delta : ''))
      .join('');
    expect(reasoning).toBe('Let me think about it');
    const signed = parts.find(
      (part) => part.type === 'reasoning-delta' && part.providerMetadata?.anthropic?.signature !== undefined,
    );
    expect(signed).toMatchObject({ providerMetadata: { anthropic: { signature: 'sig-abc' } } });
    expect(textOf(parts)).toBe('Done');

    const result = await model.doGenerate({ prompt });
    expect(result.content).toEqual([
      { type: 'reasoning', text: '', providerMetadata: { anthropic: { redactedData: 'opaque-data' } } },
      { type: 'reasoning', text: 'Quietly', providerMetadata: { anthropic: { signature: 'sig-def' } } },
      { type: 'text', text: 'Ok' },
    ]);
  });

  it('answers errors in Anthropic shape with status and headers', async () => {
    const { model } = await start({
      replies: [
        { error: { status: 529 } },
        { error: { status: 429, retryAfterSeconds: 7 } },
        { error: { status: 500 } },
        { error: { status: 400, message: 'prompt is too long: 210000 tokens > 200000 maximum' } },
      ],
    });
    const caught: APICallError[] = [];
    for (let attempt = 0; attempt < 4; attempt++) {
      const error = await rejectionOf(model.doGenerate({ prompt }));
      expect(APICallError.isInstance(error)).toBe(true);
      caught.push(error as APICallError);
    }
    expect(caught.map((error) => error.statusCode)).toEqual([529, 429, 500, 400]);
    expect(caught[0]?.message).toBe('Overloaded');
    expect(JSON.parse(caught[0]?.responseBody ?? '{}')).toMatchObject({
      type: 'error',
      error: { type: 'overloaded_error', message: 'Overloaded' },
    });
    expect(caught[1]?.responseHeaders?.['retry-after']).toBe('7');
    expect(JSON.parse(caught[1]?.responseBody ?? '{}')).toMatchObject({ error: { type: 'rate_limit_error' } });
    expect(JSON.parse(caught[2]?.responseBody ?? '{}')).toMatchObject({ error: { type: 'api_error' } });
    expect(caught[3]?.message).toBe('prompt is too long: 210000 tokens > 200000 maximum');
  });

  it('sends a mid-stream error event, which the client reports as an error part', async () => {
    const { model } = await start({ replies: [{ text: 'partial answer here', streamError: { afterEvents: 4 } }] });
    const parts = await collect((await model.doStream({ prompt })).stream);
    expect(parts.find((part) => part.type === 'error')).toMatchObject({
      error: { type: 'overloaded_error', message: 'Overloaded' },
    });
  });

  it('cuts a stream after cutAfterEvents, so the client fails mid-stream instead of finishing', async () => {
    const { model } = await start({ replies: [{ text: 'one two three four five', cutAfterEvents: 4 }] });
    const { stream } = await model.doStream({ prompt });
    await expect(collect(stream)).rejects.toThrow();
  });

  it('gives up a delayed reply when the client aborts, and answers after the delay otherwise', async () => {
    const { model, fake } = await start({
      replies: [
        { text: 'late', delayMs: 5_000 },
        { text: 'soon', delayMs: 20 },
      ],
    });
    const controller = new AbortController();
    const pending = rejectionOf(model.doGenerate({ prompt, abortSignal: controller.signal }));
    await expect.poll(() => fake.generationRequests.length, { timeout: 5_000 }).toBe(1);
    controller.abort();
    expect(await pending).toMatchObject({ name: 'AbortError' });
    const result = await model.doGenerate({ prompt });
    expect(result.content).toEqual([{ type: 'text', text: 'soon' }]);
  });

  it('streams malformed tool JSON that the client cannot parse', async () => {
    const { model } = await start({
      replies: [{ toolCalls: [{ name: 'search', arguments: { query: 'weather' } }], malformedToolJson: true }],
    });
    const parts = await collect((await model.doStream({ prompt })).stream);
    const input = parts
      .filter((part) => part.type === 'tool-input-delta')
      .map((part) => (part.type === 'tool-input-delta' ? part.delta : ''))
      .join('');
    expect(() => JSON.parse(input)).toThrow();
  });

  it('waits chunkDelayMs between events', async () => {
    const { model } = await start({ replies: [{ text: 'a b c', chunkDelayMs: 30 }] });
    const startedAt = performance.now();
    let lastDeltaAt = 0;
    let deltas = 0;
    for await (const part of (await model.doStream({ prompt })).stream) {
      if (part.type !== 'text-delta') continue;
      deltas++;
      lastDeltaAt = performance.now();
    }
    expect(deltas).toBe(3);
    // The last delta is the sixth event (message_start, content_block_start, ping, then three deltas): the server
    // cannot write it before five delays have passed, however slow the machine (a lower bound only).
    expect(lastDeltaAt - startedAt).toBeGreaterThanOrEqual(5 * 30 - 5);
  });
});

describe('FakeAnthropicServer checks', () => {
  it('refuses a missing or wrong x-api-key with 401 authentication_error, and a missing anthropic-version', async () => {
    const { fake } = await start({ apiKey: 'right' });
    const body = { model: 'claude-sonnet-4-5', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] };
    const missing = await post(fake.url, body, { 'anthropic-version': '2023-06-01' });
    expect(missing.status).toBe(401);
    expect(missing.body).toMatchObject({
      type: 'error',
      error: { type: 'authentication_error', message: 'x-api-key header is required' },
    });
    const wrong = await post(fake.url, body, { ...validHeaders, 'x-api-key': 'wrong' });
    expect(wrong.status).toBe(401);
    expect(wrong.body).toMatchObject({ error: { message: 'invalid x-api-key' } });
    const noVersion = await post(fake.url, body, { 'x-api-key': 'right' });
    expect(noVersion.status).toBe(400);
    expect(noVersion.body).toMatchObject({
      error: { type: 'invalid_request_error', message: 'anthropic-version: header is required' },
    });
    expect(fake.requests.every((request) => request.rejected !== undefined)).toBe(true);
  });

  const toolUse = { type: 'tool_use', id: 'toolu_1', name: 'search', input: {} };
  const cases: [string, unknown[], RegExp][] = [
    [
      'a tool_result with no matching tool_use in the previous assistant turn',
      [
        { role: 'user', content: 'hi' },
        { role: 'assistant', content: [toolUse] },
        {
          role: 'user',
          content: [
            { type: 'tool_result', tool_use_id: 'toolu_1', content: 'x' },
            { type: 'tool_result', tool_use_id: 'call_other', content: 'x' },
          ],
        },
      ],
      /^messages\.2\.content\.1: unexpected `tool_use_id` found in `tool_result` blocks: call_other\./,
    ],
    [
      'a tool_use left unanswered by the next message',
      [
        { role: 'user', content: 'hi' },
        { role: 'assistant', content: [toolUse] },
        { role: 'user', content: 'and?' },
      ],
      /^messages\.2: `tool_use` ids were found without `tool_result` blocks immediately after: toolu_1\./,
    ],
    [
      'a tool_use id from another provider',
      [
        { role: 'user', content: 'hi' },
        { role: 'assistant', content: [{ ...toolUse, id: 'call_abc|fc_1' }] },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'call_abc|fc_1', content: 'x' }] },
      ],
      /^messages\.1\.content\.0\.tool_use\.id: String should match pattern/,
    ],
    [
      'a thinking block without its signature',
      [
        { role: 'user', content: 'hi' },
        {
          role: 'assistant',
          content: [
            { type: 'thinking', thinking: 'hmm' },
            { type: 'text', text: 'ok' },
          ],
        },
        { role: 'user', content: 'go on' },
      ],
      /^messages\.1\.content\.0\.thinking\.signature: Field required$/,
    ],
    [
      'a first message that is not user',
      [
        { role: 'assistant', content: 'hello' },
        { role: 'user', content: 'hi' },
      ],
      /first message must use the "user" role/,
    ],
    [
      'two user messages in a row',
      [
        { role: 'user', content: 'hi' },
        { role: 'user', content: 'again' },
      ],
      /roles must alternate between "user" and "assistant", but found multiple "user" roles in a row/,
    ],
    [
      'a system role inside messages',
      [{ role: 'system', content: 'be nice' }],
      /^messages\.0\.role: Input should be 'user' or 'assistant'$/,
    ],
    [
      'an empty text block',
      [{ role: 'user', content: [{ type: 'text', text: '' }] }],
      /text content blocks must be non-empty/,
    ],
  ];
  const bodyCases: [string, Record<string, unknown>, RegExp][] = [
    [
      'a tool name with a dot',
      { tools: [{ name: 'notes.search', input_schema: { type: 'object' } }] },
      /^tools\.0\.custom\.name: String should match pattern/,
    ],
    ['a tool without an object input_schema', { tools: [{ name: 'search' }] }, /^tools\.0\.custom\.input_schema\.type/],
    [
      'five cache_control breakpoints',
      {
        system: [1, 2, 3].map((n) => ({ type: 'text', text: `part ${n}`, cache_control: { type: 'ephemeral' } })),
        tools: [1, 2].map((n) => ({
          name: `t${n}`,
          input_schema: { type: 'object' },
          cache_control: { type: 'ephemeral' },
        })),
      },
      /^A maximum of 4 blocks with cache_control may be provided\. Found 5\.$/,
    ],
    [
      'thinking with a forced tool choice',
      {
        max_tokens: 4000,
        thinking: { type: 'enabled', budget_tokens: 1024 },
        tools: [{ name: 'json', input_schema: { type: 'object' } }],
        tool_choice: { type: 'tool', name: 'json' },
      },
      /^Thinking may not be enabled when tool_choice forces tool use\.$/,
    ],
    [
      'a thinking budget not below max_tokens',
      { max_tokens: 2000, thinking: { type: 'enabled', budget_tokens: 2000 } },
      /must be greater than `thinking\.budget_tokens`/,
    ],
    [
      'thinking on, with tool results answering an assistant turn that does not start with thinking',
      {
        max_tokens: 4000,
        thinking: { type: 'enabled', budget_tokens: 1024 },
        messages: [
          { role: 'user', content: 'hi' },
          { role: 'assistant', content: [toolUse] },
          { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: 'x' }] },
        ],
      },
      /^messages\.1\.content\.0\.type: Expected `thinking` or `redacted_thinking`, but found `tool_use`\./,
    ],
  ];
  bodyCases.push(
    [
      'a temperature other than 1 with thinking',
      { max_tokens: 4000, thinking: { type: 'enabled', budget_tokens: 1024 }, temperature: 0.2 },
      /^`temperature` may only be set to 1 when thinking is enabled\./,
    ],
    [
      'an image type Anthropic does not take',
      {
        messages: [
          {
            role: 'user',
            content: [{ type: 'image', source: { type: 'base64', media_type: 'image/tiff', data: 'AAAA' } }],
          },
        ],
      },
      /^messages\.0\.content\.0\.image\.source\.base64\.media_type: Input should be/,
    ],
    [
      'a prefilled assistant turn ending in whitespace',
      {
        messages: [
          { role: 'user', content: 'hi' },
          { role: 'assistant', content: 'The answer is ' },
        ],
      },
      /^messages: final assistant content cannot end with trailing whitespace$/,
    ],
  );
  for (const [name, extra, expected] of bodyCases) {
    it(`refuses ${name} with 400 invalid_request_error`, async () => {
      const { fake } = await start({ replies: [{ text: 'should not be sent' }] });
      const body = {
        model: 'claude-sonnet-4-5',
        max_tokens: 10,
        messages: [{ role: 'user', content: 'hi' }],
        ...extra,
      };
      const response = await post(fake.url, body, validHeaders);
      expect(response.status).toBe(400);
      expect((response.body.error as { message: string }).message).toMatch(expected);
      expect(fake.pendingReplies).toBe(1);
    });
  }
  for (const [name, messages, expected] of cases) {
    it(`refuses ${name} with 400 invalid_request_error and consumes no reply`, async () => {
      const { fake } = await start({ replies: [{ text: 'should not be sent' }] });
      const response = await post(fake.url, { model: 'claude-sonnet-4-5', max_tokens: 10, messages }, validHeaders);
      expect(response.status).toBe(400);
      expect(response.body).toMatchObject({ type: 'error', error: { type: 'invalid_request_error' } });
      expect((response.body.error as { message: string }).message).toMatch(expected);
      expect(fake.pendingReplies).toBe(1);
    });
  }

  it('accepts a well-formed tool round trip with signed thinking', async () => {
    const { fake } = await start({ replies: [{ text: 'fine' }] });
    const response = await post(
      fake.url,
      {
        model: 'claude-sonnet-4-5',
        max_tokens: 10,
        messages: [
          { role: 'user', content: 'hi' },
          { role: 'assistant', content: [{ type: 'thinking', thinking: 'hmm', signature: 'sig' }, toolUse] },
          { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: 'sunny' }] },
        ],
      },
      validHeaders,
    );
    expect(response.status).toBe(200);
    expect(response.body).toMatchObject({ type: 'message', content: [{ type: 'text', text: 'fine' }] });
  });

  it('lets consecutive roles through with strictRoles false, as the first-party API merges them', async () => {
    const { fake } = await start({ strictRoles: false, replies: [{ text: 'fine' }] });
    const messages = [
      { role: 'assistant', content: 'hello' },
      { role: 'user', content: 'hi' },
      { role: 'user', content: 'again' },
    ];
    const response = await post(fake.url, { model: 'claude-sonnet-4-5', max_tokens: 10, messages }, validHeaders);
    expect(response.status).toBe(200);
  });

  it('refuses a prompt longer than maxInputTokens like Anthropic', async () => {
    const { model } = await start({ maxInputTokens: 5 });
    const error = await rejectionOf(
      model.doGenerate({ prompt: [{ role: 'user', content: [{ type: 'text', text: 'a long prompt '.repeat(20) }] }] }),
    );
    expect(APICallError.isInstance(error) && error.statusCode).toBe(400);
    expect((error as Error).message).toMatch(/^prompt is too long: \d+ tokens > 5 maximum$/);
  });

  it('answers GET /v1/models/:id for a known model and 404 not_found_error for another', async () => {
    const { fake } = await start({ models: ['claude-sonnet-4-5'] });
    const known = await fetch(`${fake.url}/models/claude-sonnet-4-5`, { headers: validHeaders });
    expect(known.status).toBe(200);
    expect(await known.json()).toMatchObject({ type: 'model', id: 'claude-sonnet-4-5' });
    const unknown = await fetch(`${fake.url}/models/claude-nope`, { headers: validHeaders });
    expect(unknown.status).toBe(404);
    expect(await unknown.json()).toMatchObject({
      type: 'error',
      error: { type: 'not_found_error', message: 'model: claude-nope' },
    });
    const generation = await post(
      fake.url,
      { model: 'claude-nope', max_tokens: 5, messages: [{ role: 'user', content: 'hi' }] },
      validHeaders,
    );
    expect(generation.status).toBe(404);
  });
});

// Real captures copied from the AI SDK repository (see ai-sdk-captures/SOURCE.md).
const fixture = (name: string): string => readFileSync(new URL(`./ai-sdk-captures/${name}`, import.meta.url), 'utf8');

describe('FakeAnthropicServer replaying captures from the AI SDK repository', () => {
  it('replays anthropic-json-tool.1.chunks.txt raw to what the AI SDK test expects', async () => {
    const lines = fixture('anthropic-json-tool.1.chunks.txt').split('\n').filter(Boolean);
    fake = await FakeAnthropicServer.start({ replies: [{ rawEvents: lines }] });
    const model = createAnthropic({ baseURL: fake.url, apiKey: 'k' }).languageModel('claude-3-haiku-20240307');
    const { stream } = await model.doStream({
      prompt,
      responseFormat: {
        type: 'json',
        schema: {
          type: 'object',
          properties: { name: { type: 'string' } },
          required: ['name'],
          additionalProperties: false,
        },
      },
    });
    const parts = await collect(stream);
    expect(parts.find((part) => part.type === 'response-metadata')).toMatchObject({
      id: 'msg_01K2JbSUMYhez5RHoK9ZCj9U',
      modelId: 'claude-haiku-4-5-20251001',
    });
    expect(textOf(parts)).toBe(
      '{"elements": [{"location": "San Francisco", "temperature": 58, "condition": "sunny"}]}',
    );
    expect(parts.find((part) => part.type === 'finish')).toMatchObject({
      finishReason: { raw: 'tool_use', unified: 'stop' },
      usage: { inputTokens: { total: 849, noCache: 849, cacheRead: 0, cacheWrite: 0 }, outputTokens: { total: 47 } },
    });
  });

  it('replays anthropic-tool-no-args.chunks.txt raw to text then a tool call with empty input', async () => {
    const lines = fixture('anthropic-tool-no-args.chunks.txt').split('\n').filter(Boolean);
    fake = await FakeAnthropicServer.start({ replies: [{ rawEvents: lines }] });
    const model = createAnthropic({ baseURL: fake.url, apiKey: 'k' }).languageModel('claude-sonnet-4-5');
    const parts = await collect(
      (
        await model.doStream({
          prompt,
          tools: [{ type: 'function', name: 'updateIssueList', inputSchema: { type: 'object', properties: {} } }],
        })
      ).stream,
    );
    expect(textOf(parts)).toBe("I'll update the issue list for you.");
    expect(parts.find((part) => part.type === 'tool-call')).toMatchObject({
      toolCallId: 'toolu_01QE1WLsSVp5hy5Q3GmGTmjP',
      toolName: 'updateIssueList',
      input: '{}',
    });
  });

  it('replays anthropic-text.chunks.txt raw, pings included, to its text', async () => {
    const lines = fixture('anthropic-text.chunks.txt').split('\n').filter(Boolean);
    fake = await FakeAnthropicServer.start({ replies: [{ rawEvents: lines }] });
    const model = createAnthropic({ baseURL: fake.url, apiKey: 'k' }).languageModel('claude-sonnet-4-5');
    const parts = await collect((await model.doStream({ prompt })).stream);
    expect(textOf(parts)).toBe(
      "Hello! I'm doing well, thank you for asking. How are you doing today? Is there anything I can help you with?",
    );
  });

  it('replays anthropic-text.json raw to its text', async () => {
    fake = await FakeAnthropicServer.start({ replies: [{ rawBody: fixture('anthropic-text.json') }] });
    const model = createAnthropic({ baseURL: fake.url, apiKey: 'k' }).languageModel('claude-sonnet-4-5');
    const result = await model.doGenerate({ prompt });
    expect(result.content).toEqual([
      {
        type: 'text',
        text: "Hello! I'm doing well, thanks for asking. How are you doing today? Is there anything I can help you with?",
      },
    ]);
    expect(result.usage.outputTokens.total).toBe(29);
  });
});
