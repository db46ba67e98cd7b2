// What an agent loop in a task writes to its control events.jsonl: steps and tools, never its streamed tokens.
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { FakeOpenAiServer } from '@assistant/llm/testing';
import { ControlFiles } from '@assistant/steering';
import { pino } from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type RunWorkerOptions, runWorker } from './run-worker.ts';
import { loadTestRuntime } from './testing/load-test-runtime.ts';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'assistant-agent-events-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

/**
 * Runs one `system.agent` task through a worker that exits when idle, on a fake model with `options.llm` settings;
 * `steering` opens the task's channel as runWorker's option does.
 */
async function drainAgentTask(options: {
  serverUrl: string;
  llm?: string;
  steering?: (runtime: Awaited<ReturnType<typeof loadTestRuntime>>) => RunWorkerOptions['steering'];
}) {
  await writeFile(
    path.join(dir, 'config.yaml'),
    `data_dir: ./data\nworker: {poll_interval: 50ms}\nllms:\n  default: {base_url: "${options.serverUrl}", model: fake-model${options.llm ?? ''}}\n`,
  );
  const runtime = await loadTestRuntime(dir);
  const { config, registry, queue } = runtime;
  const enqueued = await queue.enqueue({ type: 'system.agent', source: 'cli', payload: { prompt: 'Anything?' } });
  const id = enqueued.status === 'enqueued' ? enqueued.task.id : '';
  const steering = options.steering?.(runtime);
  await runWorker({
    config,
    registry,
    logger: pino({ level: 'silent' }),
    signal: new AbortController().signal,
    exitWhenIdle: true,
    ...(steering === undefined ? {} : { steering }),
  });
  return { config, queue, id };
}

describe('the events.jsonl of a task that runs an agent loop', () => {
  it('holds the steps of a streamed reply but not one line per token', async () => {
    await using server = await FakeOpenAiServer.start({
      replies: [{ text: 'There are no notes about that topic at all, as far as I can see.' }],
    });
    const { config, queue, id } = await drainAgentTask({
      serverUrl: server.url,
      llm: ', capabilities: {tools: true}',
    });
    expect((await queue.get(id))?.state).toBe('done');

    // The loop asked for a stream, so its reply did arrive as tokens.
    expect(server.requests[0]?.body.stream).toBe(true);
    const lines = (await readFile(path.join(config.paths.control, id, 'events.jsonl'), 'utf8')).trim().split('\n');
    const types = lines.map((line) => (JSON.parse(line) as { type: string }).type);
    expect(types).toEqual(['step-started', 'step-finished', 'done']);
  });

  it("is complete before the task's outcome is recorded, however slow the channel writes", async () => {
    await using server = await FakeOpenAiServer.start({ replies: [{ text: 'Nothing.' }] });
    // A channel whose writes take a while, as a remote worker's over HTTP do; it notes the task's state once each
    // event is written. `/api/tasks/:id/events` ends when the task is done and nothing is left to send, so the last
    // event must be in before the task is done. The latency is injected, not waited on: the worker must wait for
    // the writes however long they take, so the assertions hold for any value, and without that wait any value
    // above nothing leaves the writes behind.
    const writeLatencyMs = 300;
    const statesAfterWrite: string[] = [];
    const { queue, id } = await drainAgentTask({
      serverUrl: server.url,
      steering:
        ({ config, queue }) =>
        (taskId) =>
          new (class extends ControlFiles {
            override async event(event: Parameters<ControlFiles['event']>[0]): Promise<void> {
              await new Promise((resolve) => setTimeout(resolve, writeLatencyMs));
              await super.event(event);
              statesAfterWrite.push(`${event.type}:${(await queue.get(taskId))?.state}`);
            }
          })({ root: config.paths.control, taskId }),
    });
    expect((await queue.get(id))?.state).toBe('done');
    expect(statesAfterWrite).toEqual(['step-started:active', 'step-finished:active', 'done:active']);
  });
});
