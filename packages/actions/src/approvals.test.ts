import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { AutomationMatch, ResolvedAction } from '@assistant/automations';
import { isAssistantError } from '@assistant/errors';
import { FileNoteStore } from '@assistant/notes';
import { openFileTaskQueue } from '@assistant/queue';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { decideApproval } from './approval-decisions.ts';
import { createApprovalRequest } from './approvals.ts';
import { enqueueActions } from './enqueue-actions.ts';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'assistant-approvals-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function setup() {
  const notes = new FileNoteStore({ root: path.join(dir, 'notes') });
  const queue = await openFileTaskQueue({ directory: path.join(dir, 'queue') });
  await notes.create('cards/ada.md', { data: { name: 'Ada' }, body: '# Ada\n' });
  return { notes, queue };
}

const sendCard: ResolvedAction = {
  kind: 'platform',
  name: 'send_card',
  key: 'send_card',
  tier: 'irreversible',
  yolo: false,
};
const hug: ResolvedAction = { kind: 'platform', name: 'hug', key: 'hug', tier: 'soft', yolo: false };

function match(actions: ResolvedAction[], provenance: AutomationMatch['provenance'] = 'llm'): AutomationMatch {
  return { rule: 'cards', ruleIndex: 0, provenance, actions, approval: provenance !== 'rule', reason: 'close >= 0.8' };
}

const base = {
  instance: 'friendly',
  domain: 'greeter',
  platform: 'cards',
  notePath: 'cards/ada.md',
  approvalExpiresMs: 60_000,
};

describe('decideApproval', () => {
  it('hole 11: of many concurrent approvals of one request exactly one succeeds, the rest get CONFLICT, actions enqueued once', async () => {
    const { notes, queue } = await setup();
    const request = await createApprovalRequest({
      notes,
      instance: 'friendly',
      domain: 'greeter',
      platform: 'cards',
      notePath: 'cards/ada.md',
      title: 'Ada',
      match: match([sendCard, hug]),
      expiresMs: 60_000,
      nowMs: Date.now(),
    });
    const deciders = Array.from({ length: 12 }, (_unused, index) =>
      decideApproval({ notes, queue, id: request.id, decision: 'approve', by: `person-${index}` }),
    );
    const outcomes = await Promise.allSettled(deciders);
    const won = outcomes.filter((outcome) => outcome.status === 'fulfilled');
    const lost = outcomes.filter((outcome) => outcome.status === 'rejected');
    expect(won).toHaveLength(1);
    expect(lost.every((outcome) => isAssistantError(outcome.reason, 'CONFLICT'))).toBe(true);
    const winner = won[0]?.status === 'fulfilled' ? won[0].value.request.decided_by : undefined;
    expect((await notes.read(request.path))?.data).toMatchObject({ status: 'approved', decided_by: winner });
    expect(await queue.list({ state: 'pending' })).toHaveLength(1);
    const item = await notes.read('cards/ada.md');
    expect(((item?.data.actions_taken ?? []) as { action: string }[]).map((entry) => entry.action)).toEqual([
      'send_card',
      'hug',
    ]);
  });

  it('hole 11: a rejection racing an approval: one decision wins and is the one on the note', async () => {
    const { notes, queue } = await setup();
    const request = await createApprovalRequest({
      notes,
      ...base,
      title: 'Ada',
      match: match([sendCard]),
      expiresMs: 60_000,
      nowMs: Date.now(),
    });
    const outcomes = await Promise.allSettled([
      decideApproval({ notes, queue, id: request.id, decision: 'reject', by: 'a' }),
      decideApproval({ notes, queue, id: request.id, decision: 'approve', by: 'b' }),
      decideApproval({ notes, queue, id: request.id, decision: 'reject', by: 'c' }),
    ]);
    const won = outcomes.flatMap((outcome) => (outcome.status === 'fulfilled' ? [outcome.value.request] : []));
    expect(won).toHaveLength(1);
    const note = await notes.read(request.path);
    expect(note?.data).toMatchObject({ status: won[0]?.status, decided_by: won[0]?.decided_by });
    expect(await queue.list({ state: 'pending' })).toHaveLength(won[0]?.status === 'approved' ? 1 : 0);
  });
});

describe('enqueueActions', () => {
  it('hole 11: concurrent enqueues of the same actions for one item record and enqueue each action once', async () => {
    const { notes, queue } = await setup();
    const results = await Promise.all(
      Array.from({ length: 8 }, () => enqueueActions({ ...base, notes, queue, matches: [match([hug], 'rule')] })),
    );
    expect(results.flatMap((result) => result.enqueued)).toHaveLength(1);
    const item = await notes.read('cards/ada.md');
    expect(item?.data.actions_taken).toEqual([
      expect.objectContaining({ action: 'hug', task: results.flatMap((result) => result.enqueued)[0]?.task }),
    ]);
  });

  it('hole 14: an action listed twice in one rule is planned, recorded and enqueued once', async () => {
    const { notes, queue } = await setup();
    const result = await enqueueActions({ ...base, notes, queue, matches: [match([hug, hug], 'rule')] });
    expect(result.enqueued.map((entry) => entry.key)).toEqual(['hug']);
    const [entry] = await queue.list({ state: 'pending' });
    const task = entry ? (await queue.get(entry.name?.id ?? ''))?.task : undefined;
    expect((task?.payload as { actions?: unknown[] } | undefined)?.actions).toHaveLength(1);
    expect((await notes.read('cards/ada.md'))?.data.actions_taken).toHaveLength(1);
  });
});
