import type { ChatMessage } from '@assistant/llm';
import { describe, expect, it } from 'vitest';
import * as z from 'zod';
import { startAgent } from '../loop/start-agent.ts';
import { createEventRecorder } from '../testing/event-recorder.ts';
import { createHeldReplies } from '../testing/held-replies.ts';
import { createMemoryTranscriptStore } from '../testing/memory-transcript-store.ts';
import { createScriptedModel } from '../testing/scripted-model.ts';
import { settle } from '../testing/settle.ts';
import { defineTool } from '../tools/define-tool.ts';

const userMessages = (messages: ChatMessage[] | undefined) =>
  (messages ?? []).filter((message) => message.role === 'user').map((message) => message.content);

const noop = defineTool({ name: 'noop', description: 'Does nothing.', input: z.object({}), run: async () => 'ok' });

describe('SteerableHandle steering', () => {
  it('delivers interjections in the order given, including those sent while a model call or tool is running', async () => {
    const held = createHeldReplies();
    const toolRunning = Promise.withResolvers<void>();
    const toolRelease = Promise.withResolvers<void>();
    const waiting = defineTool({
      name: 'waiting',
      description: 'Waits for the test.',
      input: z.object({}),
      run: async () => {
        toolRunning.resolve();
        await toolRelease.promise;
        return 'waited';
      },
    });
    const model = createScriptedModel({ replies: held.responder });
    const handle = startAgent({ model, system: 's', input: 'task', tools: [waiting] });

    await held.inFlight(0);
    handle.interject('first');
    handle.interject('second');
    held.reply(0, { toolCalls: [{ name: 'waiting' }] });
    await toolRunning.promise;
    handle.interject('third');
    toolRelease.resolve();

    await held.inFlight(1);
    expect(userMessages(model.requests[1]?.messages)).toEqual([
      'task',
      '[interjection] first',
      '[interjection] second',
      '[interjection] third',
    ]);
    // An interjection that arrives during what would be the final call keeps the loop going, so it is not lost.
    handle.interject('fourth');
    held.reply(1, 'final answer, written before the fourth interjection');
    await held.inFlight(2);
    expect(model.requests[2]?.messages.slice(-2)).toEqual([
      { role: 'assistant', content: 'final answer, written before the fourth interjection' },
      { role: 'user', content: '[interjection] fourth' },
    ]);
    held.reply(2, 'final answer');

    await expect(handle.result()).resolves.toMatchObject({ status: 'completed', answer: 'final answer', steps: 3 });
  });

  it('pauses before the next model call, writes pause and resume into the transcript, and continues on resume', async () => {
    const held = createHeldReplies();
    const recorder = createEventRecorder();
    const model = createScriptedModel({ replies: held.responder });
    const handle = startAgent({ model, system: 's', input: 'task', tools: [noop], onEvent: recorder.onEvent });

    await held.inFlight(0);
    handle.pause();
    expect(handle.status()).toBe('paused');
    // The call in flight may finish; its tool call then waits for resume.
    held.reply(0, { toolCalls: [{ name: 'noop' }] });
    await recorder.waitFor((event) => event.type === 'waiting-while-paused' && event.before === 'tool-call');
    expect(model.requests).toHaveLength(1);
    expect(recorder.events.some((event) => event.type === 'tool-started')).toBe(false);

    handle.resume();
    await held.inFlight(1);
    expect(userMessages(model.requests[1]?.messages)).toEqual([
      'task',
      '[steering] paused by the owner',
      '[steering] resumed',
    ]);
    held.reply(1, 'done');
    await expect(handle.result()).resolves.toMatchObject({ status: 'completed', answer: 'done' });
  });

  it('makes no model call while paused, even when the pause came while a tool was running', async () => {
    const recorder = createEventRecorder();
    const toolRunning = Promise.withResolvers<void>();
    const toolRelease = Promise.withResolvers<void>();
    const waiting = defineTool({
      name: 'waiting',
      description: 'Waits for the test.',
      input: z.object({}),
      run: async () => {
        toolRunning.resolve();
        await toolRelease.promise;
        return 'waited';
      },
    });
    const model = createScriptedModel({ replies: [{ toolCalls: [{ name: 'waiting' }] }, 'done'] });
    const handle = startAgent({ model, system: 's', input: 'task', tools: [waiting], onEvent: recorder.onEvent });
    await toolRunning.promise;

    handle.pause();
    toolRelease.resolve();
    await recorder.waitFor((event) => event.type === 'waiting-while-paused' && event.before === 'model-call');
    await settle();
    expect(model.requests).toHaveLength(1);

    handle.resume();
    await expect(handle.result()).resolves.toMatchObject({ status: 'completed', answer: 'done', steps: 2 });
    expect(userMessages(model.requests[1]?.messages)).toEqual([
      'task',
      '[steering] paused by the owner',
      '[steering] resumed',
    ]);
  });

  it('stops a running tool through its signal and resolves with stopped and the reason', async () => {
    const store = createMemoryTranscriptStore();
    const recorder = createEventRecorder();
    let toolSignal: AbortSignal | undefined;
    const forever = defineTool({
      name: 'forever',
      description: 'Runs until stopped.',
      input: z.object({}),
      run: async (_input, context) => {
        toolSignal = context.signal;
        await new Promise<never>(() => {});
      },
    });
    const model = createScriptedModel({ replies: [{ toolCalls: [{ name: 'forever' }] }] });
    const handle = startAgent({
      model,
      system: 's',
      input: 'task',
      tools: [forever],
      transcript: store,
      onEvent: recorder.onEvent,
    });
    await recorder.waitFor((event) => event.type === 'tool-started');

    handle.stop('the owner changed their mind');
    expect(handle.status()).toBe('stopping');

    await expect(handle.result()).resolves.toMatchObject({
      status: 'stopped',
      reason: 'the owner changed their mind',
      steps: 1,
    });
    expect(toolSignal?.aborted).toBe(true);
    expect(store.messages?.slice(-2)).toEqual([
      { role: 'tool', toolCallId: 'call_1_0', content: expect.stringMatching(/^error: the loop was stopped/) },
      { role: 'user', content: '[steering] stop requested: the owner changed their mind' },
    ]);
    expect(store.saves.at(-1)?.meta.status).toBe('stopped');
  });
});
