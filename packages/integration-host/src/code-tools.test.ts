import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { createToolCallGate, decideApproval, listApprovals, readApproval } from '@assistant/actions';
import { type AgentEvent, defineTool, startAgent, type Tool, type ToolGate } from '@assistant/agent';
import { createMemoryTranscriptStore, createScriptedModel } from '@assistant/agent/testing';
import { codeDigest, createExecutor, type Executor, FileCallLog } from '@assistant/codeact';
import { FileNoteStore } from '@assistant/notes';
import { openFileTaskQueue } from '@assistant/queue';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import * as z from 'zod';
import { codeTools } from './code-tools.ts';
import { noteTools } from './note-tools.ts';

let dir: string;
let executor: Executor;
beforeAll(async () => {
  executor = createExecutor({ timeoutMs: 10_000 });
  await executor.warm();
});
afterAll(() => executor.close());
beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'assistant-code-tools-'));
});
afterEach(() => rm(dir, { recursive: true, force: true }));

/** An irreversible tool that records what it sent. */
function outbox() {
  const sent: string[] = [];
  const send = defineTool({
    name: 'send_letter',
    description: 'Sends a letter to one address.',
    input: z.object({ to: z.string(), text: z.string() }),
    codePath: ['letters', 'send'],
    run: async ({ to }) => {
      sent.push(to);
      return { sent: to };
    },
  });
  return { sent, send };
}

function setup(options: { wrap?: (tool: Tool) => Tool } = {}) {
  const notes = new FileNoteStore({ root: path.join(dir, 'notes') });
  const letters = outbox();
  const tools = [...noteTools(notes), letters.send].map(options.wrap ?? ((tool) => tool));
  const code = codeTools({
    tools,
    executor,
    callLog: ({ loop, callId, codeSha256 }) =>
      new FileCallLog(path.join(dir, 'codeact'), { task: 'task-1', loop, call_id: callId, code_sha256: codeSha256 }),
  });
  return { notes, letters, tools: [...tools, ...code], code };
}

const toolMessages = (messages: readonly { role: string; content?: unknown }[]) =>
  messages.filter((message) => message.role === 'tool').map((message) => String(message.content));

describe('codeTools', () => {
  it('lists every callable tool as a declaration in run_code, and finds them with search_tools', async () => {
    const { code } = setup();
    const [runCode, searchTools] = code;
    expect(runCode?.description).toContain('tools.');
    expect(runCode?.description).toMatch(/notes[\s\S]*search/);
    expect(runCode?.description).toMatch(/letters[\s\S]*send/);
    const found = (await searchTools?.run({ query: 'send a letter' }, undefined as never)) as {
      tools: { call: string; declaration: string }[];
    };
    expect(found.tools[0]?.call).toBe('tools.letters.send');
    expect(found.tools[0]?.declaration).toMatch(/to: string/);
    // search_tools is not itself callable from code, and neither is run_code.
    expect(runCode?.description).not.toMatch(/search_tools\(|run_code\(/);
  });

  it('runs a cell over the tools through the gate: an irreversible call waits for approval, then the same code resumes and each call runs once', async () => {
    const searched: string[] = [];
    const { notes, letters, tools } = setup({
      wrap: (tool) =>
        tool.name !== 'search_notes'
          ? tool
          : {
              ...tool,
              run: async (input, context) => {
                searched.push(JSON.stringify(input));
                return tool.run(input, context);
              },
            },
    });
    await notes.create('people/ann.md', { data: { title: 'Ann', email: 'ann@example.com' }, body: 'customer' });
    await notes.create('people/bob.md', { data: { title: 'Bob', email: 'bob@example.com' }, body: 'customer' });
    const gate = createToolCallGate({
      notes,
      policy: { allow: [], deny: [], approve: [] },
      approvalTimeoutMs: 60_000,
      task: { id: 'task-1' },
      instance: { name: 'system', domain: 'system' },
      item: 'transcripts/task-1.md',
      pollIntervalMs: 10,
    });
    const program = `const found = await tools.notes.search({ query: 'customer' });
const sent = [];
for (const note of found) {
  const person = await tools.notes.read({ path: note.path });
  sent.push(await tools.letters.send({ to: person.data.email, text: 'Thanks, ' + note.title }));
}
console.log('sent', sent.length);
return sent;`;
    const model = createScriptedModel({
      replies: [{ toolCalls: [{ id: 'rc-1', name: 'run_code', arguments: { code: program } }] }, 'done'],
    });
    const events: AgentEvent[] = [];
    const handle = startAgent({
      model,
      system: 's',
      input: 'write to the customers',
      tools,
      gate,
      onEvent: (event) => events.push(event),
    });

    const queue = await openFileTaskQueue({ directory: path.join(dir, 'queue') });
    for (const to of ['ann@example.com', 'bob@example.com']) {
      const request = await expect
        .poll(async () => (await listApprovals(notes, { status: 'pending' }))[0], { timeout: 10_000, interval: 10 })
        .toBeDefined()
        .then(async () => (await listApprovals(notes, { status: 'pending' }))[0]);
      // What the owner reads is the call as it will run, in full.
      const saved = await readApproval(notes, request?.id ?? '');
      expect(saved?.tool_call).toMatchObject({
        tool: 'send_letter',
        arguments: JSON.stringify({ to, text: `Thanks, ${to.startsWith('ann') ? 'Ann' : 'Bob'}` }),
      });
      expect(letters.sent).not.toContain(to);
      await decideApproval({ notes, queue, id: request?.id ?? '', decision: 'approve', by: 'cli' });
      await expect.poll(() => letters.sent.includes(to), { timeout: 10_000, interval: 10 }).toBe(true);
    }
    const result = await handle.result();
    expect(result).toMatchObject({ status: 'completed', answer: 'done' });
    expect(letters.sent).toEqual(['ann@example.com', 'bob@example.com']);
    // The cell ran three times (twice stopped for the owner); the search ran once, answered from the log after.
    expect(searched).toEqual(['{"query":"customer"}']);
    const [answer] = toolMessages(model.requests[1]?.messages ?? []);
    expect(answer).toContain('sent 2');
    expect(answer).toMatch(/"calls":5/);
    // The waits were reported like a JSON call's, naming the cell's call.
    expect(
      events
        .filter((event) => event.type === 'approval-wait')
        .map((event) => 'toolCallId' in event && event.toolCallId),
    ).toEqual(['rc-1.2', 'rc-1.4']);
  });

  it('refuses inside the cell what the gate refuses, and checks arguments before asking anyone', async () => {
    const asked: string[] = [];
    const gate: ToolGate = async (request) => {
      asked.push(request.tool.name);
      return request.tool.name === 'send_letter'
        ? { run: false, reason: 'PERSONA_TOOL_DENIED: persona clerk does not grant send_letter' }
        : { run: true };
    };
    const { letters, tools } = setup();
    const program = `const results = [];
try { await tools.letters.send({ to: 'ann@example.com', text: 'hi' }); } catch (error) { results.push(error.message); }
try { await tools.letters.send({ to: 42 }); } catch (error) { results.push(error.message); }
return results;`;
    const model = createScriptedModel({
      replies: [{ toolCalls: [{ name: 'run_code', arguments: { code: program } }] }, 'ok'],
    });
    await startAgent({ model, system: 's', input: 'x', tools, gate }).result();
    const [answer] = toolMessages(model.requests[1]?.messages ?? []);
    expect(answer).toContain('refused: PERSONA_TOOL_DENIED: persona clerk does not grant send_letter');
    expect(answer).toMatch(/invalid arguments for send_letter: to/);
    // run_code itself, then the first send; the malformed one never reached the gate.
    expect(asked).toEqual(['run_code', 'send_letter']);
    expect(letters.sent).toEqual([]);
  });

  it('gives syntax errors, thrown errors and timeouts back to the model as readable errors, and the loop goes on', async () => {
    const { tools } = setup();
    const model = createScriptedModel({
      replies: [
        { toolCalls: [{ name: 'run_code', arguments: { code: 'return (;' } }] },
        { toolCalls: [{ name: 'run_code', arguments: { code: 'console.log("before"); throw new Error("nope");' } }] },
        'gave up',
      ],
    });
    const result = await startAgent({ model, system: 's', input: 'x', tools }).result();
    expect(result).toMatchObject({ status: 'completed', answer: 'gave up' });
    const answers = toolMessages(model.requests[2]?.messages ?? []);
    expect(answers[0]).toMatch(/error: syntax: SyntaxError/);
    expect(answers[1]).toMatch(/error: thrown: Error: nope[\s\S]*before/);
  });

  it('resumes a cell a crash interrupted from its log, with the same call id: nothing runs twice', async () => {
    const { letters, tools } = setup();
    const program = `const a = await tools.letters.send({ to: 'ann@example.com', text: 'hi' });
const b = await tools.letters.send({ to: 'bob@example.com', text: 'hi' });
return [a, b];`;
    // What a worker killed between the two sends leaves: the model's call saved, the first send logged.
    const store = createMemoryTranscriptStore();
    await store.save(
      [
        { role: 'system', content: 's' },
        { role: 'user', content: 'x' },
        {
          role: 'assistant',
          content: null,
          toolCalls: [{ id: 'rc-9', name: 'run_code', arguments: JSON.stringify({ code: program }) }],
        },
      ],
      { steps: 1, status: 'running' },
    );
    const log = new FileCallLog(path.join(dir, 'codeact'), {
      task: 'task-1',
      loop: 'agent',
      call_id: 'rc-9',
      code_sha256: codeDigest(program),
    });
    const first = { index: 0, path: ['letters', 'send'], args: [{ to: 'ann@example.com', text: 'hi' }] };
    await log.started(first);
    await log.finished({ ...first, outcome: { status: 'ok', result: { sent: 'ann@example.com' } } });

    const model = createScriptedModel({ replies: ['done'] });
    const result = await startAgent({ model, system: 's', input: 'x', tools, transcript: store }).result();
    expect(result).toMatchObject({ status: 'completed', answer: 'done' });
    // ann's send came from the log; only bob's ran.
    expect(letters.sent).toEqual(['bob@example.com']);
    expect(toolMessages(model.requests[0]?.messages ?? [])[0]).toContain('bob@example.com');
  });
});
