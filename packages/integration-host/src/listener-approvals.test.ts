import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { createApprovalRequest, createToolCallGate } from '@assistant/actions';
import { FileNoteStore } from '@assistant/notes';
import { openFileTaskQueue, type TaskQueue } from '@assistant/queue';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { listenerApprovals } from './listener-approvals.ts';

let dir: string;
let queue: TaskQueue;
let notes: FileNoteStore;

beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'assistant-listener-approvals-'));
  notes = new FileNoteStore({ root: path.join(dir, 'notes') });
  queue = await openFileTaskQueue({ directory: path.join(dir, 'queue') });
  await notes.create('cards/ada.md', { data: { name: 'Ada' }, body: '# Ada\n' });
});

afterEach(async () => {
  await queue.close();
  await rm(dir, { recursive: true, force: true });
});

async function request(): Promise<string> {
  const created = await createApprovalRequest({
    notes,
    instance: 'friendly',
    domain: 'greeter',
    platform: 'cards',
    notePath: 'cards/ada.md',
    title: 'Ada',
    match: {
      rule: 'cards',
      ruleIndex: 0,
      provenance: 'llm',
      approval: true,
      reason: 'close >= 0.8',
      actions: [{ kind: 'platform', name: 'send_card', key: 'send_card', tier: 'irreversible', yolo: false }],
    },
    expiresMs: 60_000,
    nowMs: Date.now(),
  });
  return created.id;
}

describe('listenerApprovals', () => {
  it('lists the pending requests described, and decides one with the code of `assistant approve`', async () => {
    const id = await request();
    const approvals = listenerApprovals({ notes, queue });
    expect(await approvals.pending()).toEqual([
      {
        id,
        title: 'Ada',
        actions: 'send_card',
        rule: 'cards',
        reason: 'close >= 0.8',
        expiresAt: expect.any(String),
        // What will happen, in full: what the owner approves.
        rendering: expect.stringContaining('action: send_card\nkind: platform\ntier: irreversible'),
        bound: true,
      },
    ]);
    const decided = await approvals.decide(id, 'approve', 'telegram:42');
    expect(decided).toMatchObject({ status: 'approved', kind: 'action', actions: 'send_card', title: 'Ada' });
    expect(decided.tasks).toHaveLength(1);
    expect((await notes.read(`approvals/${id}.md`))?.data).toMatchObject({
      status: 'approved',
      decided_by: 'telegram:42',
    });
    expect(await approvals.pending()).toEqual([]);
    await expect(approvals.decide(id, 'reject', 'telegram:42')).rejects.toMatchObject({ code: 'CONFLICT' });
    await expect(approvals.decide('ap-000000000000', 'approve', 'telegram:42')).rejects.toMatchObject({
      code: 'NOT_FOUND',
    });
  });

  it("says a tool call's request is one: approving it enqueues nothing, the waiting loop runs the call", async () => {
    const gate = createToolCallGate({
      notes,
      policy: { allow: [], deny: [], approve: [] },
      approvalTimeoutMs: 60_000,
      task: { id: 'task-1' },
      instance: { name: 'system', domain: 'system' },
      item: 'transcripts/task-1.md',
      pollIntervalMs: 10,
    });
    const waited: string[] = [];
    const decision = gate({
      tool: { name: 'fs__write', tier: 'irreversible' },
      input: { path: '/x' },
      call: { id: 'call_1' },
      signal: new AbortController().signal,
      handle: { lineage: ['system.agent'] },
      waiting: (id) => void waited.push(id),
    });
    await expect.poll(() => waited.length).toBe(1);
    const decided = await listenerApprovals({ notes, queue }).decide(waited[0] ?? '', 'approve', 'telegram:42');
    expect(decided).toMatchObject({ status: 'approved', kind: 'tool_call', tasks: [] });
    expect(await decision).toEqual({ run: true });
  });
});
