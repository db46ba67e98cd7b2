import { createOpenAiChatModel } from '@assistant/llm';
import { FakeOpenAiServer } from '@assistant/llm/testing';
import { afterEach, describe, expect, it } from 'vitest';
import * as z from 'zod';
import type { AgentEvent } from '../loop/agent-event.ts';
import { createEventRecorder } from '../testing/event-recorder.ts';
import { createHeldReplies } from '../testing/held-replies.ts';
import { createScriptedModel } from '../testing/scripted-model.ts';
import { defineTool } from '../tools/define-tool.ts';
import { startAgent } from './start-agent.ts';

type TokenEvent = Extract<AgentEvent, { type: 'token' }>;
const tokens = (events: AgentEvent[]): TokenEvent[] =>
  events.filter((event): event is TokenEvent => event.type === 'token');
const textOf = (events: TokenEvent[]): string => events.map((event) => event.text).join('');

const lookup = defineTool({
  name: 'lookup',
  description: 'Looks a thing up.',
  input: z.object({ q: z.string() }),
  run: async ({ q }) => `found ${q}`,
  trusted: true,
});

let server: FakeOpenAiServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

describe('token events', () => {
  it("stream each step's reply text between its step-started and step-finished, joined equal to the reply", async () => {
    const model = createScriptedModel({
      replies: [
        { content: 'Let me look that up.', toolCalls: [{ name: 'lookup', arguments: { q: 'tides' } }] },
        'High tide is at six in the evening.',
      ],
    });
    const recorder = createEventRecorder();

    const result = await startAgent({
      model,
      system: 'You answer.',
      input: 'When is high tide?',
      tools: [lookup],
      onEvent: recorder.onEvent,
    }).result();

    expect(result).toMatchObject({ status: 'completed', answer: 'High tide is at six in the evening.' });
    const all = tokens(recorder.events);
    expect(all.length).toBeGreaterThan(4);
    expect(textOf(all.filter((event) => event.step === 1))).toBe('Let me look that up.');
    expect(textOf(all.filter((event) => event.step === 2))).toBe('High tide is at six in the evening.');
    // Every token lies between the step-started and the step-finished of its step.
    const position = (type: string, step: number) =>
      recorder.events.findIndex((event) => event.type === type && 'step' in event && event.step === step);
    for (const event of all) {
      const index = recorder.events.indexOf(event);
      expect(index).toBeGreaterThan(position('step-started', event.step));
      expect(index).toBeLessThan(position('step-finished', event.step));
    }
    expect(all.every((event) => event.restart === undefined && event.lineage.join(' › ') === 'agent')).toBe(true);
  });

  it('pass a restart on, and reach the parent loop with the lineage of the nested loop', async () => {
    const childModel = createScriptedModel({
      name: 'child',
      replies: [
        {
          content: 'Tides are known.',
          deltas: [{ text: 'Tides are' }, { text: '', restart: true }, { text: 'Tides are ' }, { text: 'known.' }],
        },
      ],
    });
    const research = defineTool({
      name: 'research',
      description: 'Researches with a sub-agent.',
      input: z.object({}),
      run: async (_input, context) =>
        (
          await context
            .startAgent({ model: childModel, label: 'research', system: 'You research.', input: 'Tides?' })
            .result()
        ).answer,
      trusted: true,
    });
    const model = createScriptedModel({ replies: [{ toolCalls: [{ name: 'research' }] }, 'Done.'] });
    const recorder = createEventRecorder();

    await startAgent({
      model,
      label: 'task',
      system: 'You run tasks.',
      input: 'Go.',
      tools: [research],
      onEvent: recorder.onEvent,
    }).result();

    const child = tokens(recorder.events).filter((event) => event.lineage.join(' › ') === 'task › research');
    expect(child.map(({ text, restart, step }) => ({ text, restart, step }))).toEqual([
      { text: 'Tides are', restart: undefined, step: 1 },
      { text: '', restart: true, step: 1 },
      { text: 'Tides are ', restart: undefined, step: 1 },
      { text: 'known.', restart: undefined, step: 1 },
    ]);
    expect(textOf(tokens(recorder.events).filter((event) => event.lineage.join(' › ') === 'task'))).toBe('Done.');
  });

  it('are not sent for compression summaries or ask answers', async () => {
    let loopCalls = 0;
    const held = createHeldReplies();
    const model = createScriptedModel({
      contextWindow: 100,
      replies: (request, call) => {
        const last = request.messages.at(-1)?.content ?? '';
        if (last.startsWith('Summarise the conversation so far')) return 'SUMMARY of the earlier turns.';
        if (request.tools === undefined && last.includes('Question:')) return 'ASKED and answered.';
        loopCalls += 1;
        if (loopCalls <= 2) return { toolCalls: [{ id: `call_${loopCalls}`, name: 'lookup', arguments: { q: 'x' } }] };
        return held.responder(request, call);
      },
    });
    const recorder = createEventRecorder();
    const handle = startAgent({
      model,
      system: 'You look up.',
      input: 'Look up twice.',
      tools: [lookup],
      onEvent: recorder.onEvent,
      compression: { thresholdRatio: 0.5, keepRecent: 1 },
      estimateTokens: (messages) => messages.length * 10,
    });
    await recorder.waitFor((event) => event.type === 'step-started' && event.step === 3);
    expect(await handle.ask('What now?')).toBe('ASKED and answered.');
    // The third loop call is the model's fourth request: after the summary.
    await held.inFlight(3);
    held.reply(3, 'All done.');

    await expect(handle.result()).resolves.toMatchObject({ status: 'completed', answer: 'All done.' });
    expect(recorder.events.some((event) => event.type === 'compression')).toBe(true);
    expect(textOf(tokens(recorder.events))).toBe('All done.');
  });

  it('stream a reply from the fake OpenAI server word by word, with a restart after a broken stream', async () => {
    const answer = 'The ferry leaves at nine from the north pier.';
    server = await FakeOpenAiServer.start({
      replies: [
        { toolCalls: [{ name: 'lookup', arguments: { q: 'ferry' } }], text: 'Checking.' },
        { text: answer, breakAfterChunks: 3 },
        { text: answer },
      ],
    });
    const model = createOpenAiChatModel({
      name: 'test',
      baseUrl: server.url,
      model: 'fake-model',
      sleep: async () => {},
    });
    const recorder = createEventRecorder();

    const result = await startAgent({
      model,
      system: 'You answer.',
      input: 'When does the ferry leave?',
      tools: [lookup],
      onEvent: recorder.onEvent,
    }).result();

    expect(result).toMatchObject({ status: 'completed', answer, steps: 2 });
    expect(textOf(tokens(recorder.events).filter((event) => event.step === 1))).toBe('Checking.');
    const second = tokens(recorder.events).filter((event) => event.step === 2);
    const restart = second.findIndex((event) => event.restart === true);
    expect(restart).toBeGreaterThan(0);
    expect(answer.startsWith(textOf(second.slice(0, restart)))).toBe(true);
    expect(second.slice(restart + 1).length).toBeGreaterThan(3);
    expect(textOf(second.slice(restart + 1))).toBe(answer);
  });
});
