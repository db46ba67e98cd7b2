import OpenAI, { APIError, APIUserAbortError } from 'openai';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { FakeOpenAiServer, type FakeOpenAiServerOptions, type FakeReply } from './fake-openai-server.ts';

let server: FakeOpenAiServer | undefined;

afterEach(async () => {
  await server?.close();
  server = undefined;
});

async function start(options: FakeOpenAiServerOptions = {}): Promise<{ server: FakeOpenAiServer; client: OpenAI }> {
  server = await FakeOpenAiServer.start(options);
  return { server, client: new OpenAI({ baseURL: server.url, apiKey: 'test', maxRetries: 0 }) };
}

const messages = [{ role: 'user' as const, content: 'Hello there' }];

/** Join a streamed completion's deltas into content and tool calls, the way a streaming consumer would. */
async function assemble(
  stream:
    | AsyncIterable<OpenAI.Chat.Completions.ChatCompletionChunk>
    | Iterable<OpenAI.Chat.Completions.ChatCompletionChunk>,
): Promise<{
  content: string;
  toolCalls: { id: string; name: string; arguments: string }[];
  finishReason: string | null;
  usage: OpenAI.CompletionUsage | null | undefined;
}> {
  let content = '';
  let finishReason: string | null = null;
  let usage: OpenAI.CompletionUsage | null | undefined;
  const toolCalls: { id: string; name: string; arguments: string }[] = [];
  for await (const chunk of stream) {
    if (chunk.usage) usage = chunk.usage;
    const choice = chunk.choices[0];
    if (choice === undefined) continue;
    content += choice.delta.content ?? '';
    for (const call of choice.delta.tool_calls ?? []) {
      toolCalls[call.index] ??= { id: '', name: '', arguments: '' };
      const existing = toolCalls[call.index];
      if (existing === undefined) continue;
      existing.id += call.id ?? '';
      existing.name += call.function?.name ?? '';
      existing.arguments += call.function?.arguments ?? '';
    }
    finishReason = choice.finish_reason ?? finishReason;
  }
  return { content, toolCalls, finishReason, usage };
}

describe('FakeOpenAiServer', () => {
  it('answers a text reply as a chat.completion that echoes the model', async () => {
    const { client } = await start({ replies: [{ text: 'Hi!', usage: { prompt: 7, completion: 2 } }] });
    const completion = await client.chat.completions.create({ model: 'my-model', messages });
    expect(completion.object).toBe('chat.completion');
    expect(completion.model).toBe('my-model');
    expect(completion.choices[0]?.message).toMatchObject({ role: 'assistant', content: 'Hi!' });
    expect(completion.choices[0]?.finish_reason).toBe('stop');
    expect(completion.usage).toEqual({ prompt_tokens: 7, completion_tokens: 2, total_tokens: 9 });
  });

  it('computes a rough usage when the reply gives none', async () => {
    const { client } = await start({ replies: [{ text: 'A reply of some length' }] });
    const completion = await client.chat.completions.create({ model: 'm', messages });
    expect(completion.usage?.prompt_tokens).toBeGreaterThan(0);
    expect(completion.usage?.completion_tokens).toBeGreaterThan(0);
    expect(completion.usage?.total_tokens).toBe(
      (completion.usage?.prompt_tokens ?? 0) + (completion.usage?.completion_tokens ?? 0),
    );
  });

  it('answers tool calls with object and string arguments', async () => {
    const { client } = await start({
      replies: [
        {
          toolCalls: [
            { name: 'search', arguments: { query: 'weather' }, id: 'call_1' },
            { name: 'broken', arguments: '{not json' },
          ],
        },
      ],
    });
    const completion = await client.chat.completions.create({ model: 'm', messages });
    const choice = completion.choices[0];
    expect(choice?.finish_reason).toBe('tool_calls');
    expect(choice?.message.content).toBeNull();
    expect(choice?.message.tool_calls).toEqual([
      { id: 'call_1', type: 'function', function: { name: 'search', arguments: '{"query":"weather"}' } },
      { id: expect.any(String), type: 'function', function: { name: 'broken', arguments: '{not json' } },
    ]);
  });

  it('streams text in several deltas, then usage when asked for', async () => {
    const { client } = await start({ replies: [{ text: 'Streaming text that is split into pieces' }] });
    const stream = await client.chat.completions.create({
      model: 'm',
      messages,
      stream: true,
      stream_options: { include_usage: true },
    });
    const contentDeltas: string[] = [];
    const chunks: OpenAI.Chat.Completions.ChatCompletionChunk[] = [];
    for await (const chunk of stream) {
      chunks.push(chunk);
      const content = chunk.choices[0]?.delta.content;
      if (content) contentDeltas.push(content);
    }
    expect(contentDeltas.length).toBeGreaterThan(1);
    expect(contentDeltas.join('')).toBe('Streaming text that is split into pieces');
    const result = await assemble(chunks);
    expect(result.finishReason).toBe('stop');
    expect(result.usage?.total_tokens).toBeGreaterThan(0);
  });

  it('streams a word a chunk, waits chunkDelayMs between chunks, and breaks off after breakAfterChunks', async () => {
    const { client, server: fake } = await start({
      replies: [
        { text: 'one two three four', chunkDelayMs: 20 },
        { text: 'one two three four', breakAfterChunks: 2 },
      ],
    });
    const words: string[] = [];
    const arrivals: number[] = [];
    const stream = await client.chat.completions.create({ model: 'm', messages, stream: true });
    for await (const chunk of stream) {
      const content = chunk.choices[0]?.delta.content;
      if (content) {
        words.push(content);
        arrivals.push(Date.now());
      }
    }
    expect(words).toEqual(['one ', 'two ', 'three ', 'four']);
    // Each word was held back at least the delay after the request arrived (a lower bound, never a deadline).
    const received = fake.requests[0]?.receivedAt ?? 0;
    expect((arrivals.at(-1) ?? 0) - received).toBeGreaterThanOrEqual(3 * 20 - 5);

    const broken: string[] = [];
    const cut = await client.chat.completions.create({ model: 'm', messages, stream: true });
    await expect(
      (async () => {
        for await (const chunk of cut) broken.push(chunk.choices[0]?.delta.content ?? '');
      })(),
    ).rejects.toThrow();
    expect(broken).toEqual(['one ', 'two ']);
  });

  it('streams tool calls as deltas that assemble into the scripted calls', async () => {
    const { client } = await start({
      replies: [
        { toolCalls: [{ name: 'lookup', arguments: { id: 42, note: 'some longer arguments' }, id: 'call_a' }] },
      ],
    });
    const stream = await client.chat.completions.create({ model: 'm', messages, stream: true });
    const result = await assemble(stream);
    expect(result.finishReason).toBe('tool_calls');
    expect(result.toolCalls).toEqual([
      { id: 'call_a', name: 'lookup', arguments: JSON.stringify({ id: 42, note: 'some longer arguments' }) },
    ]);
    expect(result.usage).toBeUndefined();
  });

  it('answers a json reply with its JSON text as content', async () => {
    const { client } = await start({ replies: [{ json: { label: 'invoice', confidence: 0.9 } }] });
    const completion = await client.chat.completions.create({ model: 'm', messages });
    expect(JSON.parse(completion.choices[0]?.message.content ?? '')).toEqual({ label: 'invoice', confidence: 0.9 });
  });

  it('answers 429 with a retry-after header the client can see', async () => {
    const { client } = await start({
      replies: [{ error: { status: 429, message: 'slow down', retryAfterSeconds: 7 } }],
    });
    const error = await client.chat.completions.create({ model: 'm', messages }).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(APIError);
    const apiError = error as APIError;
    expect(apiError.status).toBe(429);
    expect(apiError.headers?.get('retry-after')).toBe('7');
    expect(apiError.message).toContain('slow down');
  });

  it('answers 500 with the OpenAI error body', async () => {
    const { client } = await start({ replies: [{ error: { status: 500 } }] });
    const error = await client.chat.completions.create({ model: 'm', messages }).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(APIError);
    expect((error as APIError).status).toBe(500);
    expect((error as APIError).type).toBe('server_error');
  });

  it('makes the client throw on a malformed body', async () => {
    const { client } = await start({ replies: [{ malformed: true }, { malformed: true }] });
    await expect(client.chat.completions.create({ model: 'm', messages })).rejects.toThrow();
    // The client logs the event it could not parse before throwing; keep that out of the test output.
    const consoleError = vi.spyOn(console, 'error').mockImplementation(() => {});
    try {
      const stream = await client.chat.completions.create({ model: 'm', messages, stream: true });
      await expect(assemble(stream)).rejects.toThrow();
    } finally {
      consoleError.mockRestore();
    }
  });

  it('lets the client abort a delayed reply', async () => {
    let arrived: () => void = () => {};
    const requestArrived = new Promise<void>((resolve) => {
      arrived = resolve;
    });
    const { client } = await start({
      respond: () => {
        arrived();
        // Far longer than the test timeout: only the abort can end this request in time.
        return { text: 'too late', delayMs: 120_000 };
      },
    });
    const controller = new AbortController();
    const pending = client.chat.completions.create({ model: 'm', messages }, { signal: controller.signal });
    await requestArrived;
    controller.abort();
    await expect(pending).rejects.toBeInstanceOf(APIUserAbortError);
  });

  it('answers after a short delay when nobody aborts', async () => {
    const { client } = await start({ replies: [{ text: 'eventually', delayMs: 20 }] });
    const completion = await client.chat.completions.create({ model: 'm', messages });
    expect(completion.choices[0]?.message.content).toBe('eventually');
  });

  it('records every chat request in order with body and headers', async () => {
    const { server, client } = await start({ replies: [{ text: 'one' }] });
    server.reply({ text: 'two' });
    await client.chat.completions.create({ model: 'first', messages });
    await client.chat.completions.create({ model: 'second', messages, temperature: 0.2 });
    expect(server.requests.map((request) => request.body.model)).toEqual(['first', 'second']);
    expect(server.requests[1]?.body.temperature).toBe(0.2);
    expect(server.requests[0]?.headers.authorization).toBe('Bearer test');
    expect(server.requests[0]?.receivedAt).toEqual(expect.any(Number));
  });

  it('computes replies with respond, which takes precedence over replies', async () => {
    const { client } = await start({
      replies: [{ text: 'scripted' }],
      respond: (request, index) => ({ text: `${String(request.body.model)} #${index}` }),
    });
    const first = await client.chat.completions.create({ model: 'm', messages });
    const second = await client.chat.completions.create({ model: 'm', messages });
    expect(first.choices[0]?.message.content).toBe('m #0');
    expect(second.choices[0]?.message.content).toBe('m #1');
  });

  it('lists the configured models', async () => {
    const { client } = await start({ models: ['alpha', 'beta'] });
    const models = await client.models.list();
    expect(models.data.map((model) => model.id)).toEqual(['alpha', 'beta']);
  });

  it('lists fake-model by default', async () => {
    const { client } = await start();
    const models = await client.models.list();
    expect(models.data.map((model) => model.id)).toEqual(['fake-model']);
  });

  it('answers 500 and still records the request when the replies run out', async () => {
    const { server, client } = await start({ replies: [{ text: 'only one' }] });
    await client.chat.completions.create({ model: 'm', messages });
    const error = await client.chat.completions.create({ model: 'm', messages }).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(APIError);
    expect((error as APIError).status).toBe(500);
    expect((error as APIError).message).toContain('no scripted reply left');
    expect(server.requests).toHaveLength(2);
  });

  it('refuses connections while down and answers again on the same address after recover()', async () => {
    const { server, client } = await start({ respond: () => ({ text: 'up' }) });
    const first = await client.chat.completions.create({ model: 'm', messages });
    expect(first.choices[0]?.message.content).toBe('up');
    await server.refuseConnections();
    const refused = await fetch(`${server.url}/chat/completions`, { method: 'POST', body: '{}' }).catch(
      (error: unknown) => error,
    );
    expect(refused).toBeInstanceOf(TypeError);
    expect(String((refused as TypeError).cause)).toMatch(/ECONNREFUSED/);
    await server.recover();
    const again = await client.chat.completions.create({ model: 'm', messages });
    expect(again.choices[0]?.message.content).toBe('up');
  });

  it('answers every request with an error while failWith() holds, then normally', async () => {
    const { server, client } = await start({ respond: () => ({ text: 'fine' }) });
    server.failWith({ status: 429, retryAfterSeconds: 7 });
    const error = await client.chat.completions.create({ model: 'm', messages }).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(APIError);
    expect((error as APIError).status).toBe(429);
    expect((error as APIError).headers?.get('retry-after')).toBe('7');
    await server.recover();
    const reply = await client.chat.completions.create({ model: 'm', messages });
    expect(reply.choices[0]?.message.content).toBe('fine');
  });

  it('serves at most `concurrency` requests at once and the rest first come, first served', async () => {
    // Each request holds its slot until the test opens its gate, so what is served when is the test's choice.
    const gates = new Map<number, () => void>();
    const { server, client } = await start({
      concurrency: 2,
      respond: (_request, index) =>
        new Promise<FakeReply>((resolve) => gates.set(index, () => resolve({ text: `reply ${index}` }))),
    });
    const open = (index: number) => {
      const gate = gates.get(index);
      if (gate === undefined) throw new Error(`request ${index} is not being served`);
      gate();
    };
    const replies: Promise<unknown>[] = [];
    for (let index = 0; index < 5; index++) {
      replies.push(client.chat.completions.create({ model: `m${index}`, messages }));
      // One at a time, so the order they arrive in is the order they were sent in.
      await vi.waitFor(() => expect(server.requests).toHaveLength(index + 1));
    }
    await vi.waitFor(() => expect(server.queued).toBe(3));
    expect(server.inFlight).toBe(2);
    expect(server.peakOpenRequests).toBe(5);
    expect(server.served.map((entry) => entry.index)).toEqual([0, 1]);

    open(1);
    await vi.waitFor(() => expect(server.served.map((entry) => entry.index)).toEqual([0, 1, 2]));
    expect(server.inFlight).toBe(2);
    open(0);
    await vi.waitFor(() => expect(server.served.map((entry) => entry.index)).toEqual([0, 1, 2, 3]));
    open(3);
    await vi.waitFor(() => expect(server.served.map((entry) => entry.index)).toEqual([0, 1, 2, 3, 4]));
    open(2);
    open(4);
    const completions = (await Promise.all(replies)) as OpenAI.Chat.Completions.ChatCompletion[];
    expect(completions.map((completion) => completion.model)).toEqual(['m0', 'm1', 'm2', 'm3', 'm4']);
    expect(server.peakInFlight).toBe(2);
    expect(server.inFlight).toBe(0);
    expect(server.queued).toBe(0);
    expect(server.served.every((entry) => entry.endedAt !== undefined)).toBe(true);
    expect(server.busyMs(3)).toBe(0);
    expect(server.busyMs(1)).toBeGreaterThanOrEqual(server.busyMs(2));
  });

  it('takes latencyMs plus the reply delay to serve a request, counted from when it is served', async () => {
    const { server, client } = await start({
      latencyMs: 40,
      concurrency: 1,
      respond: () => ({ text: 'slow', delayMs: 10 }),
    });
    const started = Date.now();
    const [first, second] = await Promise.all([
      client.chat.completions.create({ model: 'm', messages }).then(() => Date.now()),
      client.chat.completions.create({ model: 'm', messages }).then(() => Date.now()),
    ]);
    // Not before: one slot, so the second waited for the first's 50 ms and then took its own. A millisecond of
    // slack for timers and the clock rounding differently.
    expect(Math.min(first, second) - started).toBeGreaterThanOrEqual(49);
    expect(Math.max(first, second) - started).toBeGreaterThanOrEqual(99);
    for (const entry of server.served) {
      expect((entry.endedAt ?? 0) - entry.startedAt).toBeGreaterThanOrEqual(49);
    }
    expect(server.peakInFlight).toBe(1);
    expect(server.busyMs(1)).toBeGreaterThanOrEqual(98);
    expect(server.busyMs(2)).toBe(0);
  });

  it('drops a request from the queue when its client gives up waiting', async () => {
    let release: () => void = () => {};
    const { server, client } = await start({
      concurrency: 1,
      respond: (_request, index) =>
        index === 0
          ? new Promise<FakeReply>((resolve) => {
              release = () => resolve({ text: 'first' });
            })
          : { text: `reply ${index}` },
    });
    const first = client.chat.completions.create({ model: 'm', messages });
    await vi.waitFor(() => expect(server.inFlight).toBe(1));
    const controller = new AbortController();
    const abandoned = client.chat.completions.create({ model: 'm', messages }, { signal: controller.signal });
    await vi.waitFor(() => expect(server.queued).toBe(1));
    controller.abort();
    await expect(abandoned).rejects.toBeInstanceOf(APIUserAbortError);
    await vi.waitFor(() => expect(server.queued).toBe(0));
    const third = client.chat.completions.create({ model: 'm', messages });
    await vi.waitFor(() => expect(server.queued).toBe(1));
    release();
    expect((await first).choices[0]?.message.content).toBe('first');
    expect((await third).choices[0]?.message.content).toBe('reply 2');
    expect(server.served.map((entry) => entry.index)).toEqual([0, 2]);
  });

  it('refuses a concurrency below 1', async () => {
    await expect(FakeOpenAiServer.start({ concurrency: 0 })).rejects.toThrow(/concurrency to be 1 or more, got 0/);
  });

  it('closes idempotently and supports await using', async () => {
    const { server } = await start();
    await Promise.all([server.close(), server.close()]);
    await server.close();
    {
      await using disposable = await FakeOpenAiServer.start();
      expect(disposable.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/v1$/);
    }
  });
});
