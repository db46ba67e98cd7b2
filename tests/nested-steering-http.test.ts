// The nested-steering proof over real HTTP: three levels of loops, each a real LLM client talking to the fake
// OpenAI-compatible server, steered from the top.
import { setTimeout as delay } from 'node:timers/promises';
import { type AgentEvent, defineTool, startAgent } from '@assistant/agent';
import { type ChatMessage, createOpenAiChatModel } from '@assistant/llm';
import { type FakeChatRequest, FakeOpenAiServer } from '@assistant/llm/testing';
import { describe, expect, it } from 'vitest';
import * as z from 'zod';
import { waitUntil } from './helpers/wait-until.ts';

const level = (request: FakeChatRequest) => {
  const system = (request.body.messages as { role: string; content: string }[])[0]?.content ?? '';
  return system.startsWith('You fetch') ? 'fetch' : system.startsWith('You research') ? 'research' : 'task';
};
const userMessages = (messages: ChatMessage[]) =>
  messages.filter((message) => message.role === 'user').map((message) => message.content);

describe('steering a three-level tree of loops over HTTP', () => {
  it('pauses every level within a step, takes an interjection in the child, resumes and stops them all', async () => {
    await using server = await FakeOpenAiServer.start({
      respond: (request) => {
        const name = level(request);
        const calls = server.requests.filter((candidate) => level(candidate) === name).length;
        if (name === 'task') return { toolCalls: [{ name: 'research', arguments: {} }] };
        if (name === 'research')
          return { toolCalls: [{ name: calls === 1 ? 'start_fetch' : 'work', arguments: {} }], delayMs: 5 };
        return { toolCalls: [{ name: 'work', arguments: {} }], delayMs: 5 };
      },
    });
    const model = createOpenAiChatModel({ name: 'fake', baseUrl: server.url, model: 'fake-model' });
    const work = defineTool({
      name: 'work',
      description: 'One step of work.',
      input: z.object({}),
      run: async (_input, context) => {
        await context.waitWhilePaused();
        return 'worked';
      },
    });
    const startFetch = defineTool({
      name: 'start_fetch',
      description: 'Starts fetching in the background.',
      input: z.object({}),
      run: async (_input, context) => {
        context.startAgent({
          model,
          label: 'fetch',
          system: 'You fetch.',
          input: 'Fetch the sources.',
          tools: [work],
          maxSteps: 500,
        });
        return 'fetching';
      },
    });
    const research = defineTool({
      name: 'research',
      description: 'Researches with a sub-agent.',
      input: z.object({}),
      run: async (_input, context) =>
        context
          .startAgent({
            model,
            label: 'research',
            system: 'You research.',
            input: 'Research the topic.',
            tools: [startFetch, work],
            maxSteps: 500,
          })
          .result(),
    });
    const events: AgentEvent[] = [];
    const top = startAgent({
      model,
      label: 'task',
      system: 'You run tasks.',
      input: 'Write the report.',
      tools: [research],
      onEvent: (event) => events.push(event),
    });
    const calls = (name: string) => server.requests.filter((request) => level(request) === name).length;
    const until = (what: string, condition: () => boolean) => waitUntil(condition, { what });
    await until('2 fetch and 3 research calls', () => calls('fetch') >= 2 && calls('research') >= 3);
    const child = top.children()[0];
    const grandchild = child?.children()[0];
    if (!child || !grandchild) throw new Error('expected a child and a grandchild');

    const before = { research: calls('research'), fetch: calls('fetch') };
    const mark = events.length;
    top.pause();
    const parked = (lineage: string) => () =>
      events
        .slice(mark)
        .some((event) => event.type === 'waiting-while-paused' && event.lineage.join(' › ') === lineage);
    await until('research to park while paused', parked('task › research'));
    await until('fetch to park while paused', parked('task › research › fetch'));
    // Within one step: each level finishes at most the call it had in flight, and then makes no more. Nothing signals
    // a call that does not start, so these waits give one that should not come time to show up.
    await delay(200);
    expect(calls('research') - before.research).toBeLessThanOrEqual(1);
    expect(calls('fetch') - before.fetch).toBeLessThanOrEqual(1);
    expect(calls('task')).toBe(1);
    const whileParked = server.requests.length;
    await delay(200);
    expect(server.requests.length).toBe(whileParked);

    top.interject('Check the second source too.');
    top.resume();
    await until(
      'research and fetch calls after resume',
      () => calls('research') > before.research + 1 && calls('fetch') > before.fetch + 1,
    );
    const lastResearch = server.requests.filter((request) => level(request) === 'research').at(-1);
    expect(
      ((lastResearch?.body.messages ?? []) as { role: string; content: string }[]).map((message) => message.content),
    ).toContain('[interjection] Check the second source too.');
    expect(userMessages(grandchild.transcript())).toContain('[interjection] Check the second source too.');

    top.stop('The owner cancelled the report.');
    const results = await Promise.all([top.result(), child.result(), grandchild.result()]);
    expect(results.map((result) => [result.status, result.reason])).toEqual([
      ['stopped', 'The owner cancelled the report.'],
      ['stopped', 'The owner cancelled the report.'],
      ['stopped', 'The owner cancelled the report.'],
    ]);
    // A request the client had already sent when it was aborted may still reach the server; nothing follows it. The
    // first wait lets such a request land, the second gives a request that must not come time to show up.
    await delay(100);
    const atStop = server.requests.length;
    await delay(200);
    expect(server.requests.length).toBe(atStop);
  });
});
