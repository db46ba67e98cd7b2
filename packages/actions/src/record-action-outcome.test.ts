import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { ResolvedAction } from '@assistant/automations';
import { AssistantError } from '@assistant/errors';
import { FileHumanLog, FileNoteStore } from '@assistant/notes';
import { openFileTaskQueue, UnrecoverableError } from '@assistant/queue';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { decideApproval } from './approval-decisions.ts';
import { createApprovalRequest, readApproval } from './approvals.ts';
import { actionFailureOf, recordActionOutcome } from './record-action-outcome.ts';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'assistant-outcome-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

const sendCard: ResolvedAction = {
  kind: 'platform',
  name: 'send_card',
  key: 'send_card',
  tier: 'irreversible',
  yolo: false,
};

/** An approved request for a card to Ada, its act task enqueued; returns the task as the worker would run it. */
async function approvedAct() {
  const notes = new FileNoteStore({ root: path.join(dir, 'notes') });
  const humanLog = new FileHumanLog({ directory: path.join(dir, 'logs') });
  const queue = await openFileTaskQueue({ directory: path.join(dir, 'queue') });
  await notes.create('greeter/friendly/ada.md', { data: { title: 'Ada' }, body: '' });
  const request = await createApprovalRequest({
    notes,
    instance: 'friendly',
    domain: 'greeter',
    platform: 'cards',
    notePath: 'greeter/friendly/ada.md',
    title: 'Ada',
    match: { rule: 'cards', ruleIndex: 0, provenance: 'llm', actions: [sendCard], approval: true, reason: 'close' },
    expiresMs: 60_000,
    nowMs: Date.now(),
  });
  const decided = await decideApproval({ notes, queue, humanLog, id: request.id, decision: 'approve', by: 'cli' });
  const taskId = decided.enqueued?.[0]?.task;
  const task = taskId === undefined ? undefined : (await queue.get(taskId))?.task;
  if (!task) throw new Error('no act task');
  const log = async () => readFile(humanLog.fileFor(new Date()), 'utf8');
  return { notes, humanLog, task, id: request.id, log };
}

describe('recordActionOutcome', () => {
  it('writes a FAILED line with the code and message, and the outcome on the approval', async () => {
    const { notes, humanLog, task, id, log } = await approvedAct();
    await recordActionOutcome({
      notes,
      humanLog,
      task,
      outcome: 'failed',
      failure: actionFailureOf(new UnrecoverableError('the card printer is out of ink')),
    });
    expect(await log()).toMatch(/decided: send_card for Ada \(approved/);
    expect(await log()).toMatch(
      /\*\*friendly\/cards\*\* FAILED: send_card for "Ada": UnrecoverableError: the card printer is out of ink \(task \w+; rule "cards", approved \(ap-/,
    );
    expect(await readApproval(notes, id)).toMatchObject({
      outcome: 'failed',
      outcome_reason: 'UnrecoverableError: the card printer is out of ink',
      outcome_task: task.id,
    });
  });

  it("keeps another task's failure when a later task is done, and lets a task retried by hand replace its own", async () => {
    const { notes, humanLog, task, id } = await approvedAct();
    const failure = { code: 'ECONNREFUSED', message: 'down' };
    await recordActionOutcome({ notes, humanLog, task, outcome: 'failed', failure });
    await recordActionOutcome({ notes, humanLog, task: { ...task, id: 'another' }, outcome: 'done' });
    expect(await readApproval(notes, id)).toMatchObject({ outcome: 'failed', outcome_reason: 'ECONNREFUSED: down' });
    await recordActionOutcome({ notes, humanLog, task, outcome: 'done' });
    const after = await readApproval(notes, id);
    expect(after).toMatchObject({ outcome: 'done', outcome_task: task.id });
    expect(after?.outcome_reason).toBeUndefined();
  });

  it('leaves the log alone when told the failure has its own line, and ignores tasks that take no action', async () => {
    const { notes, humanLog, task, id, log } = await approvedAct();
    const failure = { code: 'ActRefusedError', message: 'refused' };
    await recordActionOutcome({ notes, humanLog, task, outcome: 'failed', failure, logFailure: false });
    expect(await log()).not.toMatch(/FAILED/);
    expect(await readApproval(notes, id)).toMatchObject({ outcome: 'failed' });
    const before = await log();
    await recordActionOutcome({
      notes,
      humanLog,
      task: { id: 'x', type: 'greeter.cards.check', payload: null, integration: 'friendly' },
      outcome: 'failed',
      failure,
    });
    expect(await log()).toBe(before);
  });
});

describe('actionFailureOf', () => {
  it('takes the first code along the cause chain, else the type, and cuts a long message', () => {
    const wrapped = new UnrecoverableError('sending failed', {
      cause: Object.assign(new Error('connect'), { code: 'ECONNREFUSED' }),
    });
    expect(actionFailureOf(wrapped)).toEqual({ code: 'ECONNREFUSED', message: 'sending failed' });
    expect(actionFailureOf(new AssistantError('CONFLICT', 'taken'))).toEqual({ code: 'CONFLICT', message: 'taken' });
    const long = actionFailureOf(new Error(`a\n${'b'.repeat(500)}`));
    expect(long.code).toBe('Error');
    expect(long.message).toHaveLength(200);
    expect(long.message.endsWith('…')).toBe(true);
  });
});
