import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { AutomationMatch, ResolvedAction } from '@assistant/automations';
import { FileNoteStore } from '@assistant/notes';
import { openFileTaskQueue } from '@assistant/queue';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createApprovalRequest, readApproval } from './approvals.ts';
import { decideApprovals } from './decide-approvals.ts';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'assistant-decide-approvals-'));
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
const match: AutomationMatch = {
  rule: 'cards',
  ruleIndex: 0,
  provenance: 'llm',
  actions: [sendCard],
  approval: true,
  reason: 'close >= 0.8',
};

async function setup() {
  const notes = new FileNoteStore({ root: path.join(dir, 'notes') });
  const queue = await openFileTaskQueue({ directory: path.join(dir, 'queue') });
  const requests = [];
  for (const name of ['ada', 'bea', 'cy']) {
    await notes.create(`cards/${name}.md`, { data: { name }, body: `# ${name}\n` });
    const created = await createApprovalRequest({
      notes,
      instance: 'friendly',
      domain: 'greeter',
      platform: 'cards',
      notePath: `cards/${name}.md`,
      title: name,
      match,
      expiresMs: 60_000,
      nowMs: Date.now(),
    });
    const request = await readApproval(notes, created.id);
    requests.push({ id: created.id, digest: request?.digest ?? '' });
  }
  return { notes, queue, requests };
}

describe('decideApprovals', () => {
  it('decides each request shown with its digest, and refuses alone, with why, one whose digest is not the one shown', async () => {
    const { notes, queue, requests } = await setup();
    const [ada, bea, cy] = requests as [(typeof requests)[0], (typeof requests)[0], (typeof requests)[0]];
    const stale = `sha256:${'0'.repeat(64)}`;
    const result = await decideApprovals({
      notes,
      queue,
      decision: 'approve',
      by: 'dashboard',
      approvals: [ada, { id: bea.id, digest: stale }, cy, ada],
    });
    expect(result.decided.map((decided) => [decided.id, decided.status])).toEqual([
      [ada.id, 'approved'],
      [cy.id, 'approved'],
    ]);
    expect(result.refused).toEqual([
      {
        id: bea.id,
        reason: `approval ${bea.id} is not what was shown: it was shown as ${stale}, it is now ${bea.digest}; nothing was decided, look at it again`,
      },
    ]);
    // The refused one is left pending; the others enqueued their action once each (the repeated id is decided once).
    expect((await readApproval(notes, bea.id))?.status).toBe('pending');
    expect(await queue.list({ state: 'pending' })).toHaveLength(2);
  });

  it('refuses a request decided already, and one that is not an approval id, and goes on with the rest', async () => {
    const { notes, queue, requests } = await setup();
    const [ada, bea] = requests as [(typeof requests)[0], (typeof requests)[0]];
    await decideApprovals({ notes, queue, decision: 'reject', by: 'cli', approvals: [ada] });
    const result = await decideApprovals({
      notes,
      queue,
      decision: 'reject',
      by: 'api',
      approvals: [ada, { id: 'ap-nothex', digest: '' }, bea],
    });
    expect(result.decided).toEqual([{ id: bea.id, status: 'rejected', tasks: [] }]);
    expect(result.refused.map((refused) => refused.id)).toEqual([ada.id, 'ap-nothex']);
    expect(result.refused[0]?.reason).toMatch(/was rejected already/);
    expect(result.refused[1]?.reason).toMatch(/is not an approval id/);
  });
});
