import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { isAssistantError } from '@assistant/errors';
import { openFileTaskQueue } from '@assistant/queue';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { CliContext } from '../cli-context.ts';
import { runCommand } from './run-command.ts';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'assistant-run-command-'));
  await writeFile(path.join(dir, 'config.yaml'), 'data_dir: ./data\n');
  await mkdir(path.join(dir, 'agents'));
  await mkdir(path.join(dir, 'personas'));
  await writeFile(path.join(dir, 'personas', 'writer.md'), '---\ntools: {allow: [search_notes]}\n---\nYou write.\n');
  await writeFile(path.join(dir, 'agents', 'review.yaml'), 'topology: mesh\nagents: [writer]\n');
  await writeFile(path.join(dir, 'agents', 'broken.yaml'), 'topology: mesh\nagents: [writter]\n');
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

function cli() {
  const output = { stdout: '', stderr: '' };
  const context: CliContext = {
    stdout: { write: (text: string) => (output.stdout += text) },
    stderr: { write: (text: string) => (output.stderr += text) },
    env: {},
    cwd: dir,
  };
  const run = (options: { workflow: string; input: string; wait?: boolean; json?: boolean; timeout?: string }) =>
    runCommand({ globals: { configPath: path.join(dir, 'config.yaml'), dataDir: undefined }, context, ...options });
  return { output, run };
}

const queueOf = () => openFileTaskQueue({ directory: path.join(dir, 'data', 'queue') });

describe('assistant run', () => {
  it('enqueues system.workflow with a fresh run id and prints the run and the task', async () => {
    const { output, run } = cli();
    expect(await run({ workflow: 'review', input: 'tea' })).toBe(0);
    const [, runId, taskId] = /^run (run-\d{8}-[a-z0-9]+), task (\S+)\n/.exec(output.stdout) ?? [];
    const queue = await queueOf();
    const record = await queue.get(taskId ?? '');
    await queue.close();
    expect(record?.task).toMatchObject({
      type: 'system.workflow',
      source: 'cli',
      priority: 2,
      payload: { workflow: 'review', input: 'tea', run: runId },
    });
  });

  it('refuses an unknown workflow and one with problems, enqueueing nothing', async () => {
    const { run } = cli();
    const unknown = await run({ workflow: 'nope', input: 'x' }).catch((error: unknown) => error);
    expect(isAssistantError(unknown, 'WORKFLOW_UNKNOWN')).toBe(true);
    expect((unknown as { hint?: string }).hint).toBe('the workflows are review (agents/NAME.yaml beside config.yaml)');
    const broken = await run({ workflow: 'broken', input: 'x' }).catch((error: unknown) => error);
    expect(isAssistantError(broken, 'WORKFLOW_INVALID')).toBe(true);
    expect((broken as Error).message).toContain(
      'agents/broken.yaml:2:10: agents[0]: unknown persona `writter` (did you mean `writer`?)',
    );
    const queue = await queueOf();
    expect(await queue.list({ type: 'system.workflow' })).toEqual([]);
    await queue.close();
  });

  it('with --wait, follows the run to its end: the output, or the reason and exit 1', async () => {
    const finish = async (result: unknown) => {
      const queue = await queueOf();
      const consumer = queue.consumer({ pollIntervalMs: 20 });
      await consumer.start();
      // The command enqueues before it follows: wait for its task (bounded, so a command that never enqueues fails).
      let claimed = await consumer.claim();
      for (let tries = 0; !claimed && tries < 100; tries += 1) {
        await consumer.waitForWork({ timeoutMs: 100 });
        claimed = await consumer.claim();
      }
      if (!claimed) throw new Error('assistant run enqueued no task');
      await consumer.complete(claimed, result);
      await consumer.close();
      await queue.close();
    };
    const done = cli();
    const following = done.run({ workflow: 'review', input: 'tea', wait: true, json: true });
    await finish({ run: 'r', status: 'done', output: 'Tea came from China.' });
    expect(await following).toBe(0);
    expect(JSON.parse(done.output.stdout)).toMatchObject({ status: 'done', output: 'Tea came from China.' });

    const failed = cli();
    const followingFailed = failed.run({ workflow: 'review', input: 'tea', wait: true });
    await finish({ run: 'r', status: 'failed', output: '', reason: 'step 1 ended max_steps' });
    expect(await followingFailed).toBe(1);
    expect(failed.output.stderr).toMatch(/^run run-\d{8}-[a-z0-9]+ failed: step 1 ended max_steps\n$/);
  });
});
