import { describe, expect, it } from 'vitest';
import * as z from 'zod';
import { startAgent } from '../loop/start-agent.ts';
import { createEventRecorder } from '../testing/event-recorder.ts';
import { createScriptedModel } from '../testing/scripted-model.ts';
import { defineTool } from './define-tool.ts';
import type { ToolGate, ToolGateDecision, ToolGateRequest } from './tool-gate.ts';

function counterTool(name: string) {
  const calls: unknown[] = [];
  const tool = defineTool({
    name,
    description: `Counts calls to ${name}.`,
    input: z.object({ value: z.string() }),
    run: async (input) => {
      calls.push(input);
      return { ok: true };
    },
  });
  return { tool, calls };
}

describe('the tool gate', () => {
  it('answers a refused call with `error: refused: …`, does not run it, and the loop goes on', async () => {
    const { tool, calls } = counterTool('write');
    const seen: ToolGateRequest[] = [];
    const gate: ToolGate = async (request) => {
      seen.push(request);
      return { run: false, reason: 'tools.deny matches write' };
    };
    const model = createScriptedModel({
      replies: [{ toolCalls: [{ name: 'write', arguments: { value: 'x' } }] }, 'I could not write.'],
    });

    const result = await startAgent({ model, system: 's', input: 'go', tools: [tool], gate }).result();

    expect(result).toMatchObject({ status: 'completed', answer: 'I could not write.' });
    expect(calls).toEqual([]);
    expect(seen[0]).toMatchObject({ tool: { name: 'write' }, input: { value: 'x' }, call: { name: 'write' } });
    const answer = model.requests[1]?.messages.at(-1);
    expect(answer).toMatchObject({ role: 'tool' });
    expect(answer?.content).toContain('error: refused: tools.deny matches write');
  });

  it('runs an allowed call once, with the parsed input', async () => {
    const { tool, calls } = counterTool('write');
    const gate: ToolGate = async () => ({ run: true });
    const model = createScriptedModel({
      replies: [{ toolCalls: [{ name: 'write', arguments: { value: 'x' } }] }, 'done'],
    });

    await startAgent({ model, system: 's', input: 'go', tools: [tool], gate }).result();

    expect(calls).toEqual([{ value: 'x' }]);
  });

  it('asks nothing for invalid arguments, and refuses when the gate itself fails', async () => {
    const { tool, calls } = counterTool('write');
    let asked = 0;
    const gate: ToolGate = async () => {
      asked += 1;
      throw new Error('approvals folder unreadable');
    };
    const model = createScriptedModel({
      replies: [
        { toolCalls: [{ name: 'write', arguments: { value: 3 } }] },
        { toolCalls: [{ name: 'write', arguments: { value: 'x' } }] },
        'done',
      ],
    });

    await startAgent({ model, system: 's', input: 'go', tools: [tool], gate }).result();

    expect(asked).toBe(1);
    expect(calls).toEqual([]);
    expect(model.requests[2]?.messages.at(-1)?.content).toContain(
      'error: refused: the tool gate failed: approvals folder unreadable',
    );
  });

  it('emits approval-wait and approval-decided around a call that waits, then runs it', async () => {
    const { tool, calls } = counterTool('write');
    let decide: (decision: ToolGateDecision) => void = () => {};
    const gate: ToolGate = (request) => {
      request.waiting('ap-000000000001');
      return new Promise((resolve) => {
        decide = resolve;
      });
    };
    const recorder = createEventRecorder();
    const model = createScriptedModel({
      replies: [{ toolCalls: [{ name: 'write', arguments: { value: 'x' } }] }, 'done'],
    });
    const handle = startAgent({
      model,
      system: 's',
      input: 'go',
      tools: [tool],
      gate,
      onEvent: recorder.onEvent,
    });

    await recorder.waitFor((event) => event.type === 'approval-wait');
    expect(calls).toEqual([]);
    decide({ run: true });
    const result = await handle.result();

    expect(result.status).toBe('completed');
    expect(calls).toHaveLength(1);
    const types = recorder.events.map((event) => event.type);
    expect(types.indexOf('approval-wait')).toBeLessThan(types.indexOf('approval-decided'));
    expect(types.indexOf('approval-decided')).toBeLessThan(types.indexOf('tool-started'));
    expect(recorder.events.find((event) => event.type === 'approval-decided')).toMatchObject({
      approval: 'ap-000000000001',
      toolName: 'write',
      run: true,
    });
  });

  it('stops waiting when the loop is stopped, and the call does not run', async () => {
    const { tool, calls } = counterTool('write');
    const gate: ToolGate = (request) => {
      request.waiting('ap-000000000002');
      return new Promise((_resolve, reject) => {
        request.signal.addEventListener('abort', () => reject(request.signal.reason), { once: true });
      });
    };
    const recorder = createEventRecorder();
    const model = createScriptedModel({ replies: [{ toolCalls: [{ name: 'write', arguments: { value: 'x' } }] }] });
    const handle = startAgent({ model, system: 's', input: 'go', tools: [tool], gate, onEvent: recorder.onEvent });

    await recorder.waitFor((event) => event.type === 'approval-wait');
    handle.stop('the owner changed their mind');
    const result = await handle.result();

    expect(result.status).toBe('stopped');
    expect(calls).toEqual([]);
  });

  it('is inherited by nested loops', async () => {
    const { tool, calls } = counterTool('write');
    const refused: string[] = [];
    const gate: ToolGate = async (request) => {
      refused.push(`${request.handle.lineage.join(' › ')}: ${request.tool.name}`);
      return { run: false, reason: 'no' };
    };
    const childModel = createScriptedModel({
      replies: [{ toolCalls: [{ name: 'write', arguments: { value: 'x' } }] }, 'child done'],
    });
    const delegate = defineTool({
      name: 'delegate',
      description: 'Runs a nested loop.',
      input: z.object({}),
      tier: 'read_only',
      run: async (_input, context) => {
        const child = context.startAgent({
          model: childModel,
          system: 's',
          input: 'go',
          tools: [tool],
          label: 'child',
        });
        return (await child.result()).answer;
      },
    });
    const gateOnlyWrites: ToolGate = async (request) =>
      request.tool.tier === 'read_only' ? { run: true } : gate(request);
    const model = createScriptedModel({ replies: [{ toolCalls: [{ name: 'delegate', arguments: {} }] }, 'done'] });

    await startAgent({
      model,
      system: 's',
      input: 'go',
      tools: [delegate],
      gate: gateOnlyWrites,
      label: 'top',
    }).result();

    expect(calls).toEqual([]);
    expect(refused).toEqual(['top › child: write']);
  });

  it("lets a nested loop's own gate add to its parent's but never loosen it", async () => {
    const { tool, calls } = counterTool('write');
    const asked: string[] = [];
    const parentGate: ToolGate = async (request) => {
      asked.push(`parent: ${request.tool.name}`);
      return request.tool.tier === 'read_only' ? { run: true } : { run: false, reason: 'the owner said no' };
    };
    const laxGate: ToolGate = async (request) => {
      asked.push(`child: ${request.tool.name}`);
      return { run: true };
    };
    const childModel = createScriptedModel({
      replies: [{ toolCalls: [{ name: 'write', arguments: { value: 'x' } }] }, 'child done'],
    });
    const delegate = defineTool({
      name: 'delegate',
      description: 'Runs a nested loop with a gate of its own.',
      input: z.object({}),
      tier: 'read_only',
      run: async (_input, context) => {
        const child = context.startAgent({ model: childModel, system: 's', input: 'go', tools: [tool], gate: laxGate });
        return (await child.result()).answer;
      },
    });
    const model = createScriptedModel({ replies: [{ toolCalls: [{ name: 'delegate', arguments: {} }] }, 'done'] });

    await startAgent({ model, system: 's', input: 'go', tools: [delegate], gate: parentGate }).result();

    expect(calls).toEqual([]);
    expect(asked).toEqual(['parent: delegate', 'child: write', 'parent: write']);
    expect(childModel.requests[1]?.messages.at(-1)?.content).toContain('error: refused: the owner said no');
  });
});
