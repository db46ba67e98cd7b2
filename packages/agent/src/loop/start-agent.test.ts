import { describe, expect, it } from 'vitest';
import * as z from 'zod';
import { createEventRecorder } from '../testing/event-recorder.ts';
import { createMemoryTranscriptStore } from '../testing/memory-transcript-store.ts';
import { createScriptedModel } from '../testing/scripted-model.ts';
import { settle } from '../testing/settle.ts';
import { defineTool } from '../tools/define-tool.ts';
import { startAgent } from './start-agent.ts';

const addTool = defineTool({
  name: 'add',
  description: 'Adds two numbers.',
  input: z.object({ a: z.number(), b: z.number() }),
  run: async ({ a, b }) => ({ sum: a + b }),
  // Arithmetic carries no text from outside: its results need no fence.
  trusted: true,
});

describe('startAgent', () => {
  it('sends the transcript and tool specs, runs the tool calls, and completes with the final answer', async () => {
    const model = createScriptedModel({
      replies: [{ toolCalls: [{ name: 'add', arguments: { a: 2, b: 3 } }] }, 'The sum is 5.'],
    });
    const handle = startAgent({ model, system: 'You add.', input: 'What is 2 + 3?', tools: [addTool] });

    const result = await handle.result();

    expect(result).toMatchObject({ status: 'completed', answer: 'The sum is 5.', steps: 2 });
    expect(model.requests[0]?.messages).toEqual([
      { role: 'system', content: 'You add.' },
      { role: 'user', content: 'What is 2 + 3?' },
    ]);
    expect(model.requests[0]?.tools).toEqual([
      {
        name: 'add',
        description: 'Adds two numbers.',
        parameters: expect.objectContaining({ type: 'object', required: ['a', 'b'] }),
      },
    ]);
    expect(model.requests[1]?.messages.at(-1)).toEqual({
      role: 'tool',
      toolCallId: 'call_1_0',
      content: '{"sum":5}',
    });
    expect(handle.done()).toBe(true);
    expect(handle.status()).toBe('finished');
  });

  it('feeds invalid arguments, broken JSON, unknown tools and thrown errors back to the model', async () => {
    let runs = 0;
    const failing = defineTool({
      name: 'explode',
      description: 'Always fails.',
      input: z.object({}),
      run: async () => {
        runs += 1;
        throw new Error('the fuse was lit');
      },
    });
    const model = createScriptedModel({
      replies: [
        {
          toolCalls: [
            { name: 'add', arguments: { a: 'two', b: 3 } },
            { name: 'add', arguments: '{"a": 1,' },
            { name: 'multiply', arguments: { a: 1, b: 2 } },
            { name: 'explode' },
          ],
        },
        { toolCalls: [{ name: 'add', arguments: { a: 2, b: 3 } }] },
        '5',
      ],
    });
    const handle = startAgent({ model, system: 'You add.', input: '2 + 3?', tools: [addTool, failing] });

    const result = await handle.result();

    expect(result).toMatchObject({ status: 'completed', answer: '5', steps: 3 });
    const toolMessages = model.requests[1]?.messages.filter((message) => message.role === 'tool') ?? [];
    expect(toolMessages.map((message) => message.content)).toEqual([
      expect.stringMatching(/^error: invalid arguments for add: a: .*number/),
      expect.stringMatching(/^error: the arguments of add are not valid JSON/),
      'error: unknown tool "multiply"; available tools: add, explode',
      // A tool's own error may carry text from outside (a server's answer): fenced like its results.
      expect.stringMatching(
        /^<<<UNTRUSTED-[0-9a-f]{16} explode>>>\nerror: the fuse was lit\n<<<END UNTRUSTED-[0-9a-f]{16} explode>>>$/,
      ),
    ]);
    expect(runs).toBe(1);
  });

  it('runs the tool calls of one step in parallel, never more than toolConcurrency at once', async () => {
    let active = 0;
    let mostActive = 0;
    const twoRunning = Promise.withResolvers<void>();
    const release = Promise.withResolvers<void>();
    const slow = defineTool({
      name: 'slow',
      description: 'Waits for the test.',
      input: z.object({ id: z.number() }),
      run: async ({ id }) => {
        active += 1;
        mostActive = Math.max(mostActive, active);
        if (active === 2) twoRunning.resolve();
        await release.promise;
        active -= 1;
        return id;
      },
      trusted: true,
    });
    const model = createScriptedModel({
      replies: [{ toolCalls: [1, 2, 3, 4, 5].map((id) => ({ name: 'slow', arguments: { id } })) }, 'done'],
    });
    const handle = startAgent({ model, system: 's', input: 'go', tools: [slow], toolConcurrency: 2 });

    await twoRunning.promise;
    // Give a third call every chance to start if the limit did not hold.
    await settle();
    expect(active).toBe(2);
    release.resolve();
    const result = await handle.result();

    expect(result.status).toBe('completed');
    expect(mostActive).toBe(2);
    const toolMessages = model.requests[1]?.messages.filter((message) => message.role === 'tool') ?? [];
    expect(toolMessages.map((message) => message.content)).toEqual(['1', '2', '3', '4', '5']);
  });

  it('stops with max_steps after maxSteps model calls, with every tool call answered', async () => {
    const model = createScriptedModel({ replies: () => ({ toolCalls: [{ name: 'add', arguments: { a: 1, b: 1 } }] }) });
    const store = createMemoryTranscriptStore();
    const handle = startAgent({ model, system: 's', input: 'loop', tools: [addTool], maxSteps: 3, transcript: store });

    const result = await handle.result();

    expect(result).toMatchObject({ status: 'max_steps', steps: 3 });
    expect(model.requests).toHaveLength(3);
    expect(store.messages?.at(-1)).toMatchObject({ role: 'tool', content: '{"sum":2}' });
  });

  it('stops with timeout when timeoutMs passes, aborting the model call in flight', async () => {
    const model = createScriptedModel({ replies: () => new Promise<never>(() => {}) });
    const handle = startAgent({ model, system: 's', input: 'wait', timeoutMs: 5 });

    const result = await handle.result();

    expect(result).toMatchObject({ status: 'timeout', reason: 'timed out after 5 ms', steps: 1 });
  });

  it('stops with budget once the reported usage reaches the token budget', async () => {
    const model = createScriptedModel({
      replies: () => ({ toolCalls: [{ name: 'add', arguments: { a: 1, b: 1 } }] }),
      usage: { promptTokens: 50, completionTokens: 10, totalTokens: 60 },
    });
    const handle = startAgent({ model, system: 's', input: 'spend', tools: [addTool], budget: { tokens: 100 } });

    const result = await handle.result();

    expect(result).toMatchObject({
      status: 'budget',
      steps: 2,
      usage: { promptTokens: 100, completionTokens: 20, totalTokens: 120 },
    });
  });

  it('resolves with failed and the reason when the model fails, without rejecting', async () => {
    const model = createScriptedModel({ replies: [{ error: new Error('502 from the model server') }] });
    const handle = startAgent({ model, system: 's', input: 'hi' });

    await expect(handle.result()).resolves.toMatchObject({ status: 'failed', reason: '502 from the model server' });
  });

  it('treats an aborted signal as a stop, not a failure', async () => {
    const controller = new AbortController();
    const recorder = createEventRecorder();
    const model = createScriptedModel({ replies: () => new Promise<never>(() => {}) });
    const handle = startAgent({
      model,
      system: 's',
      input: 'hi',
      signal: controller.signal,
      onEvent: recorder.onEvent,
    });
    await recorder.waitFor((event) => event.type === 'step-started');

    controller.abort(new Error('worker shutting down'));

    await expect(handle.result()).resolves.toMatchObject({
      status: 'stopped',
      reason: 'aborted: worker shutting down',
    });
  });

  it('saves after every step and resumes from a saved transcript without adding the system message or input again', async () => {
    const store = createMemoryTranscriptStore();
    const crashing = createScriptedModel({
      replies: [{ toolCalls: [{ name: 'add', arguments: { a: 2, b: 2 } }] }, { error: new Error('worker crashed') }],
    });
    const first = await startAgent({
      model: crashing,
      system: 'You add.',
      input: '2 + 2?',
      tools: [addTool],
      transcript: store,
    }).result();
    expect(first.status).toBe('failed');
    // Once with the model's calls before they run, once with their results.
    expect(store.saves.map((save) => save.meta)).toEqual([
      { steps: 1, status: 'running' },
      { steps: 1, status: 'running' },
      { steps: 2, status: 'failed' },
    ]);
    expect(store.saves[0]?.messages.at(-1)).toMatchObject({ role: 'assistant', toolCalls: [{ id: 'call_1_0' }] });

    const model = createScriptedModel({ replies: ['4'] });
    const second = await startAgent({
      model,
      system: 'You add.',
      input: '2 + 2?',
      tools: [addTool],
      transcript: store,
    }).result();

    expect(second).toMatchObject({ status: 'completed', answer: '4', steps: 1 });
    expect(model.requests[0]?.messages).toEqual([
      { role: 'system', content: 'You add.' },
      { role: 'user', content: '2 + 2?' },
      {
        role: 'assistant',
        content: null,
        toolCalls: [{ id: 'call_1_0', name: 'add', arguments: '{"a":2,"b":2}' }],
      },
      { role: 'tool', toolCallId: 'call_1_0', content: '{"sum":4}' },
    ]);
    expect(store.saves.at(-1)?.meta).toEqual({ steps: 1, status: 'completed' });
  });

  it('runs the calls a saved transcript left without results (a worker died while they ran) before asking the model again, with their ids', async () => {
    const store = createMemoryTranscriptStore();
    const ran: string[] = [];
    const recording = defineTool({
      name: 'record',
      description: 'Records',
      tier: 'read_only',
      input: z.object({ what: z.string() }),
      run: async ({ what }, context) => {
        ran.push(`${what}@${context.toolCallId}`);
        return { recorded: what };
      },
    });
    await store.save(
      [
        { role: 'system', content: 'You record.' },
        { role: 'user', content: 'record a and b' },
        {
          role: 'assistant',
          content: null,
          toolCalls: [
            { id: 'c-a', name: 'record', arguments: '{"what":"a"}' },
            { id: 'c-b', name: 'record', arguments: '{"what":"b"}' },
          ],
        },
        { role: 'tool', toolCallId: 'c-a', content: '{"recorded":"a"}' },
      ],
      { steps: 1, status: 'running' },
    );
    const model = createScriptedModel({ replies: ['done'] });
    const result = await startAgent({
      model,
      system: 'You record.',
      input: 'record a and b',
      tools: [recording],
      transcript: store,
    }).result();

    expect(result).toMatchObject({ status: 'completed', answer: 'done' });
    // Only the call without a result ran again, under its own id; the model then saw both results.
    expect(ran).toEqual(['b@c-b']);
    expect(model.requests[0]?.messages.slice(3)).toEqual([
      { role: 'tool', toolCallId: 'c-a', content: '{"recorded":"a"}' },
      { role: 'tool', toolCallId: 'c-b', content: expect.stringMatching(/recorded.{1,6}b/) },
    ]);
  });

  it('gives calls without an id, or with the id of an earlier call, ids of their own', async () => {
    const store = createMemoryTranscriptStore();
    const model = createScriptedModel({
      replies: [
        { toolCalls: [{ id: 'call_0', name: 'add', arguments: { a: 1, b: 1 } }] },
        {
          toolCalls: [
            { id: 'call_0', name: 'add', arguments: { a: 2, b: 2 } },
            { id: '', name: 'add', arguments: { a: 3, b: 3 } },
          ],
        },
        'done',
      ],
    });
    await startAgent({ model, system: 's', input: 'add', tools: [addTool], transcript: store }).result();
    const ids = (store.saves.at(-1)?.messages ?? []).flatMap((message) =>
      message.role === 'assistant' ? (message.toolCalls ?? []).map((call) => call.id) : [],
    );
    expect(ids).toHaveLength(3);
    expect(ids[0]).toBe('call_0');
    expect(new Set(ids).size).toBe(3);
    expect(ids.every((id) => id !== '')).toBe(true);
  });

  it('rejects invalid options at once, naming the option and the value', () => {
    const model = createScriptedModel({ replies: [] });
    expect(() => startAgent({ model, system: 's', input: 'x', maxSteps: 0 })).toThrow(/`maxSteps`.*got 0 \(number\)/);
    expect(() => startAgent({ model, system: 's', input: 'x', tools: [addTool, addTool] })).toThrow(
      /two tools are named "add"/,
    );
  });
});
