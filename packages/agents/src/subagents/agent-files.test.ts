import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { ChildResult } from '../subagent-types.ts';
import { countLiveChildren, deliverChildResult, markLive, recordFile } from './agent-files.ts';

let root: string;

beforeEach(async () => {
  root = await mkdtemp(path.join(tmpdir(), 'agent-files-'));
});
afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

/** A child's record on disk, as a spawn writes it (without its marker: as before markers existed). */
async function record(parent: string, child: string): Promise<void> {
  const file = recordFile(root, parent, child);
  await mkdir(path.dirname(file), { recursive: true });
  await writeFile(file, `${JSON.stringify({ id: child, parent_task: parent })}\n`);
}

const result = (id: string): ChildResult => ({
  id,
  task_id: `t-${id}`,
  persona: 'worker',
  status: 'completed',
  answer: 'ok',
  steps: 1,
  finished_at: '2026-11-29T12:00:00.000Z',
});

describe('countLiveChildren over the installation', () => {
  it('counts children with no result from the records at its first count, then from .live/ alone', async () => {
    // Two parents' worth of history from before the markers: three children, one finished.
    await record('task-a', 'ag-1');
    await record('task-a', 'ag-2');
    await record('task-b', 'ag-3');
    await deliverChildResult({ root, record: { id: 'ag-2', parent_task: 'task-a' }, result: result('ag-2') });
    expect(await countLiveChildren(root)).toBe(2);
    expect((await readdir(path.join(root, '.live'))).sort()).toEqual(['ag-1', 'ag-3']);
    expect(await readFile(path.join(root, '.live', 'ag-3'), 'utf8')).toBe('task-b\n');

    // A spawn marks its child; a delivered result takes the mark away.
    await record('task-b', 'ag-4');
    await markLive(root, 'task-b', 'ag-4');
    expect(await countLiveChildren(root)).toBe(3);
    await deliverChildResult({ root, record: { id: 'ag-1', parent_task: 'task-a' }, result: result('ag-1') });
    expect(await countLiveChildren(root)).toBe(2);

    // Past the first count the parents' folders are not read again: a record written without its marker (a crash
    // between the two) is not counted until the next reconciliation, a later process's first count.
    await record('task-c', 'ag-5');
    expect(await countLiveChildren(root)).toBe(2);
    // The per-parent count reads that parent's folders, as it always did.
    expect(await countLiveChildren(root, 'task-c')).toBe(1);
  });

  it('drops a marker whose child has its result, or no record any more, at its first count', async () => {
    await record('task-a', 'ag-1');
    await record('task-a', 'ag-2');
    await mkdir(path.join(root, '.live'));
    // ag-1 delivered before a crash took its marker away; ag-9's parent folder was removed by housekeeping.
    await deliverChildResult({ root, record: { id: 'ag-1', parent_task: 'task-a' }, result: result('ag-1') });
    await writeFile(path.join(root, '.live', 'ag-1'), 'task-a\n');
    await writeFile(path.join(root, '.live', 'ag-9'), 'task-gone\n');
    // A file a person left among the records, with a name no spawn makes: not a child, and no reason to fail.
    await writeFile(path.join(root, 'task-a', 'children', 'not..a-child.json'), '{}\n');
    await mkdir(path.join(root, 'not..a-task', 'children'), { recursive: true });
    expect(await countLiveChildren(root)).toBe(1);
    expect(await readdir(path.join(root, '.live'))).toEqual(['ag-2']);
  });
});
