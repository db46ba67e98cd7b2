// What an agent loop in a task writes to its control events.jsonl: steps and tools, never its streamed tokens.
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { FakeOpenAiServer } from '@assistant/llm/testing';
import { ControlFiles } from '@assistant/steering';
import { pino } from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { runWorker } from './run-worker.ts';
import { loadTestRuntime } from './testing/load-test-runtime.ts';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'assistant-agent-events-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('the events.jsonl of a task that runs an agent loop', () => {
  it('holds the steps of a streamed reply but not one line per token', async () => {
    await using server = await FakeOpenAiServer.start({
      replies: [{ text: 'There are no notes about that topic at all, as far as I can see.' }],
    });
    await writeFile(
      path.join(dir, 'config.yaml'),
      `data_dir: ./data\nworker: {poll_interval: 50ms}\nllms:\n  default: {base_url: "${server.url}", model: fake-model, capabilities: {tools: true}}\n`,
    );
    const { config, registry, queue } = await loadTestRuntime(dir);
    const enqueued = await queue.enqueue({ type: 'system.agent', source: 'cli', payload: { prompt: 'Anything?' } });
    const id = enqueued.status === 'enqueued' ? enqueued.task.id : '';
    await runWorker({
      config,
      registry,
      logger: pino({ level: 'silent' }),
      signal: new AbortController().signal,
      exitWhenIdle: true,
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
    await writeFile(
      path.join(dir, 'config.yaml'),
      `data_dir: ./data\nworker: {poll_interval: 50ms}\nllms:\n  default: {base_url: "${server.url}", model: fake-model}\n`,
    );
    const { config, registry, queue } = await loadTestRuntime(dir);
    const enqueued = await queue.enqueue({ type: 'system.agent', source: 'cli', payload: { prompt: 'Anything?' } });
    const id = enqueued.status === 'enqueued' ? enqueued.task.id : '';
    // A channel whose writes take a while, as a remote worker's over HTTP do; it notes the task's state once each
    // event is written. `/api/tasks/:id/events` ends when the task is done and nothing is left to send, so the last
    // event must be in before the task is done.
    const statesAfterWrite: string[] = [];
    await runWorker({
      config,
      registry,
      logger: pino({ level: 'silent' }),
      signal: new AbortController().signal,
      exitWhenIdle: true,
      steering: (taskId) =>
        new (class extends ControlFiles {
          override async event(event: Parameters<ControlFiles['event']>[0]): Promise<void> {
            await new Promise((resolve) => setTimeout(resolve, 300));
            await super.event(event);
            statesAfterWrite.push(`${event.type}:${(await queue.get(taskId))?.state}`);
          }
        })({ root: config.paths.control, taskId }),
    });
    expect((await queue.get(id))?.state).toBe('done');
    expect(statesAfterWrite).toEqual(['step-started:active', 'step-finished:active', 'done:active']);
  });
});
