import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { FileNoteStore } from '@assistant/notes';
import { openFileTaskQueue } from '@assistant/queue';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { decideApproval } from './approval-decisions.ts';
import { describeApproval, expireApprovals, listApprovals, readApproval, withdrawTaskToolCalls } from './approvals.ts';
import { renderToolCall } from './render-approval.ts';
import { type CreateToolCallGateOptions, createToolCallGate, type ToolCallGateRequest } from './tool-call-gate.ts';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'assistant-tool-gate-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

function setup(overrides: Partial<CreateToolCallGateOptions> = {}) {
  const notes = new FileNoteStore({ root: path.join(dir, 'notes') });
  const lines: string[] = [];
  const gate = createToolCallGate({
    notes,
    humanLog: { write: async (entry) => void lines.push(entry.message) },
    policy: { allow: ['notes_*'], deny: ['fs__delete'], approve: ['trigger'] },
    approvalTimeoutMs: 60_000,
    task: { id: 'task-1' },
    instance: { name: 'system', domain: 'system' },
    item: 'transcripts/task-1.md',
    pollIntervalMs: 5,
    ...overrides,
  });
  return { notes, gate, lines };
}

function call(
  name: string,
  tier: ToolCallGateRequest['tool']['tier'],
  overrides: Partial<ToolCallGateRequest> = {},
): ToolCallGateRequest & { waited: string[] } {
  const waited: string[] = [];
  return {
    tool: { name, tier },
    input: { path: '/x' },
    call: { id: 'call_1' },
    signal: new AbortController().signal,
    handle: { lineage: ['system.agent'] },
    waiting: (id) => void waited.push(id),
    waited,
    ...overrides,
  };
}

/** Resolves with the id of the first pending request, once the gate has written it. */
async function pendingRequest(notes: FileNoteStore): Promise<string> {
  for (let attempt = 0; attempt < 1_000; attempt += 1) {
    const [found] = await listApprovals(notes, { status: 'pending' });
    if (found) return found.id;
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  throw new Error('no pending approval request appeared');
}

describe('createToolCallGate', () => {
  it('runs read-only, soft and allowed tools without asking, and refuses denied ones', async () => {
    const { gate, notes, lines } = setup();
    expect(await gate(call('search', 'read_only'))).toEqual({ run: true });
    expect(await gate(call('propose', 'soft'))).toEqual({ run: true });
    expect(await gate(call('notes_write', 'irreversible'))).toEqual({ run: true });
    const denied = await gate(call('fs__delete', 'read_only'));
    expect(denied).toMatchObject({ run: false, reason: expect.stringContaining('tools.deny lists fs__delete') });
    expect(await listApprovals(notes)).toEqual([]);
    expect(lines).toEqual(['refused a call to fs__delete']);
  });

  it('makes an irreversible call wait for approval, then runs it once', async () => {
    const { gate, notes, lines } = setup();
    const request = call('fs__write', 'irreversible');
    const decision = gate(request);
    const id = await pendingRequest(notes);
    const saved = await readApproval(notes, id);
    expect(saved).toMatchObject({
      kind: 'tool_call',
      status: 'pending',
      actions: [],
      title: 'task task-1 (system.agent)',
      tool_call: { tool: 'fs__write', arguments: '{"path":"/x"}', task: 'task-1', loop: 'system.agent' },
    });
    expect(saved && describeApproval(saved)).toBe('call fs__write {"path":"/x"}');
    expect(request.waited).toEqual([id]);

    const queue = await openFileTaskQueue({ directory: path.join(dir, 'queue') });
    const decided = await decideApproval({ notes, queue, id, decision: 'approve', by: 'cli' });
    expect(decided.enqueued).toBeUndefined();
    expect((await queue.stats()).pending).toBe(0);

    expect(await decision).toEqual({ run: true });
    expect((await readApproval(notes, id))?.tool_ran_at).toEqual(expect.any(String));
    expect(lines[0]).toBe('waits for approval to call fs__write (system.agent)');

    // The loop replayed after a crash asks again for the same call: the same request, and it does not run twice.
    const replayed = call('fs__write', 'irreversible');
    expect(await gate(replayed)).toMatchObject({ run: false, reason: expect.stringContaining('already ran') });
    expect(replayed.waited).toEqual([id]);
    expect(await listApprovals(notes)).toHaveLength(1);
  });

  it('refuses an approved call that does not render to the digest the owner approved, and records why (issue 30)', async () => {
    const { gate, notes, lines } = setup();
    const decision = gate(call('fs__write', 'irreversible', { input: { path: '/etc/passwd' } }));
    const id = await pendingRequest(notes);
    // The note rewritten to show the owner a harmless call, with a digest to match what it shows.
    const shown = renderToolCall({
      tool: 'fs__write',
      tier: 'irreversible',
      loop: 'system.agent',
      task: 'task-1',
      input: { path: '/tmp/harmless' },
    });
    await notes.update(`approvals/${id}.md`, { set: { rendering: shown.rendering, digest: shown.digest } });
    const queue = await openFileTaskQueue({ directory: path.join(dir, 'queue') });
    await decideApproval({ notes, queue, id, decision: 'approve', by: 'cli' });
    expect(await decision).toMatchObject({
      run: false,
      reason: expect.stringMatching(/^refused: the call is not the one approval ap-[0-9a-f]{12} showed the owner/),
    });
    const saved = await readApproval(notes, id);
    expect(saved?.tool_ran_at).toBeUndefined();
    expect(saved?.refusals).toEqual([
      expect.objectContaining({ task: 'task-1', reason: expect.stringContaining('showed the owner') }),
    ]);
    expect(lines).toContain(`refused to call fs__write on approval ${id}`);
  });

  it('asks for a tools.approve pattern even for a read-only tool, and refuses when rejected', async () => {
    const { gate, notes } = setup();
    const decision = gate(call('trigger', 'read_only'));
    const id = await pendingRequest(notes);
    const queue = await openFileTaskQueue({ directory: path.join(dir, 'queue') });
    await decideApproval({ notes, queue, id, decision: 'reject', by: 'cli' });
    expect(await decision).toMatchObject({ run: false, reason: expect.stringContaining('the owner rejected') });
  });

  it('refuses after the timeout and marks the request expired', async () => {
    let nowMs = Date.parse('2025-01-01T00:00:00Z');
    const { gate, notes, lines } = setup({ now: () => nowMs, approvalTimeoutMs: 1_800_000 });
    const decision = gate(call('fs__write', 'irreversible'));
    const id = await pendingRequest(notes);
    nowMs += 1_800_000;
    expect(await decision).toMatchObject({ run: false, reason: expect.stringContaining('no decision within 30m') });
    expect((await readApproval(notes, id))?.status).toBe('expired');
    expect(lines.at(-1)).toContain('dropped call fs__write');
  });

  it('stops waiting when the signal is aborted, withdraws the request, and reopens it when the call is asked again', async () => {
    const { gate, notes, lines } = setup();
    const controller = new AbortController();
    const decision = gate(call('fs__write', 'irreversible', { signal: controller.signal }));
    const id = await pendingRequest(notes);
    controller.abort(new Error('stopped by the owner'));
    await expect(decision).rejects.toThrow('stopped by the owner');
    // Nobody will run the call on it: it leaves the owner's list, saying why, rather than wait there for its expiry.
    expect(await readApproval(notes, id)).toMatchObject({ status: 'expired', decided_by: 'withdrawn' });
    expect(lines.at(-1)).toBe(
      'withdrew call fs__write {"path":"/x"} for task task-1 (system.agent): no loop waits for it any more',
    );
    const queue = await openFileTaskQueue({ directory: path.join(dir, 'queue') });
    await expect(decideApproval({ notes, queue, id, decision: 'approve', by: 'cli' })).rejects.toThrow(
      'was expired already',
    );

    // The same call asked again (a loop replayed with the same call id): the request is pending again, and runs once.
    const again = gate(call('fs__write', 'irreversible'));
    await expect.poll(async () => (await readApproval(notes, id))?.status).toBe('pending');
    const reopened = await readApproval(notes, id);
    expect(reopened?.decided_by).toBeUndefined();
    expect(Date.parse(reopened?.expires_at ?? '')).toBeGreaterThan(Date.now());
    expect((await notes.read(`approvals/${id}.md`))?.body).toContain(`it expires at ${reopened?.expires_at}`);
    expect(lines.at(-1)).toBe('waits for approval again to call fs__write (system.agent)');
    await decideApproval({ notes, queue, id, decision: 'approve', by: 'cli' });
    expect(await again).toEqual({ run: true });
    expect(await listApprovals(notes)).toHaveLength(1);
  });

  it("refuses a waiting call whose request another attempt of its task withdrew, and withdraws only that task's calls", async () => {
    const { gate, notes } = setup();
    const waiting = gate(call('fs__write', 'irreversible'));
    const id = await pendingRequest(notes);
    const other = setup({ task: { id: 'task-2' } });
    const controller = new AbortController();
    const otherDecision = other.gate(call('fs__write', 'irreversible', { signal: controller.signal }));
    await expect.poll(async () => (await listApprovals(notes, { status: 'pending' })).length).toBe(2);

    expect(await withdrawTaskToolCalls({ notes, taskId: 'task-1', why: 'its worker died' })).toEqual([id]);
    expect(await waiting).toMatchObject({ run: false, reason: expect.stringContaining('was withdrawn') });
    // task-2's request is untouched.
    expect((await listApprovals(notes, { status: 'pending' })).map((request) => request.tool_call?.task)).toEqual([
      'task-2',
    ]);
    controller.abort(new Error('done with the test'));
    await expect(otherDecision).rejects.toThrow('done with the test');
  });

  it('gives different calls, loops and tasks different requests', async () => {
    const { gate, notes } = setup();
    const controller = new AbortController();
    const signal = controller.signal;
    const pending = [
      gate(call('fs__write', 'irreversible', { signal })),
      gate(call('fs__write', 'irreversible', { signal, call: { id: 'call_2' } })),
      gate(call('fs__write', 'irreversible', { signal, handle: { lineage: ['system.agent', 'child'] } })),
    ].map((decision) => decision.catch(() => undefined));
    for (let attempt = 0; attempt < 1_000 && (await listApprovals(notes)).length < 3; attempt += 1) {
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    expect(await listApprovals(notes)).toHaveLength(3);
    controller.abort();
    await Promise.all(pending);
  });

  it('lets expireApprovals expire a waiting tool call', async () => {
    const { gate, notes } = setup({ approvalTimeoutMs: 1_000 });
    const decision = gate(call('fs__write', 'irreversible'));
    const id = await pendingRequest(notes);
    expect(await expireApprovals({ notes, nowMs: Date.now() + 2_000 })).toEqual([id]);
    expect(await decision).toMatchObject({ run: false, reason: expect.stringContaining('no decision within 1s') });
  });

  it('keeps the whole of long arguments on the request and in its note, never cut', async () => {
    const { gate, notes } = setup();
    const tail = 'and finally rm -rf the backups';
    const content = `${'x'.repeat(5_000)} ${tail}`;
    const controller = new AbortController();
    const decision = gate(call('fs__write', 'irreversible', { input: { content }, signal: controller.signal }));
    const id = await pendingRequest(notes);
    const saved = await readApproval(notes, id);
    expect(saved?.tool_call?.arguments).toBe(JSON.stringify({ content }));
    expect(saved?.rendering).toContain(`${tail}"\n}`);
    const note = await notes.read(`approvals/${id}.md`);
    expect(note?.body).toContain(`${tail}"\n}`);
    controller.abort();
    await decision.catch(() => undefined);
  });

  it('never runs a call on the approval of another with the same call id but other arguments', async () => {
    // Some model servers reuse call ids or leave them empty: the request is the call's, arguments included.
    const { gate, notes } = setup();
    const first = gate(call('fs__write', 'irreversible', { call: { id: '' } }));
    const id = await pendingRequest(notes);
    const controller = new AbortController();
    const other = gate(
      call('fs__write', 'irreversible', {
        call: { id: '' },
        input: { path: '/etc/passwd' },
        signal: controller.signal,
      }),
    );
    for (let attempt = 0; attempt < 1_000 && (await listApprovals(notes)).length < 2; attempt += 1) {
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    const requests = await listApprovals(notes);
    expect(requests.map((request) => request.tool_call?.arguments).sort()).toEqual([
      '{"path":"/etc/passwd"}',
      '{"path":"/x"}',
    ]);

    const queue = await openFileTaskQueue({ directory: path.join(dir, 'queue') });
    await decideApproval({ notes, queue, id, decision: 'approve', by: 'cli' });
    expect(await first).toEqual({ run: true });
    controller.abort(new Error('stopped'));
    await expect(other).rejects.toThrow('stopped');
    // Never approved by the first's decision: undecided until its loop stopped, which withdrew it.
    const otherId = requests.find((request) => request.id !== id)?.id ?? '';
    expect(await readApproval(notes, otherId)).toMatchObject({ status: 'expired', decided_by: 'withdrawn' });
  });
});
