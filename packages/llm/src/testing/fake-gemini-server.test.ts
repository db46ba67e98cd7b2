import { readFileSync } from 'node:fs';
import { createGoogleGenerativeAI } from '@ai-sdk/google';
import { APICallError, type LanguageModelV4Prompt, type LanguageModelV4StreamPart } from '@ai-sdk/provider';
import { afterEach, describe, expect, it } from 'vitest';
import { FakeGeminiServer, type FakeGeminiServerOptions } from './fake-gemini-server.ts';

let fake: FakeGeminiServer | undefined;

afterEach(async () => {
  await fake?.close();
  fake = undefined;
});

async function start(options: FakeGeminiServerOptions = {}, modelId = 'gemini-2.5-flash') {
  fake = await FakeGeminiServer.start(options);
  const provider = createGoogleGenerativeAI({ baseURL: fake.url, apiKey: 'test-key' });
  return { fake, model: provider.languageModel(modelId) };
}

const prompt: LanguageModelV4Prompt = [{ role: 'user', content: [{ type: 'text', text: 'Hello' }] }];

async function collect(stream: ReadableStream<LanguageModelV4StreamPart>): Promise<LanguageModelV4StreamPart[]> {
  const parts: LanguageModelV4StreamPart[] = [];
  for await (const part of stream) parts.push(part);
  return parts;
}

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

async function post(fakeUrl: string, model: string, body: unknown, init: { key?: string; action?: string } = {}) {
  const action = init.action ?? 'generateContent';
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (init.key !== undefined) headers['x-goog-api-key'] = init.key;
  const response = await fetch(`${fakeUrl}/models/${model}:${action}`, {
    method: 'POST',
    headers,
    body: JSON.stringify(body),
  });
  return { status: response.status, body: (await response.json()) as { error?: Record<string, unknown> } };
}

const weatherTool = {
  type: 'function' as const,
  name: 'weather',
  inputSchema: { type: 'object', properties: { location: { type: 'string' } }, required: ['location'] },
};

describe('FakeGeminiServer through @ai-sdk/google', () => {
  it('answers text, non-streaming, with usageMetadata including cached tokens', async () => {
    const { model, fake } = await start({
      replies: [{ text: 'Hi there', usage: { input: 10, cacheRead: 90, output: 3 } }],
    });
    const result = await model.doGenerate({ prompt });
    expect(result.content).toEqual([{ type: 'text', text: 'Hi there' }]);
    expect(result.finishReason).toMatchObject({ unified: 'stop', raw: 'STOP' });
    expect(result.usage.inputTokens).toMatchObject({ total: 100, cacheRead: 90, noCache: 10 });
    expect(result.usage.outputTokens.total).toBe(3);
    const request = fake.generationRequests[0];
    expect(request?.path).toBe('/v1beta/models/gemini-2.5-flash:generateContent');
    expect(request?.headers['x-goog-api-key']).toBe('test-key');
  });

  it('streams text as SSE GenerateContentResponse chunks', async () => {
    const { model, fake } = await start({ replies: [{ text: 'one two three four' }] });
    const parts = await collect((await model.doStream({ prompt })).stream);
    expect(parts.filter((part) => part.type === 'text-delta').length).toBeGreaterThan(1);
    expect(textOf(parts)).toBe('one two three four');
    expect(parts.find((part) => part.type === 'response-metadata')).toMatchObject({ id: 'fakeResponse0000' });
    expect(parts.find((part) => part.type === 'finish')).toMatchObject({ finishReason: { unified: 'stop' } });
    expect(fake.generationRequests[0]?.query.alt).toBe('sse');
  });

  it('answers function calls, with a thoughtSignature on the first call of a Gemini 3 model', async () => {
    const { model } = await start({}, 'gemini-3-pro-preview');
    fake?.reply(
      { toolCalls: [{ name: 'weather', arguments: { location: 'Paris' } }] },
      { toolCalls: [{ name: 'weather', arguments: { location: 'Rome' }, signature: 'sig-1' }] },
    );
    const result = await model.doGenerate({ prompt, tools: [weatherTool] });
    expect(result.content).toMatchObject([
      {
        type: 'tool-call',
        toolName: 'weather',
        input: '{"location":"Paris"}',
        providerMetadata: { google: { thoughtSignature: 'fake-thought-signature-0' } },
      },
    ]);
    expect(result.finishReason.unified).toBe('tool-calls');
    const parts = await collect((await model.doStream({ prompt, tools: [weatherTool] })).stream);
    expect(parts.find((part) => part.type === 'tool-call')).toMatchObject({
      toolName: 'weather',
      input: '{"location":"Rome"}',
      providerMetadata: { google: { thoughtSignature: 'sig-1' } },
    });
  });

  it('sends thought parts only when includeThoughts is asked for, and the signature either way', async () => {
    const thinking = {
      thinking: { text: 'Let me think', signature: 'sig-t' },
      text: 'Answer',
      usage: { thoughts: 12 },
    };
    const { model } = await start({ replies: [thinking, thinking] }, 'gemini-3-pro-preview');
    const withThoughts = await model.doGenerate({
      prompt,
      providerOptions: { google: { thinkingConfig: { includeThoughts: true } } },
    });
    expect(withThoughts.content).toMatchObject([
      { type: 'reasoning', text: 'Let me think' },
      { type: 'text', text: 'Answer', providerMetadata: { google: { thoughtSignature: 'sig-t' } } },
    ]);
    expect(withThoughts.usage.outputTokens.reasoning).toBe(12);
    const parts = await collect((await model.doStream({ prompt })).stream);
    expect(parts.some((part) => part.type === 'reasoning-delta')).toBe(false);
    expect(textOf(parts)).toBe('Answer');
  });

  it('answers errors in Google shape: 429 RESOURCE_EXHAUSTED with RetryInfo, 503, 500, too many tokens', async () => {
    const { model } = await start({
      replies: [
        { error: { status: 429, retryAfterSeconds: 12 } },
        { error: { status: 503 } },
        { error: { status: 500 } },
        {
          error: {
            status: 400,
            message: 'The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).',
          },
        },
        { error: { status: 429, headers: { 'retry-after': '3' } } },
      ],
    });
    const caught: APICallError[] = [];
    for (let attempt = 0; attempt < 5; attempt++) {
      const error = await rejectionOf(model.doGenerate({ prompt }));
      expect(APICallError.isInstance(error)).toBe(true);
      caught.push(error as APICallError);
    }
    expect(caught.map((error) => error.statusCode)).toEqual([429, 503, 500, 400, 429]);
    expect(JSON.parse(caught[0]?.responseBody ?? '{}')).toEqual({
      error: {
        code: 429,
        message: 'You exceeded your current quota, please check your plan and billing details.',
        status: 'RESOURCE_EXHAUSTED',
        details: [{ '@type': 'type.googleapis.com/google.rpc.RetryInfo', retryDelay: '12s' }],
      },
    });
    expect(JSON.parse(caught[1]?.responseBody ?? '{}')).toMatchObject({ error: { code: 503, status: 'UNAVAILABLE' } });
    expect(JSON.parse(caught[2]?.responseBody ?? '{}')).toMatchObject({ error: { status: 'INTERNAL' } });
    expect(caught[3]?.message).toBe(
      'The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).',
    );
    expect(caught[4]?.responseHeaders?.['retry-after']).toBe('3');
  });

  it('sends a mid-stream error chunk, cuts a stream, and sends truncated function args', async () => {
    const { model } = await start({
      replies: [
        { text: 'one two three', streamError: { afterEvents: 1, type: 'INTERNAL', message: 'boom' } },
        { text: 'one two three four five', cutAfterEvents: 2 },
        { toolCalls: [{ name: 'weather', arguments: { location: 'Paris' } }], malformedToolJson: true },
      ],
    });
    const errored = await collect((await model.doStream({ prompt })).stream).then(
      (parts) => parts,
      (error: unknown) => error,
    );
    const erroredParts = Array.isArray(errored) ? errored : [];
    expect(Array.isArray(errored) ? erroredParts.some((part) => part.type === 'error') : errored).toBeTruthy();
    await expect(collect((await model.doStream({ prompt })).stream)).rejects.toThrow();
    // Gemini's args are a JSON object on the wire; the malformed reply sends a truncated JSON text instead, which the
    // AI SDK passes on as a JSON string: the adapter's argument validation has to catch it.
    const malformed = await model.doGenerate({ prompt, tools: [weatherTool] });
    const input = malformed.content.find((part) => part.type === 'tool-call')?.input ?? '';
    expect(typeof JSON.parse(input)).toBe('string');
    expect(() => JSON.parse(JSON.parse(input) as string)).toThrow();
  });

  it('streams a JSON array without alt=sse, as the API does', async () => {
    const { fake } = await start({ replies: [{ text: 'one two' }] });
    const response = await fetch(`${fake.url}/models/gemini-2.5-flash:streamGenerateContent`, {
      method: 'POST',
      headers: { 'x-goog-api-key': 'k', 'content-type': 'application/json' },
      body: JSON.stringify({ contents: [{ role: 'user', parts: [{ text: 'hi' }] }] }),
    });
    const chunks = (await response.json()) as { candidates: { content: { parts: { text: string }[] } }[] }[];
    expect(chunks.map((chunk) => chunk.candidates[0]?.content.parts[0]?.text).join('')).toBe('one two');
  });
});

describe('FakeGeminiServer checks', () => {
  const contents = [{ role: 'user', parts: [{ text: 'hi' }] }];

  it('refuses a missing key with 403 PERMISSION_DENIED and a wrong one with 400 API_KEY_INVALID; takes ?key=', async () => {
    const { fake } = await start({ apiKey: 'right', replies: [{ text: 'ok' }] });
    const missing = await post(fake.url, 'gemini-2.5-flash', { contents });
    expect(missing.status).toBe(403);
    expect(missing.body.error).toMatchObject({ code: 403, status: 'PERMISSION_DENIED' });
    const wrong = await post(fake.url, 'gemini-2.5-flash', { contents }, { key: 'wrong' });
    expect(wrong.status).toBe(400);
    expect(wrong.body.error).toMatchObject({
      status: 'INVALID_ARGUMENT',
      message: 'API key not valid. Please pass a valid API key.',
      details: [{ reason: 'API_KEY_INVALID' }],
    });
    const viaQuery = await fetch(`${fake.url}/models/gemini-2.5-flash:generateContent?key=right`, {
      method: 'POST',
      body: JSON.stringify({ contents }),
    });
    expect(viaQuery.status).toBe(200);
  });

  const call = (name: string, signature?: string) => ({
    functionCall: { name, args: {} },
    ...(signature === undefined ? {} : { thoughtSignature: signature }),
  });
  const response = (name: string) => ({ functionResponse: { name, response: { result: 'x' } } });
  const cases: [string, Record<string, unknown>, RegExp, string?][] = [
    [
      'a functionResponse whose name matches no preceding functionCall',
      {
        contents: [
          ...contents,
          { role: 'model', parts: [call('weather')] },
          { role: 'user', parts: [response('search')] },
        ],
      },
      /function response name 'search' matches the name of a function call/,
    ],
    [
      'a functionResponse with no function call turn before it',
      { contents: [...contents, { role: 'model', parts: [{ text: 'ok' }] }, { role: 'user', parts: [response('x')] }] },
      /^Please ensure that function response turn comes immediately after a function call turn\.$/,
    ],
    [
      'fewer function responses than calls',
      {
        contents: [
          ...contents,
          { role: 'model', parts: [call('a'), call('b')] },
          { role: 'user', parts: [response('a')] },
        ],
      },
      /number of function response parts is equal to the number of function call parts/,
    ],
    [
      'a role other than user and model',
      { contents: [{ role: 'assistant', parts: [{ text: 'hi' }] }] },
      /^Please use a valid role: user, model\.$/,
    ],
    ['no contents', { contents: [] }, /contents is not specified/],
    [
      'an OpenAI parameter name in generationConfig',
      { contents, generationConfig: { max_tokens: 100, max_output_tokens: 100 } },
      /^Invalid JSON payload received\. Unknown name "max_tokens" at 'generation_config': Cannot find field\.$/,
    ],
    [
      'a function name with a space',
      { contents, tools: [{ functionDeclarations: [{ name: 'search notes', parameters: { type: 'object' } }] }] },
      /function_declarations\[0\]\.name: Invalid function name\./,
    ],
    [
      'a Gemini 3 function call without its thought signature in the current turn',
      {
        contents: [
          ...contents,
          { role: 'model', parts: [call('weather')] },
          { role: 'user', parts: [response('weather')] },
        ],
      },
      /^Function call is missing a thought_signature in functionCall parts\./,
      'gemini-3-pro-preview',
    ],
    [
      'a responseSchema with additionalProperties and $ref',
      {
        contents,
        generationConfig: {
          responseMimeType: 'application/json',
          responseSchema: {
            type: 'object',
            properties: { a: { type: 'string' }, b: { $ref: '#/defs/b' } },
            additionalProperties: false,
          },
        },
      },
      /Unknown name "\$ref" at 'generation_config\.response_schema\.properties\[1\]\.value': Cannot find field\.\nInvalid JSON payload received\. Unknown name "additionalProperties" at 'generation_config\.response_schema'/,
    ],
    [
      'a function parameters schema with a list type',
      {
        contents,
        tools: [
          {
            functionDeclarations: [
              { name: 'f', parameters: { type: 'object', properties: { a: { type: ['string', 'null'] } } } },
            ],
          },
        ],
      },
      /Unknown name "type" at 'tools\[0\]\.function_declarations\[0\]\.parameters\.properties\[0\]\.value': Proto field is not repeating/,
    ],
  ];
  for (const [name, body, expected, model = 'gemini-2.5-flash'] of cases) {
    it(`refuses ${name} with 400 INVALID_ARGUMENT and consumes no reply`, async () => {
      const { fake } = await start({ replies: [{ text: 'should not be sent' }] });
      const answer = await post(fake.url, model, body, { key: 'k' });
      expect(answer.status).toBe(400);
      expect(answer.body.error).toMatchObject({ code: 400, status: 'INVALID_ARGUMENT' });
      expect(String(answer.body.error?.message)).toMatch(expected);
      expect(fake.pendingReplies).toBe(1);
    });
  }

  it('accepts a signed Gemini 3 round trip, and an old unsigned step before the last user text', async () => {
    const { fake } = await start({ replies: [{ text: 'fine' }] });
    const answer = await post(
      fake.url,
      'gemini-3-pro-preview',
      {
        contents: [
          ...contents,
          { role: 'model', parts: [call('weather')] },
          { role: 'user', parts: [response('weather')] },
          { role: 'model', parts: [{ text: 'It is sunny.' }] },
          { role: 'user', parts: [{ text: 'And tomorrow?' }] },
          { role: 'model', parts: [call('weather', 'sig')] },
          { role: 'user', parts: [response('weather')] },
        ],
      },
      { key: 'k' },
    );
    expect(answer.status).toBe(200);
  });

  it('passes the AI SDK own JSON schema output (responseJsonSchema) through', async () => {
    const { model } = await start({ replies: [{ text: '{"name":"x"}' }] });
    const result = await model.doGenerate({
      prompt,
      responseFormat: {
        type: 'json',
        schema: { type: 'object', properties: { name: { type: 'string' } }, additionalProperties: false },
      },
    });
    expect(result.content).toEqual([{ type: 'text', text: '{"name":"x"}' }]);
  });

  it('answers GET /v1beta/models/{model} for a known model and 404 NOT_FOUND for another', async () => {
    const { fake } = await start({ models: ['gemini-2.5-flash'] });
    const known = await fetch(`${fake.url}/models/gemini-2.5-flash`, { headers: { 'x-goog-api-key': 'k' } });
    expect(known.status).toBe(200);
    expect(await known.json()).toMatchObject({ name: 'models/gemini-2.5-flash' });
    const unknown = await fetch(`${fake.url}/models/gemini-nope`, { headers: { 'x-goog-api-key': 'k' } });
    expect(unknown.status).toBe(404);
    expect(await unknown.json()).toMatchObject({ error: { code: 404, status: 'NOT_FOUND' } });
    const generation = await post(fake.url, 'gemini-nope', { contents }, { key: 'k' });
    expect(generation.status).toBe(404);
  });

  it('refuses a prompt longer than maxInputTokens with the input token count message', async () => {
    const { model } = await start({ maxInputTokens: 5 });
    const error = await rejectionOf(model.doGenerate({ prompt }));
    expect((error as Error).message).toMatch(
      /^The input token count \(\d+\) exceeds the maximum number of tokens allowed \(5\)\.$/,
    );
  });
});

// Real captures copied from the AI SDK repository (see ai-sdk-captures/SOURCE.md).
const fixture = (name: string): string => readFileSync(new URL(`./ai-sdk-captures/${name}`, import.meta.url), 'utf8');

describe('FakeGeminiServer replaying captures from the AI SDK repository', () => {
  it('replays google-tool-call-gemini3.chunks.txt raw to the tool call with its signature', async () => {
    const lines = fixture('google-tool-call-gemini3.chunks.txt').split('\n').filter(Boolean);
    const { model } = await start({ replies: [{ rawEvents: lines }] }, 'gemini-3-pro-preview');
    const parts = await collect((await model.doStream({ prompt, tools: [weatherTool] })).stream);
    expect(parts.find((part) => part.type === 'response-metadata')).toMatchObject({ id: 'QHiLaa6LBrb8vdIPoNztsAg' });
    const toolCall = parts.find((part) => part.type === 'tool-call');
    expect(toolCall).toMatchObject({ toolName: 'weather', input: '{"location":"San Francisco"}' });
    expect(
      toolCall?.type === 'tool-call' &&
        String(toolCall.providerMetadata?.google?.thoughtSignature).startsWith('EpEgCo4g'),
    ).toBe(true);
    expect(parts.find((part) => part.type === 'finish')).toMatchObject({
      finishReason: { raw: 'STOP', unified: 'tool-calls' },
    });
  });

  it('replays google-text.chunks.txt and google-text.json raw to their text', async () => {
    const lines = fixture('google-text.chunks.txt').split('\n').filter(Boolean);
    const { model } = await start({ replies: [{ rawEvents: lines }, { rawBody: fixture('google-text.json') }] });
    const parts = await collect((await model.doStream({ prompt })).stream);
    expect(textOf(parts)).toBe('There are **3** "r"s in strawberry.\n\nst**r**awbe**rr**y');
    const result = await model.doGenerate({ prompt });
    expect(result.content[0]).toMatchObject({ type: 'text' });
  });

  it('replays google-reasoning-gemini3.json raw to text carrying its thought signature', async () => {
    const { model } = await start(
      { replies: [{ rawBody: fixture('google-reasoning-gemini3.json') }] },
      'gemini-3-pro-preview',
    );
    const result = await model.doGenerate({ prompt });
    const text = result.content.find((part) => part.type === 'text');
    expect(text).toMatchObject({
      text: 'There are **3** "r"s in strawberry.\n\nHere is the breakdown: st**r**awbe**rr**y.',
    });
    expect(String(text?.providerMetadata?.google?.thoughtSignature)).toMatch(/^EswFCskF/);
    expect(result.usage.outputTokens.reasoning).toBe(258);
  });

  it('replays the captured 429 with RetryInfo', async () => {
    const { model } = await start({
      replies: [{ error: { status: 429, body: fixture('google-429-retry-info.json') } }],
    });
    const error = await rejectionOf(model.doGenerate({ prompt }));
    expect(APICallError.isInstance(error) && error.statusCode).toBe(429);
    expect((error as Error).message).toBe('You exceeded your current quota, please check your plan.');
  });
});
