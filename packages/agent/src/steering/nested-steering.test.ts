import type { ChatMessage } from '@assistant/llm';
import { describe, expect, it } from 'vitest';
import * as z from 'zod';
import type { AgentEvent } from '../loop/agent-event.ts';
import { startAgent } from '../loop/start-agent.ts';
import { createEventRecorder } from '../testing/event-recorder.ts';
import { createScriptedModel } from '../testing/scripted-model.ts';
import { settle } from '../testing/settle.ts';
import { defineTool } from '../tools/define-tool.ts';

const userMessages = (messages: ChatMessage[]) =>
  messages.filter((message) => message.role === 'user').map((message) => message.content);

const from =
  (lineage: string, type: AgentEvent['type']) =>
  (event: AgentEvent): boolean =>
    event.type === type && event.lineage.join(' › ') === lineage;

describe('steering nested loops', () => {
  it('pauses, resumes, interjects into and stops a three-level tree of loops from the top', async () => {
    // A step of work that takes a turn of the event loop (as real work does, so timers still fire when a broken
    // pause lets the loops spin) and honours pause between its own steps, as a long-running tool should.
    const work = defineTool({
      name: 'work',
      description: 'One step of work.',
      input: z.object({}),
      run: async (_input, context) => {
        await new Promise<void>((resolve) => setImmediate(resolve));
        await context.waitWhilePaused();
        return 'worked';
      },
    });
    // The grandchild works step after step until it is stopped.
    const grandchildModel = createScriptedModel({ replies: () => ({ toolCalls: [{ name: 'work' }] }) });
    // The child starts the grandchild in the background, then works step after step itself.
    const startFetch = defineTool({
      name: 'start_fetch',
      description: 'Starts fetching in the background.',
      input: z.object({}),
      run: async (_input, context) => {
        context.startAgent({
          model: grandchildModel,
          label: 'fetch',
          system: 'You fetch.',
          input: 'Fetch the sources.',
          tools: [work],
          maxSteps: 500,
        });
        return 'fetching';
      },
    });
    const childModel = createScriptedModel({
      replies: (_request, call) => ({ toolCalls: [{ name: call.index === 0 ? 'start_fetch' : 'work' }] }),
    });
    // The top hands the task to the child and waits for its result inside one tool call.
    const research = defineTool({
      name: 'research',
      description: 'Researches with a sub-agent.',
      input: z.object({}),
      run: async (_input, context) =>
        context
          .startAgent({
            model: childModel,
            label: 'research',
            system: 'You research.',
            input: 'Research the topic.',
            tools: [startFetch, work],
            maxSteps: 500,
          })
          .result(),
    });
    const topModel = createScriptedModel({ replies: [{ toolCalls: [{ name: 'research' }] }] });
    const recorder = createEventRecorder();
    const top = startAgent({
      model: topModel,
      label: 'task',
      system: 'You run tasks.',
      input: 'Write the report.',
      tools: [research],
      onEvent: recorder.onEvent,
    });

    // Every level is busy: the top inside its tool, the child and the grandchild making model calls.
    const stepOf = (event: AgentEvent, lineage: string) =>
      event.type === 'step-started' && event.lineage.join(' › ') === lineage ? event.step : 0;
    await recorder.waitFor((event) => stepOf(event, 'task › research › fetch') >= 2);
    await recorder.waitFor((event) => stepOf(event, 'task › research') >= 3);
    const child = top.children()[0];
    const grandchild = child?.children()[0];
    if (child === undefined || grandchild === undefined) throw new Error('expected a child and a grandchild');
    expect(grandchild.lineage).toEqual(['task', 'research', 'fetch']);
    const models = [topModel, childModel, grandchildModel];
    const modelCalls = () => models.map((model) => model.requests.length);

    // Pause at the top: each level may finish the model call in flight, then makes no more.
    const callsAtPause = modelCalls();
    const pauseMark = recorder.events.length;
    top.pause();
    expect([top.status(), child.status(), grandchild.status()]).toEqual(['paused', 'paused', 'paused']);
    await recorder.waitFor(from('task › research', 'waiting-while-paused'), { fromIndex: pauseMark });
    await recorder.waitFor(from('task › research › fetch', 'waiting-while-paused'), { fromIndex: pauseMark });
    const callsWhenParked = modelCalls();
    callsWhenParked.forEach((calls, level) => {
      expect(calls - (callsAtPause[level] ?? 0)).toBeLessThanOrEqual(1);
    });
    const parkedMark = recorder.events.length;
    await settle();
    expect(modelCalls()).toEqual(callsWhenParked);
    expect(recorder.events.slice(parkedMark).filter((event) => event.type === 'step-started')).toEqual([]);

    // An interjection at the top reaches the running child and grandchild; resume lets every level continue.
    top.interject('Check the second source too.');
    const resumeMark = recorder.events.length;
    top.resume();
    expect([top.status(), child.status(), grandchild.status()]).toEqual(['running', 'running', 'running']);
    await recorder.waitFor(from('task › research', 'step-started'), { fromIndex: resumeMark });
    await recorder.waitFor(from('task › research › fetch', 'step-started'), { fromIndex: resumeMark });
    const steeringSeen = [
      '[steering] paused by the owner',
      '[interjection] Check the second source too.',
      '[steering] resumed',
    ];
    expect(userMessages(child.transcript())).toEqual(['Research the topic.', ...steeringSeen]);
    expect(userMessages(grandchild.transcript())).toEqual(['Fetch the sources.', ...steeringSeen]);
    const firstChildCallAfterResume = childModel.requests[callsWhenParked[1] ?? 0];
    expect(userMessages(firstChildCallAfterResume?.messages ?? [])).toEqual(['Research the topic.', ...steeringSeen]);

    // Stop at the top cancels every level; every result says stopped, with the reason.
    top.stop('The owner cancelled the report.');
    const results = await Promise.all([top.result(), child.result(), grandchild.result()]);
    expect(results.map((result) => [result.status, result.reason])).toEqual([
      ['stopped', 'The owner cancelled the report.'],
      ['stopped', 'The owner cancelled the report.'],
      ['stopped', 'The owner cancelled the report.'],
    ]);
    const callsAtStop = modelCalls();
    await settle();
    expect(modelCalls()).toEqual(callsAtStop);
    expect(topModel.requests).toHaveLength(1);
    // The top was inside its tool the whole time: the interjection waited for it and is in its transcript.
    expect(userMessages(top.transcript())).toEqual([
      'Write the report.',
      ...steeringSeen,
      '[steering] stop requested: The owner cancelled the report.',
    ]);
  });
});
