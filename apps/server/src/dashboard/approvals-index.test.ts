import { mkdtemp, rm, unlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { createApprovalRequest, listApprovals } from '@assistant/actions';
import { FileNoteStore } from '@assistant/notes';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ApprovalsIndex } from './approvals-index.ts';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'assistant-approvals-index-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

const ask = (notes: FileNoteStore, name: string, nowMs: number) =>
  createApprovalRequest({
    notes,
    instance: 'friendly',
    domain: 'greeter',
    platform: 'cards',
    notePath: `greeter/friendly/${name}.md`,
    title: name,
    expiresMs: 60_000,
    nowMs,
    match: {
      rule: 'cards',
      ruleIndex: 0,
      provenance: 'llm',
      approval: true,
      reason: 'close >= 0.8',
      actions: [{ kind: 'platform', name: 'send_card', key: 'send_card', tier: 'irreversible', yolo: false }],
    },
  });

describe('ApprovalsIndex', () => {
  it('lists what listApprovals lists, in its order, and follows changes, deletions and broken notes', async () => {
    const notes = new FileNoteStore({ root: dir });
    const index = new ApprovalsIndex(notes);
    expect(await index.list(undefined)).toEqual({ requests: [], broken: [] });
    const ada = await ask(notes, 'ada', 1_000);
    const anne = await ask(notes, 'anne', 2_000);
    const same = async (status: 'pending' | 'approved' | undefined) => {
      const broken: string[] = [];
      const expected = await listApprovals(notes, { ...(status ? { status } : {}), onBroken: (m) => broken.push(m) });
      expect(await index.list(status)).toEqual({ requests: expected, broken });
    };
    await same(undefined);
    expect((await index.list(undefined)).requests.map((request) => request.title)).toEqual(['anne', 'ada']);
    await notes.update(ada.path, { set: { status: 'approved', decided_by: 'test' } });
    await same('pending');
    await same('approved');
    await writeFile(path.join(dir, 'approvals/ap-000000000000.md'), '---\nid: [\n---\n');
    await notes.create('approvals/notes-by-hand.md', { data: { title: 'not a request' } });
    await same(undefined);
    expect((await index.list(undefined)).broken).toHaveLength(2);
    await unlink(path.join(dir, anne.path));
    await same(undefined);
    expect((await index.list(undefined)).requests.map((request) => request.title)).toEqual(['ada']);
  });
});
