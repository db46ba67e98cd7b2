// A task whose agent loop waits for the owner's approval gives its worker slot back meanwhile.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { decideApproval, listApprovals } from '@assistant/actions';
import { defineTool } from '@assistant/agent';
import type { TaskHandler } from '@assistant/integration-host';
import { FakeOpenAiServer } from '@assistant/llm/testing';
import { FileNoteStore } from '@assistant/notes';
import { pino } from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import * as z from 'zod';
import { runWorker } from './run-worker.ts';
import { loadTestRuntime } from './testing/load-test-runtime.ts';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'assistant-approval-slot-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('a tool call waiting for approval', () => {
  it('frees its task’s slot: with one slot, another task runs meanwhile; the call runs once approved', {
    timeout: 45_000,
  }, async () => {
    await using server = await FakeOpenAiServer.start({
      replies: [{ toolCalls: [{ name: 'read_note', arguments: { path: 'inbox/a.md' } }] }, { text: 'Read it.' }],
    });
    await writeFile(
      path.join(dir, 'config.yaml'),
      `data_dir: ./data
worker: {concurrency: 1, poll_interval: 50ms, shutdown_grace: 200ms}
tools: {approve: [read_note]}
llms:
  default: {base_url: "${server.url}", model: fake-model, capabilities: {tools: true}}
`,
    );
    const { config, registry, queue } = await loadTestRuntime(dir);
    const notes = new FileNoteStore({ root: config.paths.notes });
    await notes.create('inbox/a.md', { data: { title: 'A' }, body: 'Hello.\n' });
    const agent = await queue.enqueue({ type: 'system.agent', source: 'cli', payload: { prompt: 'Read inbox/a.md.' } });
    const stop = new AbortController();
    const worker = runWorker({
      config,
      registry,
      logger: pino({ level: 'silent' }),
      signal: stop.signal,
      exitWhenIdle: true,
    });
    try {
      await expect
        .poll(async () => (await listApprovals(notes, { status: 'pending' })).length, { timeout: 15_000 })
        .toBe(1);
      // The one slot is the agent's, which waits for the owner: the echo runs only if the slot was given back.
      const echo = await queue.enqueue({ type: 'system.echo', source: 'cli', payload: { hello: 'world' } });
      const echoId = echo.status === 'enqueued' ? echo.task.id : '';
      await expect.poll(async () => (await queue.get(echoId))?.state, { timeout: 15_000 }).toBe('done');
      const [request] = await listApprovals(notes, { status: 'pending' });
      expect(request?.tool_call?.tool).toBe('read_note');

      await decideApproval({ notes, queue, id: request?.id ?? '', decision: 'approve', by: 'test' });
      await worker;
      expect((await queue.get(agent.status === 'enqueued' ? agent.task.id : ''))?.state).toBe('done');
      expect(server.requests).toHaveLength(2);
    } finally {
      stop.abort();
      await worker;
    }
  });

  it('frees it for a question to the owner too, until the question is answered', { timeout: 45_000 }, async () => {
    await using server = await FakeOpenAiServer.start({
      replies: [{ toolCalls: [{ name: 'ask_owner', arguments: {} }] }, { text: 'Asked and answered.' }],
    });
    await writeFile(
      path.join(dir, 'config.yaml'),
      `data_dir: ./data
worker: {concurrency: 1, poll_interval: 50ms, shutdown_grace: 200ms}
llms:
  default: {base_url: "${server.url}", model: fake-model, capabilities: {tools: true}}
`,
    );
    const { config, queue } = await loadTestRuntime(dir);
    let echoId = '';
    const askOwner = defineTool({
      name: 'ask_owner',
      description: 'Asks the owner.',
      tier: 'read_only',
      input: z.object({}),
      run: async (_input, tool) => ({ answer: await tool.askCaller('Go on?') }),
    });
    const handlers = new Map<string, TaskHandler>([
      [
        'test.ask',
        async (context) => {
          const handle = context.agent({ system: 'You ask.', input: 'Ask me.', tools: [askOwner] });
          const question = await handle.nextClarification();
          // The one slot is this task's, which waits for the owner: the echo runs only if it was given back.
          const echo = await queue.enqueue({ type: 'test.echo', source: 'cli', payload: 'meanwhile' });
          echoId = echo.status === 'enqueued' ? echo.task.id : '';
          for (const deadline = Date.now() + 20_000; (await queue.get(echoId))?.state !== 'done'; ) {
            if (Date.now() > deadline) throw new Error('the echo did not run while the question waited');
            await new Promise((resolve) => setTimeout(resolve, 20));
          }
          handle.answerClarification(question.id, 'yes');
          return (await handle.result()).answer ?? null;
        },
      ],
      ['test.echo', async ({ payload }) => payload],
    ]);
    const asking = await queue.enqueue({ type: 'test.ask', source: 'cli' });
    await runWorker({
      config,
      logger: pino({ level: 'silent' }),
      signal: new AbortController().signal,
      exitWhenIdle: true,
      handlers,
    });
    const record = await queue.get(asking.status === 'enqueued' ? asking.task.id : '');
    expect(record?.state).toBe('done');
    expect(record?.task?.result).toBe('Asked and answered.');
    expect((await queue.get(echoId))?.state).toBe('done');
  });
});
