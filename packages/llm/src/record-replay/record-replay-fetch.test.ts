import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import OpenAI, { APIConnectionError, APIUserAbortError } from 'openai';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { ChatRequest } from '../chat-types.ts';
import { createOpenAiChatModel } from '../openai-chat-model.ts';
import { FakeOpenAiServer, type FakeOpenAiServerOptions } from '../testing/fake-openai-server.ts';
import { fixtureKey, legacyRequestKey } from './fixture-files.ts';
import { type CacheMode, createRecordReplayFetch, ReplayMissError } from './record-replay-fetch.ts';
import { canonicalRequest } from './wire-formats.ts';

/** The key of an OpenAI-wire request filed under `openai-compatible`, the default provider of `/chat/completions`. */
function requestKey(body: Record<string, unknown>): string {
  return fixtureKey({ provider: 'openai-compatible', canonical: canonicalRequest('openai', body) });
}

/** Every fixture file under the test's directory, relative. */
async function fixtureFiles(): Promise<string[]> {
  return (await readdir(directory, { recursive: true, withFileTypes: true }))
    .filter((entry) => entry.isFile())
    .map((entry) => path.relative(directory, path.join(entry.parentPath, entry.name)))
    .sort();
}

let directory: string;
let server: FakeOpenAiServer | undefined;

beforeEach(async () => {
  directory = await mkdtemp(path.join(os.tmpdir(), 'assistant-record-replay-'));
});

afterEach(async () => {
  await server?.close();
  server = undefined;
  await rm(directory, { recursive: true, force: true });
});

/** A fetch that keeps the text of every response it passes on, read from a clone so the caller still gets a body. */
function capturingFetch(inner: typeof fetch): { fetch: typeof fetch; bodies: Promise<string>[] } {
  const bodies: Promise<string>[] = [];
  const wrapped = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const response = await inner(input, init);
    bodies.push(response.clone().text());
    return response;
  };
  return { fetch: wrapped as typeof fetch, bodies };
}

/** A network that must not be reached, for replay runs. */
const unreachable = (async () => {
  throw new Error('The network was called during replay.');
}) as typeof fetch;

async function startServer(options: FakeOpenAiServerOptions): Promise<FakeOpenAiServer> {
  server = await FakeOpenAiServer.start(options);
  return server;
}

function clientFor(baseURL: string, mode: CacheMode, network: typeof fetch = globalThis.fetch): OpenAI {
  return new OpenAI({
    baseURL,
    apiKey: 'test',
    maxRetries: 0,
    fetch: createRecordReplayFetch({ mode, directory, fetch: network }),
  });
}

const tools: OpenAI.Chat.Completions.ChatCompletionTool[] = [
  {
    type: 'function',
    function: { name: 'lookup', description: 'Look a thing up', parameters: { type: 'object', properties: {} } },
  },
];

/** Three conversations: a text answer, a tool call, and a streamed text answer. */
async function runConversations(client: OpenAI): Promise<unknown[]> {
  const text = await client.chat.completions.create({
    model: 'fake-model',
    messages: [{ role: 'user', content: 'Say hello' }],
  });
  const toolCall = await client.chat.completions.create({
    model: 'fake-model',
    messages: [{ role: 'user', content: 'Look something up' }],
    tools,
  });
  const stream = await client.chat.completions.create({
    model: 'fake-model',
    messages: [{ role: 'user', content: 'Stream a story' }],
    stream: true,
    stream_options: { include_usage: true },
  });
  const chunks: unknown[] = [];
  for await (const chunk of stream) chunks.push(chunk);
  return [text, toolCall, chunks];
}

describe('createRecordReplayFetch', () => {
  it('records a run and replays it byte for byte without the network', async () => {
    const fake = await startServer({
      replies: [
        { text: 'Hello!' },
        { toolCalls: [{ name: 'lookup', arguments: { query: 'thing' } }] },
        { text: 'Once upon a time there was a streamed story.' },
      ],
    });
    const network = capturingFetch(globalThis.fetch);
    const recorded = await runConversations(clientFor(fake.url, 'record', network.fetch));
    const networkBodies = await Promise.all(network.bodies);
    const url = fake.url;
    await fake.close();

    const received = capturingFetch(createRecordReplayFetch({ mode: 'replay', directory, fetch: unreachable }));
    const replayClient = new OpenAI({ baseURL: url, apiKey: 'test', maxRetries: 0, fetch: received.fetch });
    const replayed = await runConversations(replayClient);

    expect(await Promise.all(received.bodies)).toEqual(networkBodies);
    expect(networkBodies[2]).toContain('data: [DONE]');
    expect(replayed).toEqual(recorded);
  });

  it('replays a plain recording to a streaming request and a streamed one to a plain request', async () => {
    const text: ChatRequest = { messages: [{ role: 'user', content: 'Tell a story' }] };
    const tools: ChatRequest = {
      messages: [{ role: 'user', content: 'Look two things up' }],
      tools: [{ name: 'lookup', description: 'Look a thing up', parameters: { type: 'object' } }],
    };
    const story = 'Once upon a time there was a recorded story.';
    const calls = [
      { name: 'lookup', arguments: { q: 'one' }, id: 'call_1' },
      { name: 'lookup', arguments: { q: 'two' }, id: 'call_2' },
    ];
    const fake = await startServer({ replies: [{ text: story }, { toolCalls: calls, text: 'Both.' }] });
    const modelOver = (mode: CacheMode, network: typeof fetch) =>
      createOpenAiChatModel({
        name: 'test',
        baseUrl: fake.url,
        model: 'fake-model',
        maxRetries: 0,
        fetch: createRecordReplayFetch({ mode, directory, fetch: network }),
      });
    const recorder = modelOver('record', globalThis.fetch);
    const recordedStory = await recorder.chat(text);
    const recordedTools = await recorder.chat(tools, { onDelta: () => {} });
    await fake.close();

    const replayer = modelOver('replay', unreachable);
    const deltas: string[] = [];
    expect(await replayer.chat(text, { onDelta: (delta) => deltas.push(delta.text) })).toEqual(recordedStory);
    expect(deltas.join('')).toBe(story);
    expect(await replayer.chat(tools)).toEqual(recordedTools);
    expect(recordedTools.message.toolCalls.map((call) => call.id)).toEqual(['call_1', 'call_2']);
  });

  it('throws ReplayMissError naming the key, the provider and the closest fixture when nothing was recorded', async () => {
    const fake = await startServer({ replies: [{ text: 'Recorded' }] });
    await clientFor(fake.url, 'record').chat.completions.create({
      model: 'fake-model',
      messages: [
        { role: 'system', content: 'You sort mail.' },
        { role: 'user', content: 'Sort this: invoice from ACME' },
      ],
    });
    const replayFetch = createRecordReplayFetch({ mode: 'replay', directory, fetch: unreachable });
    const body = {
      model: 'fake-model',
      messages: [
        { role: 'system', content: 'You sort mail.' },
        { role: 'user', content: 'Sort this: newsletter from ACME' },
      ],
    };
    const key = requestKey(body);
    const error = await replayFetch('http://127.0.0.1:1/v1/chat/completions', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    }).catch((caught: unknown) => caught);

    expect(error).toBeInstanceOf(ReplayMissError);
    const miss = error as ReplayMissError;
    expect(miss.code).toBe('LLM_REPLAY_MISS');
    expect(miss.key).toBe(key);
    expect(miss.provider).toBe('openai-compatible');
    expect(miss.closest?.file).toBe(path.join(directory, (await fixtureFiles())[0] ?? ''));
    expect(miss.closest?.difference).toEqual({
      path: '$.messages[1].content',
      recorded: 'Sort this: invoice from ACME',
      requested: 'Sort this: newsletter from ACME',
    });
    expect(miss.message).toContain(key);
    expect(miss.message).toContain('openai-compatible');
    expect(miss.message).toContain(miss.closest?.file);
    expect(miss.message).toContain(
      '$.messages[1].content: recorded "Sort this: invoice from ACME", requested "Sort this: newsletter from ACME"',
    );
  });

  it('says there is no fixture to compare with when the provider has none', async () => {
    const replayFetch = createRecordReplayFetch({ mode: 'replay', directory, fetch: unreachable });
    const error = await replayFetch('http://127.0.0.1:1/v1/chat/completions', {
      method: 'POST',
      body: JSON.stringify({ model: 'fake-model', messages: [{ role: 'user', content: 'Never recorded' }] }),
    }).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(ReplayMissError);
    expect((error as ReplayMissError).closest).toBeUndefined();
    expect((error as ReplayMissError).message).toContain('No fixture of this provider to compare with');
  });

  it('reaches the openai client as the cause of its connection error on a replay miss', async () => {
    const client = clientFor('http://127.0.0.1:1/v1', 'replay', unreachable);
    const error = await client.chat.completions
      .create({ model: 'fake-model', messages: [{ role: 'user', content: 'Never recorded' }] })
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(APIConnectionError);
    expect((error as APIConnectionError).cause).toBeInstanceOf(ReplayMissError);
  });

  it('records once in auto mode and replays after that', async () => {
    const fake = await startServer({ replies: [{ text: 'Only once' }] });
    const client = clientFor(fake.url, 'auto');
    const request = { model: 'fake-model', messages: [{ role: 'user' as const, content: 'Hi' }] };
    const first = await client.chat.completions.create(request);
    const second = await client.chat.completions.create(request);
    expect(fake.requests).toHaveLength(1);
    expect(second).toEqual(first);
  });

  it('overwrites a recording in record mode', async () => {
    const fake = await startServer({ replies: [{ text: 'first' }, { text: 'second' }] });
    const client = clientFor(fake.url, 'record');
    const request = { model: 'fake-model', messages: [{ role: 'user' as const, content: 'Hi' }] };
    await client.chat.completions.create(request);
    await client.chat.completions.create(request);
    expect(fake.requests).toHaveLength(2);
    const replayed = await clientFor(fake.url, 'replay', unreachable).chat.completions.create(request);
    expect(replayed.choices[0]?.message.content).toBe('second');
    expect(await fixtureFiles()).toEqual([`openai-compatible/hi-${requestKey(request).slice(0, 12)}.json`]);
  });

  it.each(['off', 'live'] as const)('neither reads nor writes recordings in %s mode', async (mode) => {
    const fake = await startServer({ replies: [{ text: 'one' }, { text: 'two' }] });
    const client = clientFor(fake.url, mode);
    const request = { model: 'fake-model', messages: [{ role: 'user' as const, content: 'Hi' }] };
    await client.chat.completions.create(request);
    await client.chat.completions.create(request);
    expect(fake.requests).toHaveLength(2);
    expect(await readdir(directory)).toEqual([]);
  });

  it.each(['record', 'auto'] as const)(
    'passes requests that are not model requests straight through in %s mode',
    async (mode) => {
      const fake = await startServer({ models: ['alpha'] });
      const models = await clientFor(fake.url, mode).models.list();
      expect(models.data.map((model) => model.id)).toEqual(['alpha']);
      expect(await readdir(directory)).toEqual([]);
    },
  );

  it('refuses requests that are not model requests in replay mode, without the network', async () => {
    const replayFetch = createRecordReplayFetch({ mode: 'replay', directory, fetch: unreachable });
    const listing = await replayFetch('http://127.0.0.1:1/v1/models?key=AIzaVisibleKey').catch(
      (caught: unknown) => caught,
    );
    expect(listing).toBeInstanceOf(ReplayMissError);
    expect((listing as ReplayMissError).message).toContain('GET http://127.0.0.1:1/v1/models is not a model request');
    expect((listing as ReplayMissError).message).not.toContain('AIzaVisibleKey');
    const embedding = await replayFetch('http://127.0.0.1:1/v1/embeddings', {
      method: 'POST',
      body: JSON.stringify({ model: 'embed', input: 'text' }),
    }).catch((caught: unknown) => caught);
    expect(embedding).toBeInstanceOf(ReplayMissError);
  });

  it('does not record error responses', async () => {
    const fake = await startServer({ replies: [{ error: { status: 429, retryAfterSeconds: 1 } }, { text: 'ok' }] });
    const client = clientFor(fake.url, 'auto');
    const request = { model: 'fake-model', messages: [{ role: 'user' as const, content: 'Hi' }] };
    await expect(client.chat.completions.create(request)).rejects.toMatchObject({ status: 429 });
    const completion = await client.chat.completions.create(request);
    expect(completion.choices[0]?.message.content).toBe('ok');
    expect(fake.requests).toHaveLength(2);
  });

  it('writes one readable, pretty-printed file per exchange, named for a person and findable by key', async () => {
    const fake = await startServer({ replies: [{ text: 'Readable' }] });
    const request = {
      model: 'fake-model',
      messages: [{ role: 'user' as const, content: 'Hi there, how are you today my friend?' }],
      temperature: 0,
    };
    await clientFor(fake.url, 'record').chat.completions.create(request);
    const key = requestKey(request);
    const name = `openai-compatible/hi-there-how-are-you-today-${key.slice(0, 12)}.json`;
    expect(await fixtureFiles()).toEqual([name]);
    const text = await readFile(path.join(directory, name), 'utf8');
    expect(text).toContain('\n  "key"');
    const fixture = JSON.parse(text);
    expect(fixture).toMatchObject({
      key,
      provider: 'openai-compatible',
      model: 'fake-model',
      recorded_at: expect.any(String),
      request: {
        endpoint: '/chat/completions',
        stream: false,
        headers: { 'content-type': 'application/json' },
        canonical: { model: 'fake-model', messages: request.messages },
      },
      response: { status: 200, content_type: expect.stringContaining('application/json') },
    });
    // Sampling parameters are not part of the canonical request.
    expect(fixture.request.canonical.temperature).toBeUndefined();
    expect(fixture.response.json.choices[0].message.content).toBe('Readable');
  });

  it('names files by the label it is given', async () => {
    const fake = await startServer({ replies: [{ text: 'Labelled' }] });
    const fetchWithLabel = createRecordReplayFetch({ mode: 'record', directory, label: () => 'Email classify' });
    const client = new OpenAI({ baseURL: fake.url, apiKey: 'test', maxRetries: 0, fetch: fetchWithLabel });
    const request = { model: 'fake-model', messages: [{ role: 'user' as const, content: 'Hi' }] };
    await client.chat.completions.create(request);
    expect(await fixtureFiles()).toEqual([`openai-compatible/email-classify-${requestKey(request).slice(0, 12)}.json`]);
  });

  it('replays a first-version recording (<directory>/<sha256>.json) it finds for an OpenAI request', async () => {
    const request = { model: 'fake-model', messages: [{ role: 'user' as const, content: 'Old times' }] };
    const legacyKey = legacyRequestKey(request);
    const completion = {
      id: 'chatcmpl-old',
      object: 'chat.completion',
      created: 1,
      model: 'fake-model',
      choices: [{ index: 0, message: { role: 'assistant', content: 'From the first version' }, finish_reason: 'stop' }],
    };
    await writeFile(
      path.join(directory, `${legacyKey}.json`),
      JSON.stringify({
        key: legacyKey,
        recorded_at: '2026-01-01T00:00:00.000Z',
        request: { url: 'http://127.0.0.1:1/v1/chat/completions', body: request },
        response: { status: 200, content_type: 'application/json', body: JSON.stringify(completion) },
      }),
    );
    const replayed = await clientFor('http://127.0.0.1:1/v1', 'replay', unreachable).chat.completions.create(request);
    expect(replayed.choices[0]?.message.content).toBe('From the first version');
  });

  it('writes the source citation it is given', async () => {
    const fake = await startServer({ replies: [{ text: 'cited' }] });
    const source = 'Built from the real capture vercel/ai packages/openai/src/__fixtures__/x.json; edited: the text.';
    const cited = createRecordReplayFetch({ mode: 'record', directory, source: () => source });
    const client = new OpenAI({ baseURL: fake.url, apiKey: 'test', maxRetries: 0, fetch: cited });
    await client.chat.completions.create({ model: 'fake-model', messages: [{ role: 'user', content: 'Hi' }] });
    const [name] = await fixtureFiles();
    expect(JSON.parse(await readFile(path.join(directory, name ?? ''), 'utf8')).source).toBe(source);
  });

  it('keeps the source citation of a fixture it records again', async () => {
    const fake = await startServer({ replies: [{ text: 'first' }, { text: 'second' }] });
    const request = { model: 'fake-model', messages: [{ role: 'user' as const, content: 'Cite me' }] };
    await clientFor(fake.url, 'record').chat.completions.create(request);
    const [name] = await fixtureFiles();
    const file = path.join(directory, name ?? '');
    const source = { repository: 'vercel/ai', path: 'x.json', commit: 'abc', edited: 'the model name' };
    await writeFile(file, JSON.stringify({ ...JSON.parse(await readFile(file, 'utf8')), source }, null, 2));
    await clientFor(fake.url, 'record').chat.completions.create(request);
    const rerecorded = JSON.parse(await readFile(file, 'utf8'));
    expect(rerecorded.source).toEqual(source);
    expect(rerecorded.response.json.choices[0].message.content).toBe('second');
  });

  it('rejects with the abort when the signal is already aborted', async () => {
    const replayFetch = createRecordReplayFetch({ mode: 'replay', directory, fetch: unreachable });
    const controller = new AbortController();
    controller.abort();
    await expect(
      replayFetch('http://127.0.0.1:1/v1/chat/completions', {
        method: 'POST',
        body: JSON.stringify({ model: 'm', messages: [] }),
        signal: controller.signal,
      }),
    ).rejects.toMatchObject({ name: 'AbortError' });
  });

  it('lets the openai client abort a request that is being recorded', async () => {
    let arrived: () => void = () => {};
    const requestArrived = new Promise<void>((resolve) => {
      arrived = resolve;
    });
    const fake = await startServer({
      respond: () => {
        arrived();
        // Far longer than the test timeout: only the abort can end this request in time.
        return { text: 'too late', delayMs: 120_000 };
      },
    });
    const controller = new AbortController();
    const pending = clientFor(fake.url, 'auto').chat.completions.create(
      { model: 'fake-model', messages: [{ role: 'user', content: 'Hi' }] },
      { signal: controller.signal },
    );
    await requestArrived;
    controller.abort();
    await expect(pending).rejects.toBeInstanceOf(APIUserAbortError);
    expect(await readdir(directory)).toEqual([]);
  });
});
