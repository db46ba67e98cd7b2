import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { createAnthropic } from '@ai-sdk/anthropic';
import { createGoogleGenerativeAI } from '@ai-sdk/google';
import type { LanguageModelV4Prompt } from '@ai-sdk/provider';
import OpenAI from 'openai';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FakeAnthropicServer } from '../testing/fake-anthropic-server.ts';
import { FakeGeminiServer } from '../testing/fake-gemini-server.ts';
import { FakeOpenAiServer } from '../testing/fake-openai-server.ts';
import { type CacheMode, createRecordReplayFetch, findReplayMiss, ReplayMissError } from './record-replay-fetch.ts';

let directory: string;
const servers: { close(): Promise<void> }[] = [];

beforeEach(async () => {
  directory = await mkdtemp(path.join(os.tmpdir(), 'assistant-record-replay-providers-'));
});

afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.close()));
  await rm(directory, { recursive: true, force: true });
});

/** A network that must not be reached: replay runs use it, so reaching it fails the test. */
const unreachable = (async () => {
  throw new Error('The network was called during replay.');
}) as typeof fetch;

/** The text of every read of a response body, in order: the chunks as the caller saw them. */
async function readChunks(response: Response): Promise<string[]> {
  const reader = response.body?.getReader();
  if (reader === undefined) return [];
  const decoder = new TextDecoder();
  const chunks: string[] = [];
  for (let read = await reader.read(); !read.done; read = await reader.read()) {
    chunks.push(decoder.decode(read.value, { stream: true }));
  }
  return chunks;
}

/** Every file under the test's directory with its text. */
async function allFixtureText(): Promise<{ file: string; text: string }[]> {
  const entries = await readdir(directory, { recursive: true, withFileTypes: true });
  return Promise.all(
    entries
      .filter((entry) => entry.isFile())
      .map(async (entry) => {
        const file = path.join(entry.parentPath, entry.name);
        return { file: path.relative(directory, file), text: await readFile(file, 'utf8') };
      }),
  );
}

const systemPrompt = 'You are a helpful assistant.';
const timeLine = (iso: string) => `Current time: ${iso} (Saturday), time zone Europe/Paris.`;

function anthropicRequest(options: { baseUrl: string; apiKey: string; stream: boolean; time: string }) {
  return [
    `${options.baseUrl}/messages`,
    {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': options.apiKey, 'anthropic-version': '2023-06-01' },
      body: JSON.stringify({
        model: 'claude-sonnet-4-5',
        max_tokens: options.stream ? 1024 : 512,
        temperature: options.stream ? 0 : 0.5,
        stream: options.stream,
        system: [
          { type: 'text', text: systemPrompt, cache_control: { type: 'ephemeral' } },
          { type: 'text', text: timeLine(options.time) },
        ],
        messages: [{ role: 'user', content: 'Tell me a short story' }],
      }),
    },
  ] as const;
}

function geminiRequest(options: { baseUrl: string; apiKey: string; time: string }) {
  return [
    `${options.baseUrl}/models/gemini-2.5-flash:streamGenerateContent?alt=sse&key=${options.apiKey}`,
    {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        contents: [{ role: 'user', parts: [{ text: 'Tell me a short story' }] }],
        systemInstruction: { parts: [{ text: `${systemPrompt}\n\n${timeLine(options.time)}` }] },
        generationConfig: { temperature: 0.2, maxOutputTokens: 256 },
      }),
    },
  ] as const;
}

function transport(
  mode: CacheMode,
  provider: 'anthropic' | 'google' | 'openai',
  network: typeof fetch,
  apiKey?: string,
) {
  return createRecordReplayFetch({ mode, directory, provider, fetch: network, ...(apiKey ? { apiKey } : {}) });
}

describe('record and replay per provider', () => {
  it('records an Anthropic stream and replays it chunk by chunk, across hosts, keys, times and sampling', async () => {
    const fake = await FakeAnthropicServer.start({
      replies: [{ text: 'Once upon a time, a small robot learned to sing.' }],
    });
    servers.push(fake);
    const recorded = await transport(
      'record',
      'anthropic',
      globalThis.fetch,
    )(
      ...anthropicRequest({
        baseUrl: fake.url,
        apiKey: 'key-one-123456',
        stream: true,
        time: '2026-11-28T05:00:00+01:00',
      }),
    );
    expect(recorded.headers.get('content-type')).toContain('text/event-stream');
    const recordedChunks = await readChunks(recorded);
    expect(recordedChunks.join('')).toContain('event: message_stop');
    await fake.close();

    const replayed = await transport(
      'replay',
      'anthropic',
      unreachable,
    )(
      ...anthropicRequest({
        baseUrl: 'https://api.anthropic.com/v1',
        apiKey: 'key-two-654321',
        stream: true,
        time: '2027-01-01T09:30:00+01:00',
      }),
    );
    expect(replayed.headers.get('content-type')).toContain('text/event-stream');
    expect(await readChunks(replayed)).toEqual(recordedChunks);

    const [fixture] = await allFixtureText();
    expect(fixture?.file).toMatch(/^anthropic\/tell-me-a-short-story-[0-9a-f]{12}\.json$/);
    const parsed = JSON.parse(fixture?.text ?? '{}');
    expect(parsed.response.chunks.length).toBeGreaterThan(0);
    expect(parsed.response.chunks).toEqual(recordedChunks);
    expect(parsed.request.headers).toEqual({ 'content-type': 'application/json', 'anthropic-version': '2023-06-01' });
    expect(parsed.request.canonical.system).toEqual([
      { type: 'text', text: systemPrompt },
      { type: 'text', text: 'Current time: <volatile>' },
    ]);
  });

  it('keys an Anthropic stream and a plain Anthropic request apart', async () => {
    const fake = await FakeAnthropicServer.start({ replies: [{ text: 'Streamed.' }] });
    servers.push(fake);
    await readChunks(
      await transport(
        'record',
        'anthropic',
        globalThis.fetch,
      )(
        ...anthropicRequest({
          baseUrl: fake.url,
          apiKey: 'key-one-123456',
          stream: true,
          time: '2026-11-28T05:00:00Z',
        }),
      ),
    );
    const error = await transport(
      'replay',
      'anthropic',
      unreachable,
    )(
      ...anthropicRequest({ baseUrl: fake.url, apiKey: 'key-one-123456', stream: false, time: '2026-11-28T05:00:00Z' }),
    ).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(ReplayMissError);
    expect((error as ReplayMissError).closest?.difference).toEqual({
      path: '$.stream',
      recorded: true,
      requested: false,
    });
  });

  it('records a Gemini stream and replays it chunk by chunk, across hosts, keys and times', async () => {
    const fake = await FakeGeminiServer.start({
      replies: [{ text: 'Once upon a time, a small robot learned to sing.' }],
    });
    servers.push(fake);
    const recorded = await transport(
      'record',
      'google',
      globalThis.fetch,
    )(...geminiRequest({ baseUrl: fake.url, apiKey: 'AIzaRecordKey123456', time: '2026-11-28T05:00:00+01:00' }));
    const recordedChunks = await readChunks(recorded);
    expect(recordedChunks.join('')).toContain('data: ');
    await fake.close();

    const replayed = await transport(
      'replay',
      'google',
      unreachable,
    )(
      ...geminiRequest({
        baseUrl: 'https://generativelanguage.googleapis.com/v1beta',
        apiKey: 'AIzaOtherKey654321',
        time: '2027-03-01T12:00:00+01:00',
      }),
    );
    expect(await readChunks(replayed)).toEqual(recordedChunks);
    const [fixture] = await allFixtureText();
    expect(fixture?.file).toMatch(/^google\/tell-me-a-short-story-[0-9a-f]{12}\.json$/);
    const parsed = JSON.parse(fixture?.text ?? '{}');
    expect(parsed.model).toBe('gemini-2.5-flash');
    expect(parsed.request.endpoint).toBe('/models/gemini-2.5-flash:streamGenerateContent');
    expect(parsed.request.canonical.generationConfig).toBeUndefined();
  });

  it('records an OpenAI stream chunk by chunk and replays the same chunks', async () => {
    const fake = await FakeOpenAiServer.start({ replies: [{ text: 'Once upon a time there was a stream.' }] });
    servers.push(fake);
    const request = (baseUrl: string) =>
      [
        `${baseUrl}/chat/completions`,
        {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: 'Bearer sk-openai-test-123456' },
          body: JSON.stringify({
            model: 'fake-model',
            stream: true,
            messages: [{ role: 'user', content: 'Stream a story' }],
          }),
        },
      ] as const;
    const recordedChunks = await readChunks(
      await transport('record', 'openai', globalThis.fetch)(...request(fake.url)),
    );
    await fake.close();
    const replayed = await transport('replay', 'openai', unreachable)(...request('https://api.openai.com/v1'));
    expect(await readChunks(replayed)).toEqual(recordedChunks);
  });
});

describe('secrets at record time', () => {
  const keys = {
    anthropic: 'sk-ant-api03-DistinctiveAnthropicKey-7f3a9c',
    google: 'AIzaSyDistinctiveGeminiKey-4b8e2d1',
    openai: 'sk-proj-DistinctiveOpenAiKey-91c5e0',
  };

  it('leaves no API key, Authorization value or Bearer token anywhere under the fixture directory', async () => {
    // Each fake demands its key, and each answer echoes it, as a proxy's or a misbehaving endpoint's might.
    const anthropic = await FakeAnthropicServer.start({
      apiKey: keys.anthropic,
      replies: [{ text: `Your key is ${keys.anthropic}.` }],
    });
    const gemini = await FakeGeminiServer.start({
      apiKey: keys.google,
      replies: [{ text: `Your key is ${keys.google}.` }],
    });
    const openai = await FakeOpenAiServer.start({ replies: [{ text: `Your header was Bearer ${keys.openai}.` }] });
    servers.push(anthropic, gemini, openai);

    const anthropicResponse = await transport(
      'record',
      'anthropic',
      globalThis.fetch,
      keys.anthropic,
    )(
      ...anthropicRequest({
        baseUrl: anthropic.url,
        apiKey: keys.anthropic,
        stream: true,
        time: '2026-11-28T05:00:00Z',
      }),
    );
    // The caller still gets the answer as sent; only the fixture is scrubbed.
    expect((await readChunks(anthropicResponse)).join('')).toContain('Distinctive');
    expect(anthropic.requests.every((request) => request.rejected === undefined)).toBe(true);
    await readChunks(
      await transport(
        'record',
        'google',
        globalThis.fetch,
      )(...geminiRequest({ baseUrl: gemini.url, apiKey: keys.google, time: '2026-11-28T05:00:00Z' })),
    );
    expect(gemini.requests.every((request) => request.rejected === undefined)).toBe(true);
    const client = new OpenAI({
      baseURL: openai.url,
      apiKey: keys.openai,
      maxRetries: 0,
      fetch: transport('record', 'openai', globalThis.fetch),
    });
    await client.chat.completions.create({ model: 'fake-model', messages: [{ role: 'user', content: 'Hi' }] });

    const files = await allFixtureText();
    expect(files.map((file) => file.file.split('/')[0]).sort()).toEqual(['anthropic', 'google', 'openai']);
    for (const { file, text } of files) {
      for (const key of Object.values(keys)) {
        expect(text, file).not.toContain(key);
        expect(text, file).not.toContain(Buffer.from(key).toString('base64').slice(0, 20));
      }
      expect(text, file).not.toMatch(/Bearer\s+[A-Za-z0-9]/);
      expect(text, file).not.toMatch(/x-api-key|x-goog-api-key|authorization/i);
      expect(text, file).not.toContain('key=');
    }
    expect(files.some(({ text }) => text.includes('[secret]'))).toBe(true);
  });
});

describe('replay never reaches the network', () => {
  const prompt: LanguageModelV4Prompt = [{ role: 'user', content: [{ type: 'text', text: 'Never recorded' }] }];

  it('throws ReplayMissError through the AI SDK Anthropic provider, unwrapped, without calling fetch', async () => {
    const model = createAnthropic({
      baseURL: 'http://127.0.0.1:1/v1',
      apiKey: 'test-key-123456',
      fetch: transport('replay', 'anthropic', unreachable),
    }).languageModel('claude-sonnet-4-5');
    const error = await model.doGenerate({ prompt }).catch((caught: unknown) => caught);
    expect(findReplayMiss(error)).toBeInstanceOf(ReplayMissError);
    expect(findReplayMiss(error)?.provider).toBe('anthropic');
    expect(findReplayMiss(error)?.model).toBe('claude-sonnet-4-5');
  });

  it('throws ReplayMissError through the AI SDK Google provider for a stream, without calling fetch', async () => {
    const model = createGoogleGenerativeAI({
      baseURL: 'http://127.0.0.1:1/v1beta',
      apiKey: 'test-key-123456',
      fetch: transport('replay', 'google', unreachable),
    }).languageModel('gemini-2.5-flash');
    const error = await model.doStream({ prompt }).catch((caught: unknown) => caught);
    expect(findReplayMiss(error)?.model).toBe('gemini-2.5-flash');
  });

  it('finds ReplayMissError as the cause of the openai client connection error', async () => {
    const client = new OpenAI({
      baseURL: 'http://127.0.0.1:1/v1',
      apiKey: 'test',
      maxRetries: 0,
      fetch: transport('replay', 'openai', unreachable),
    });
    const error = await client.chat.completions
      .create({ model: 'gpt-4.1', messages: [{ role: 'user', content: 'Never recorded' }] })
      .catch((caught: unknown) => caught);
    expect(error).not.toBeInstanceOf(ReplayMissError);
    expect(findReplayMiss(error)?.provider).toBe('openai');
  });
});
