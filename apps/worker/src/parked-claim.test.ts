// A task that waits for the owner's approval is marked parked in the queue before its slot is given back, and the mark
// is removed before its code runs again: a worker death in between is then never taken for the task's (decision 0062).
import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { decideApproval, listApprovals } from '@assistant/actions';
import { defineTool } from '@assistant/agent';
import type { TaskHandler } from '@assistant/integration-host';
import { FakeOpenAiServer } from '@assistant/llm/testing';
import { FileNoteStore } from '@assistant/notes';
import type { ClaimedTask, TaskConsumer } from '@assistant/queue';
import { pino } from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import * as z from 'zod';
import { runWorker } from './run-worker.ts';
import { loadTestRuntime } from './testing/load-test-runtime.ts';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'assistant-parked-claim-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('a task waiting for approval', () => {
  it('is parked before its slot is given back, and unparked before the approved call runs', {
    timeout: 45_000,
  }, async () => {
    await using server = await FakeOpenAiServer.start({
      replies: [{ toolCalls: [{ name: 'poke', arguments: {} }] }, { text: 'Poked.' }],
    });
    await writeFile(
      path.join(dir, 'config.yaml'),
      `data_dir: ./data
worker: {concurrency: 1, poll_interval: 50ms, shutdown_grace: 200ms}
tools: {approve: [poke]}
llms:
  default: {base_url: "${server.url}", model: fake-model, capabilities: {tools: true}}
`,
    );
    const { config, queue } = await loadTestRuntime(dir);
    const notes = new FileNoteStore({ root: config.paths.notes });
    const events: string[] = [];
    const markers = () => readdir(path.join(config.paths.queue, 'parked'));
    const poke = defineTool({
      name: 'poke',
      description: 'Pokes.',
      tier: 'read_only',
      input: z.object({}),
      run: async () => {
        events.push(`tool ran (${(await markers()).length} marked)`);
        return { poked: true };
      },
    });
    const handlers = new Map<string, TaskHandler>([
      [
        'test.poke',
        async (context) => {
          const handle = context.agent({ system: 'You poke.', input: 'Poke.', tools: [poke] });
          return (await handle.result()).answer ?? null;
        },
      ],
    ]);
    let approving: Promise<void> | undefined;
    const approve = async () => {
      for (const deadline = Date.now() + 20_000; ; ) {
        const [request] = await listApprovals(notes, { status: 'pending' });
        if (request) {
          await decideApproval({ notes, queue, id: request.id, decision: 'approve', by: 'test' });
          return;
        }
        if (Date.now() > deadline) throw new Error('no approval request came');
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    };
    const wrapConsumer = (consumer: TaskConsumer): TaskConsumer =>
      new Proxy(consumer, {
        get(target, property) {
          if (property === 'park') {
            return async (claimed: ClaimedTask) => {
              await target.park(claimed);
              events.push(`parked (${(await markers()).length} marked)`);
              approving = approve();
            };
          }
          if (property === 'unpark') {
            return async (claimed: ClaimedTask) => {
              events.push('unpark begins');
              await target.unpark(claimed);
              events.push(`unparked (${(await markers()).length} marked)`);
            };
          }
          const value = Reflect.get(target, property, target);
          return typeof value === 'function' ? value.bind(target) : value;
        },
      });
    const task = await queue.enqueue({ type: 'test.poke', source: 'cli' });
    await runWorker({
      config,
      logger: pino({ level: 'silent' }),
      signal: new AbortController().signal,
      exitWhenIdle: true,
      handlers,
      wrapConsumer,
    });
    await approving;
    expect(events).toEqual(['parked (1 marked)', 'unpark begins', 'unparked (0 marked)', 'tool ran (0 marked)']);
    const record = await queue.get(task.status === 'enqueued' ? task.task.id : '');
    expect(record).toMatchObject({ state: 'done', task: { result: 'Poked.', attempts: 1, history: [] } });
    expect(await markers()).toEqual([]);
  });

  it('is unparked as soon as one of two waiting calls is approved: that call runs while the other still waits', {
    timeout: 45_000,
  }, async () => {
    await using server = await FakeOpenAiServer.start({
      replies: [
        {
          toolCalls: [
            { name: 'poke', arguments: { n: 1 } },
            { name: 'poke', arguments: { n: 2 } },
          ],
        },
        { text: 'Poked twice.' },
      ],
    });
    await writeFile(
      path.join(dir, 'config.yaml'),
      `data_dir: ./data
worker: {concurrency: 1, poll_interval: 50ms, shutdown_grace: 200ms}
tools: {approve: [poke]}
llms:
  default: {base_url: "${server.url}", model: fake-model, capabilities: {tools: true}}
`,
    );
    const { config, queue } = await loadTestRuntime(dir);
    const notes = new FileNoteStore({ root: config.paths.notes });
    const events: string[] = [];
    const markers = () => readdir(path.join(config.paths.queue, 'parked'));
    const approveCall = async (n: number) => {
      for (const deadline = Date.now() + 20_000; ; ) {
        const pending = await listApprovals(notes, { status: 'pending' });
        const request = pending.find((each) => JSON.parse(each.tool_call?.arguments ?? '{}').n === n);
        if (request && pending.length === (n === 1 ? 2 : 1)) {
          await decideApproval({ notes, queue, id: request.id, decision: 'approve', by: 'test' });
          return;
        }
        if (Date.now() > deadline) throw new Error(`no approval request for poke ${n} came`);
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    };
    let approving: Promise<void> | undefined;
    const poke = defineTool({
      name: 'poke',
      description: 'Pokes.',
      tier: 'read_only',
      input: z.object({ n: z.number() }),
      run: async ({ n }) => {
        events.push(`poke ${n} ran (${(await markers()).length} marked)`);
        if (n === 1) approving = approveCall(2);
        return { poked: n };
      },
    });
    const handlers = new Map<string, TaskHandler>([
      [
        'test.poke',
        async (context) => {
          const handle = context.agent({ system: 'You poke.', input: 'Poke twice.', tools: [poke] });
          return (await handle.result()).answer ?? null;
        },
      ],
    ]);
    const first = approveCall(1);
    const task = await queue.enqueue({ type: 'test.poke', source: 'cli' });
    await runWorker({
      config,
      logger: pino({ level: 'silent' }),
      signal: new AbortController().signal,
      exitWhenIdle: true,
      handlers,
    });
    await first;
    await approving;
    // Poke 1 runs while poke 2 still waits: some of the task's code runs, so a death then must count.
    expect(events).toEqual(['poke 1 ran (0 marked)', 'poke 2 ran (0 marked)']);
    const record = await queue.get(task.status === 'enqueued' ? task.task.id : '');
    expect(record).toMatchObject({ state: 'done', task: { result: 'Poked twice.', attempts: 1 } });
    expect(await markers()).toEqual([]);
  });
});
