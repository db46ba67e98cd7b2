import { describe, expect, it } from 'vitest';
import * as z from 'zod';
import { startAgent } from '../loop/start-agent.ts';
import { createScriptedModel } from '../testing/scripted-model.ts';
import { defineTool, type Tool } from '../tools/define-tool.ts';

/** A model that calls `toolName` once, then answers with a prefix and the tool's result. */
function delegatingModel(toolName: string, prefix: string) {
  return createScriptedModel({
    replies: (request, call) => {
      if (call.index === 0) return { toolCalls: [{ name: toolName }] };
      return `${prefix}${request.messages.at(-1)?.content ?? ''}`;
    },
  });
}

/** A tool that runs a nested loop to its answer. */
function delegateTool(label: string, model: ReturnType<typeof delegatingModel>, tools: Tool[]) {
  return defineTool({
    name: `delegate_${label}`,
    description: `Hands the work to ${label}.`,
    input: z.object({}),
    run: async (_input, context) =>
      (await context.startAgent({ model, label, system: `You are ${label}.`, input: 'Do it.', tools }).result()).answer,
  });
}

describe('clarifications and notifications', () => {
  it('surfaces a question and a notification from depth 2 at the top, and routes the answer back to the tool', async () => {
    const login = defineTool({
      name: 'login',
      description: 'Logs in to the mailbox.',
      input: z.object({}),
      run: async (_input, context) => {
        context.notify('Opening the mailbox.');
        const account = await context.askCaller('Which account should I use?');
        return { account };
      },
    });
    const fetchModel = delegatingModel('login', 'fetch: ');
    const researchModel = delegatingModel('delegate_fetch', 'research: ');
    const topModel = delegatingModel('delegate_research', 'task: ');
    // Told when the question starts waiting and when it is answered, at the top though it is asked at depth 2.
    const waits: string[] = [];
    const top = startAgent({
      model: topModel,
      label: 'task',
      system: 'You run tasks.',
      input: 'Read my mail.',
      tools: [delegateTool('research', researchModel, [delegateTool('fetch', fetchModel, [login])])],
      ownerWait: {
        begin: () => waits.push('begin'),
        end: () => {
          waits.push('end');
        },
      },
    });

    const notification = await top.nextNotification();
    expect(notification).toMatchObject({ message: 'Opening the mailbox.', lineage: ['task', 'research', 'fetch'] });
    expect(notification.at).toBeInstanceOf(Date);
    const clarification = await top.nextClarification();
    expect(clarification).toMatchObject({
      question: 'Which account should I use?',
      lineage: ['task', 'research', 'fetch'],
    });

    expect(waits).toEqual(['begin']);
    top.answerClarification(clarification.id, 'the work account');
    expect(waits).toEqual(['begin', 'end']);

    const result = await top.result();
    expect(result.status).toBe('completed');
    expect(result.answer).toContain('the work account');
    expect(fetchModel.requests[1]?.messages.at(-1)).toMatchObject({
      role: 'tool',
      content: expect.stringMatching(/^<<<UNTRUSTED-\w+ login>>>\n\{"account":"the work account"\}\n<<<END /),
    });
  });

  it("gives the answer to the tool only once the owner wait's end has settled", async () => {
    const order: string[] = [];
    const ask = defineTool({
      name: 'ask',
      description: 'Asks the owner.',
      input: z.object({}),
      run: async (_input, context) => {
        const answer = await context.askCaller('Proceed?');
        order.push(`answer ${answer}`);
        return answer;
      },
    });
    let finishEnd: () => void = () => {};
    const model = createScriptedModel({ replies: [{ toolCalls: [{ name: 'ask' }] }, 'done'] });
    const handle = startAgent({
      model,
      system: 's',
      input: 'go',
      tools: [ask],
      ownerWait: {
        begin: () => order.push('begin'),
        end: () =>
          new Promise<void>((resolve) => {
            order.push('end started');
            finishEnd = () => {
              order.push('end settled');
              resolve();
            };
          }),
      },
    });
    const clarification = await handle.nextClarification();
    handle.answerClarification(clarification.id, 'yes');
    await expect.poll(() => order, { timeout: 5_000 }).toContain('end started');
    expect(order).not.toContain('answer yes');
    finishEnd();
    await expect(handle.result()).resolves.toMatchObject({ status: 'completed' });
    expect(order).toEqual(['begin', 'end started', 'end settled', 'answer yes']);
  });

  it('rejects a pending question when the loop is stopped and ignores a late answer', async () => {
    let asked: Promise<string> | undefined;
    const ask = defineTool({
      name: 'ask',
      description: 'Asks the owner.',
      input: z.object({}),
      run: async (_input, context) => {
        asked = context.askCaller('Proceed?');
        return asked;
      },
    });
    const model = createScriptedModel({ replies: [{ toolCalls: [{ name: 'ask' }] }] });
    const waits: string[] = [];
    const handle = startAgent({
      model,
      system: 's',
      input: 'go',
      tools: [ask],
      ownerWait: {
        begin: () => waits.push('begin'),
        end: () => {
          waits.push('end');
        },
      },
    });
    const clarification = await handle.nextClarification();

    handle.stop('no longer needed');

    await expect(asked).rejects.toThrow('no longer needed');
    handle.answerClarification(clarification.id, 'yes');
    // The wait ended once, when the loop stopped; the late answer changes nothing.
    expect(waits).toEqual(['begin', 'end']);
    await expect(handle.result()).resolves.toMatchObject({ status: 'stopped', reason: 'no longer needed' });
  });
});
