// Housekeeping removes the sub-agent folders (data/agents/<task-id>/) and code call logs (data/codeact/<task-id>/) of
// tasks the queue no longer holds, and leaves those of tasks it holds in any state, and anything else there, alone.
// A real worker in this process.
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { newTaskId } from '@assistant/queue';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { loadTestRuntime } from './testing/load-test-runtime.ts';
import { runUntilIdle } from './testing/run-until-idle.ts';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'assistant-agents-prune-'));
  await writeFile(path.join(dir, 'config.yaml'), 'data_dir: ./data\nworker: {poll_interval: 50ms}\n');
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function folder(root: string, name: string): Promise<void> {
  await mkdir(path.join(root, name, 'children'), { recursive: true });
  await writeFile(path.join(root, name, 'children', 'ag-0123456789abcdef.json'), '{}\n');
}

describe('housekeeping and data/agents', () => {
  it('removes the folders of tasks pruned from the queue, keeps those of tasks it holds', async () => {
    const { config, registry, queue } = await loadTestRuntime(dir);
    const root = path.join(config.paths.dataDir, 'agents');
    const callLogs = path.join(config.paths.dataDir, 'codeact');
    const held = await queue.enqueue({ type: 'system.echo', source: 'cli', payload: { text: 'hi' } });
    if (held.status !== 'enqueued') throw new Error(held.status);
    const gone = newTaskId();
    for (const under of [root, callLogs]) {
      await folder(under, gone);
      await folder(under, held.task.id);
      // Not a task's folder: a person's notes, say.
      await folder(under, 'my-notes');
    }
    const housekeeping = await queue.enqueue({ type: 'system.housekeeping.run', source: 'cli' });
    if (housekeeping.status !== 'enqueued') throw new Error(housekeeping.status);

    await runUntilIdle({ config, registry });

    expect((await readdir(root)).sort()).toEqual([held.task.id, 'my-notes'].sort());
    expect((await readdir(callLogs)).sort()).toEqual([held.task.id, 'my-notes'].sort());
    const record = await queue.get(housekeeping.task.id);
    expect(record?.state).toBe('done');
    expect(record?.task?.result).toMatchObject({ agentFolders: 1, callLogs: 1 });
    const [logFile] = await readdir(config.paths.logs);
    const log = await readFile(path.join(config.paths.logs, logFile ?? ''), 'utf8');
    expect(log).toContain('removed the sub-agent folders of 1 pruned tasks (data/agents/)');
    expect(log).toContain('removed the code call logs of 1 pruned tasks (data/codeact/)');
    await queue.close();
  });
});
