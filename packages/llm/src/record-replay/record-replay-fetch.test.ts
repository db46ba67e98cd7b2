import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import OpenAI, { APIConnectionError, APIUserAbortError } from 'openai';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { ChatRequest } from '../chat-types.ts';
import { createOpenAiChatModel } from '../openai-chat-model.ts';
import { FakeOpenAiServer, type FakeOpenAiServerOptions } from '../testing/fake-openai-server.ts';
import { type CacheMode, createRecordReplayFetch, ReplayMissError, requestKey } from './record-replay-fetch.ts';

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

  it('throws ReplayMissError naming the key and the file when nothing was recorded', async () => {
    const replayFetch = createRecordReplayFetch({ mode: 'replay', directory, fetch: unreachable });
    const body = { model: 'fake-model', messages: [{ role: 'user', content: 'Never recorded' }] };
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
    expect(miss.file).toBe(path.join(directory, `${key}.json`));
    expect(miss.message).toContain(key);
    expect(miss.message).toContain(miss.file);
    expect(miss.message).toContain('set llm cache mode to record (or auto) with a reachable endpoint');
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
    expect(await readdir(directory)).toEqual([`${requestKey(request)}.json`]);
  });

  it('neither reads nor writes recordings in off mode', async () => {
    const fake = await startServer({ replies: [{ text: 'one' }, { text: 'two' }] });
    const client = clientFor(fake.url, 'off');
    const request = { model: 'fake-model', messages: [{ role: 'user' as const, content: 'Hi' }] };
    await client.chat.completions.create(request);
    await client.chat.completions.create(request);
    expect(fake.requests).toHaveLength(2);
    expect(await readdir(directory)).toEqual([]);
  });

  it('passes requests that are not chat completions straight through, even in replay mode', async () => {
    const fake = await startServer({ models: ['alpha'] });
    const models = await clientFor(fake.url, 'replay').models.list();
    expect(models.data.map((model) => model.id)).toEqual(['alpha']);
    expect(await readdir(directory)).toEqual([]);
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

  it('writes readable, pretty-printed JSON files', async () => {
    const fake = await startServer({ replies: [{ text: 'Readable' }] });
    const request = { model: 'fake-model', messages: [{ role: 'user' as const, content: 'Hi' }], temperature: 0 };
    await clientFor(fake.url, 'record').chat.completions.create(request);
    const key = requestKey(request);
    const text = await readFile(path.join(directory, `${key}.json`), 'utf8');
    expect(text).toContain('\n  "key"');
    const recording = JSON.parse(text);
    expect(recording).toMatchObject({
      key,
      recorded_at: expect.any(String),
      request: { url: `${fake.url}/chat/completions`, body: request },
      response: { status: 200, content_type: expect.stringContaining('application/json') },
    });
    expect(JSON.parse(recording.response.body).choices[0].message.content).toBe('Readable');
    // No leftover temporary files from the atomic write.
    expect(await readdir(directory)).toEqual([`${key}.json`]);
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

describe('requestKey', () => {
  const base = {
    model: 'fake-model',
    messages: [{ role: 'user', content: 'Hi' }],
    tools: [{ type: 'function', function: { name: 'lookup', parameters: { type: 'object' } } }],
    response_format: { type: 'json_object' },
  };

  it('is a SHA-256 hex digest', () => {
    expect(requestKey(base)).toMatch(/^[0-9a-f]{64}$/);
  });

  it('ignores fields other than model, messages, tools and response_format', () => {
    expect(
      requestKey({ ...base, stream: true, stream_options: { include_usage: true }, temperature: 0.7, max_tokens: 10 }),
    ).toBe(requestKey(base));
  });

  it('ignores key order at every depth', () => {
    const reordered = {
      response_format: { type: 'json_object' },
      tools: [{ function: { parameters: { type: 'object' }, name: 'lookup' }, type: 'function' }],
      messages: [{ content: 'Hi', role: 'user' }],
      model: 'fake-model',
    };
    expect(requestKey(reordered)).toBe(requestKey(base));
  });

  it('differs when messages, model, tools or response_format differ', () => {
    const keys = new Set([
      requestKey(base),
      requestKey({ ...base, messages: [{ role: 'user', content: 'Hello' }] }),
      requestKey({ ...base, model: 'other-model' }),
      requestKey({ ...base, tools: [] }),
      requestKey({ ...base, response_format: { type: 'text' } }),
    ]);
    expect(keys.size).toBe(5);
  });

  it('treats an absent field like an undefined one', () => {
    const { tools: _tools, ...withoutTools } = base;
    expect(requestKey({ ...withoutTools, tools: undefined })).toBe(requestKey(withoutTools));
  });
});
