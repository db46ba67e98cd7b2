// A task whose agent loop waits for the owner's approval gives its worker slot back meanwhile.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { decideApproval, listApprovals } from '@assistant/actions';
import { FakeOpenAiServer } from '@assistant/llm/testing';
import { FileNoteStore } from '@assistant/notes';
import { pino } from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
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
});
