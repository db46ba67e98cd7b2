import { describe, expect, it } from 'vitest';
import * as z from 'zod';
import { startAgent } from '../loop/start-agent.ts';
import { createHeldReplies } from '../testing/held-replies.ts';
import { createScriptedModel } from '../testing/scripted-model.ts';
import { defineTool } from '../tools/define-tool.ts';

describe('SteerableHandle.ask', () => {
  it('answers from a snapshot of the running transcripts, without changing them or holding up the loop', async () => {
    const childHeld = createHeldReplies();
    const childModel = createScriptedModel({ name: 'child', replies: childHeld.responder });
    const research = defineTool({
      name: 'research',
      description: 'Researches with a sub-agent.',
      input: z.object({ topic: z.string() }),
      run: async ({ topic }, context) =>
        (
          await context
            .startAgent({ model: childModel, label: 'research', system: 'You research.', input: `Research ${topic}.` })
            .result()
        ).answer,
    });
    let mainCalls = 0;
    const topModel = createScriptedModel({
      replies: (request) => {
        const last = request.messages.at(-1);
        if (request.tools === undefined && last?.content?.includes('Question:')) {
          return 'It is waiting for the research sub-agent.';
        }
        mainCalls += 1;
        return mainCalls === 1
          ? { toolCalls: [{ name: 'research', arguments: { topic: 'the Tower Bridge' } }] }
          : 'The bridge opened in 1894.';
      },
    });
    const top = startAgent({
      model: topModel,
      label: 'task',
      system: 'You run tasks.',
      input: 'When did the Tower Bridge open?',
      tools: [research],
    });
    await childHeld.inFlight(0);
    const transcriptBefore = top.transcript();

    const answer = await top.ask('What are you doing right now?');

    expect(answer).toBe('It is waiting for the research sub-agent.');
    const askRequest = topModel.requests.at(-1);
    expect(askRequest?.tools).toBeUndefined();
    const askText = askRequest?.messages.map((message) => message.content).join('\n') ?? '';
    expect(askText).toContain('## Transcript of task\n');
    expect(askText).toContain('When did the Tower Bridge open?');
    expect(askText).toContain('research({"topic":"the Tower Bridge"})');
    expect(askText).toContain('## Transcript of task › research\n');
    expect(askText).toContain('Research the Tower Bridge.');
    expect(askText).toContain('Question: What are you doing right now?');
    expect(top.transcript()).toEqual(transcriptBefore);
    expect(top.status()).toBe('running');

    childHeld.reply(0, 'It opened on 30 June 1894.');
    await expect(top.result()).resolves.toMatchObject({ status: 'completed', answer: 'The bridge opened in 1894.' });
    expect(top.transcript().filter((message) => message.content?.includes('Question:'))).toEqual([]);
  });
});
