import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import * as z from 'zod';
import { Conversation } from './conversation.ts';
import { LlmAbortedError, LlmOutputError, LlmRequestError } from './llm-errors.ts';
import { createOpenAiChatModel } from './openai-chat-model.ts';
import { createRecordReplayFetch, ReplayMissError } from './record-replay/record-replay-fetch.ts';
import { FakeOpenAiServer, type FakeReply } from './testing/fake-openai-server.ts';

let server: FakeOpenAiServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const waits: number[] = [];
/** Records the backoff instead of waiting it: the tests check the schedule, not the clock. */
const noWait = async (ms: number) => {
  waits.push(ms);
};

async function modelWith(replies: FakeReply[], options: Record<string, unknown> = {}) {
  server = await FakeOpenAiServer.start({ replies });
  waits.length = 0;
  return createOpenAiChatModel({ name: 'test', baseUrl: server.url, model: 'fake-model', sleep: noWait, ...options });
}

describe('createOpenAiChatModel', () => {
  it('returns text and tool calls and records the server-reported usage', async () => {
    const usages: number[] = [];
    const model = await modelWith(
      [
        { text: 'hello', usage: { prompt: 7, completion: 3 } },
        { toolCalls: [{ name: 'lookup', arguments: { q: 'x' } }] },
      ],
      { onUsage: (usage: { totalTokens: number }) => usages.push(usage.totalTokens) },
    );
    const text = await model.chat({ messages: [{ role: 'user', content: 'hi' }] });
    expect(text.message).toEqual({ role: 'assistant', content: 'hello', toolCalls: [] });
    expect(text.usage).toEqual({ promptTokens: 7, completionTokens: 3, totalTokens: 10 });
    const tools = await model.chat({
      messages: [{ role: 'user', content: 'find x' }],
      tools: [{ name: 'lookup', description: 'looks things up', parameters: { type: 'object' } }],
    });
    expect(tools.message.toolCalls).toEqual([{ id: expect.any(String), name: 'lookup', arguments: '{"q":"x"}' }]);
    expect(server?.requests[1]?.body.tools).toEqual([
      {
        type: 'function',
        function: { name: 'lookup', description: 'looks things up', parameters: { type: 'object' } },
      },
    ]);
    expect(usages[0]).toBe(10);
  });

  it('retries 429 honouring retry-after and 500 with backoff, then succeeds', async () => {
    const model = await modelWith([
      { error: { status: 429, retryAfterSeconds: 7 } },
      { error: { status: 500 } },
      { malformed: true },
      { text: 'finally' },
    ]);
    const response = await model.chat({ messages: [{ role: 'user', content: 'hi' }] });
    expect(response.message.content).toBe('finally');
    expect(waits).toEqual([7_000, 2_000, 4_000]);
    expect(server?.requests).toHaveLength(4);
  });

  it('gives up after max_retries with the profile, endpoint and status, and never retries a 401', async () => {
    const model = await modelWith(
      [{ error: { status: 503 } }, { error: { status: 503 } }, { error: { status: 503 } }],
      { maxRetries: 2 },
    );
    const error = await model.chat({ messages: [{ role: 'user', content: 'hi' }] }).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(LlmRequestError);
    expect((error as LlmRequestError).message).toMatch(
      /^LLM profile test \(fake-model at http:\/\/127\.0\.0\.1:\d+\/v1\) failed after 3 attempts: 503/,
    );
    await server?.close();
    const unauthorised = await modelWith([{ error: { status: 401, message: 'bad key' } }]);
    const refused = await unauthorised
      .chat({ messages: [{ role: 'user', content: 'hi' }] })
      .catch((caught: unknown) => caught);
    expect((refused as LlmRequestError).status).toBe(401);
    expect((refused as LlmRequestError).hint).toMatch(/token/);
    expect(server?.requests).toHaveLength(1);
  });

  it('turns an abort into a cancellation, not a failure, and does not retry it', async () => {
    const model = await modelWith([{ text: 'slow', delayMs: 30_000 }]);
    const controller = new AbortController();
    const pending = model.chat({ messages: [{ role: 'user', content: 'hi' }] }, { signal: controller.signal });
    await waitFor(() => (server?.requests.length ?? 0) === 1, 'the request to reach the fake server');
    controller.abort(new Error('the owner stopped it'));
    await expect(pending).rejects.toBeInstanceOf(LlmAbortedError);
    expect(server?.requests).toHaveLength(1);
  });

  it('polyfills tool calls with a ReAct prompt for models without native tools', async () => {
    const model = await modelWith(
      [
        { text: 'Thought: I should look it up.\nAction: lookup\nAction Input: {"q": "weather"}' },
        { text: 'Thought: I know now.\nFinal Answer: sunny' },
      ],
      { model: 'llama3:8b' },
    );
    const tools = [{ name: 'lookup', description: 'looks things up', parameters: { type: 'object' } }];
    const first = await model.chat({
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'weather?' },
      ],
      tools,
    });
    expect(first.message.toolCalls).toEqual([
      { id: expect.any(String), name: 'lookup', arguments: '{"q": "weather"}' },
    ]);
    expect(server?.requests[0]?.body.tools).toBeUndefined();
    expect(String(((server?.requests[0]?.body.messages ?? []) as { content: string }[])[0]?.content)).toContain(
      'Action Input:',
    );
    const second = await model.chat({
      messages: [
        { role: 'user', content: 'weather?' },
        { role: 'assistant', content: 'I should look it up.', toolCalls: first.message.toolCalls },
        { role: 'tool', toolCallId: first.message.toolCalls[0]?.id ?? '', content: '"sunny"' },
      ],
      tools,
    });
    expect(second.message).toEqual({ role: 'assistant', content: 'sunny', toolCalls: [] });
    const sent = server?.requests[1]?.body.messages as { role: string; content: string }[];
    expect(sent.at(-1)).toEqual({ role: 'user', content: 'Observation: "sunny"' });
  });
});

describe('the record/replay cache under a model', () => {
  it('fails a replay miss at once with the key, without retrying', async () => {
    const directory = await mkdtemp(path.join(os.tmpdir(), 'assistant-replay-'));
    try {
      waits.length = 0;
      const model = createOpenAiChatModel({
        name: 'test',
        baseUrl: 'http://127.0.0.1:9/v1',
        model: 'fake-model',
        sleep: noWait,
        fetch: createRecordReplayFetch({ mode: 'replay', directory }),
      });
      const error = await model
        .chat({ messages: [{ role: 'user', content: 'hi' }] })
        .catch((caught: unknown) => caught);
      expect(error).toBeInstanceOf(ReplayMissError);
      expect((error as ReplayMissError).code).toBe('LLM_REPLAY_MISS');
      expect(waits).toEqual([]);
    } finally {
      await rm(directory, { recursive: true, force: true });
    }
  });
});

describe('Conversation.structured', () => {
  const schema = z.object({ human: z.number().min(0).max(1), topic: z.enum(['work', 'bills']) });

  it('feeds each validation error back and succeeds on the third call', async () => {
    const model = await modelWith([
      { text: 'Sure! Here it is.' },
      { json: { human: 2, topic: 'work' } },
      { json: { human: 0.9, topic: 'work' } },
    ]);
    const conversation = new Conversation(model, { system: 'You classify mail.' });
    await expect(conversation.structured(schema, 'Classify this mail.')).resolves.toEqual({
      human: 0.9,
      topic: 'work',
    });
    expect(server?.requests).toHaveLength(3);
    const second = server?.requests[1]?.body.messages as { role: string; content: string }[];
    expect(second.at(-1)?.content).toMatch(/^That answer is not valid: it is not JSON/);
    const third = server?.requests[2]?.body.messages as { role: string; content: string }[];
    expect(third.at(-1)?.content).toMatch(/^That answer is not valid: human: Too big/);
    expect(server?.requests[0]?.body.response_format).toMatchObject({
      type: 'json_schema',
      json_schema: { name: 'answer' },
    });
  });

  it('throws LlmOutputError with every attempt after the retries', async () => {
    const model = await modelWith([{ text: 'no' }, { text: 'no' }, { text: 'no' }, { text: 'no' }]);
    const error = await new Conversation(model).structured(schema, 'Classify.').catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(LlmOutputError);
    expect((error as LlmOutputError).attempts).toHaveLength(4);
  });
});

/** Polls `condition` every 5 ms; fails naming `what` after 10 s rather than hanging until the test times out. */
async function waitFor(condition: () => boolean, what: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`waited ${timeoutMs} ms for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}
