import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { runBulkTaskAction } from './bulk-task-action.ts';
import { openFileTaskQueue } from './open-file-task-queue.ts';
import { UnrecoverableError } from './task-errors.ts';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'assistant-bulk-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** A queue with two failed tasks and one pending one. */
async function setup() {
  const queue = await openFileTaskQueue({ directory: path.join(dir, 'queue') });
  const ids: string[] = [];
  for (const n of [1, 2, 3]) {
    const outcome = await queue.enqueue({ type: 'system.echo', payload: { n }, source: 'api', policies: false });
    if (outcome.status !== 'enqueued') throw new Error(outcome.status);
    ids.push(outcome.task.id);
  }
  const consumer = queue.consumer({ pollIntervalMs: 20 });
  await consumer.start();
  for (let index = 0; index < 2; index += 1) {
    const claimed = await consumer.claim();
    if (!claimed) throw new Error('nothing to claim');
    await consumer.fail(claimed, new UnrecoverableError('broken'));
  }
  await consumer.close();
  const failed = (await queue.list({ state: 'failed' })).flatMap((entry) => (entry.name ? [entry.name.id] : []));
  const pending = ids.find((id) => !failed.includes(id)) ?? '';
  return { queue, failed, pending };
}

describe('runBulkTaskAction', () => {
  it('retries the failed tasks named, and refuses with why one that is not failed, one unknown, one not an id', async () => {
    const { queue, failed, pending } = await setup();
    const unknown = 'a'.repeat(26);
    const result = await runBulkTaskAction({ queue, action: 'retry', ids: [...failed, pending, unknown, '../x'] });
    expect(result.done.map((done) => done.id).sort()).toEqual([...failed].sort());
    expect(result.done.every((done) => done.path?.startsWith('queue/pending/') ?? false)).toBe(true);
    expect(result.refused).toEqual([
      { id: pending, reason: `task ${pending} is pending; only failed tasks can be retried` },
      { id: unknown, reason: `no task with id ${unknown}` },
      { id: '../x', reason: 'not a task id: 26 lower-case letters and digits' },
    ]);
    expect(await queue.list({ state: 'failed' })).toHaveLength(0);
    await queue.close();
  });

  it('deletes only failed tasks: a pending one named is refused and kept', async () => {
    const { queue, failed, pending } = await setup();
    const result = await runBulkTaskAction({ queue, action: 'delete', ids: [failed[0] ?? '', pending] });
    expect(result.done).toEqual([{ id: failed[0] }]);
    expect(result.refused).toEqual([
      { id: pending, reason: `task ${pending} is pending, not failed: only failed tasks are deleted` },
    ]);
    expect(await queue.get(failed[0] ?? '')).toBeUndefined();
    expect((await queue.get(pending))?.state).toBe('pending');
    expect((await queue.get(failed[1] ?? ''))?.state).toBe('failed');
    await queue.close();
  });
});
