import { mkdtemp, readFile, rm, unlink, utimes, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { AutomationMatch } from '@assistant/automations';
import { FileNoteStore, type Note } from '@assistant/notes';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createApprovalRequest, listApprovals } from './approvals.ts';
import { ApprovalsIndex } from './approvals-index.ts';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'assistant-approvals-index-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

const match: AutomationMatch = {
  rule: 'cards',
  ruleIndex: 0,
  provenance: 'llm',
  actions: [{ kind: 'platform', name: 'send_card', key: 'send_card', tier: 'irreversible', yolo: false }],
  approval: true,
  reason: 'close >= 0.8',
};

/** A file note store that counts the notes it reads. */
class CountingStore extends FileNoteStore {
  reads: string[] = [];
  override read(notePath: string): Promise<Note | undefined> {
    this.reads.push(notePath);
    return super.read(notePath);
  }
}

async function request(notes: FileNoteStore, name: string): Promise<string> {
  await notes.create(`cards/${name}.md`, { data: { name }, body: `# ${name}\n` }).catch(() => {});
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
  return created.id;
}

/**
 * Sets the approvals folder's mtime to one moment in the past, as when nothing was written to it for a while (the same
 * moment each time: a folder whose mtime did not move).
 */
async function settle(root: string): Promise<void> {
  const past = new Date('2026-01-01T00:00:00Z');
  await utimes(path.join(root, 'approvals'), past, past);
}

describe('ApprovalsIndex: the pending requests', () => {
  it('lists what listApprovals lists, and on an unchanged folder reads only the pending requests’ stats, no note', async () => {
    const notes = new CountingStore({ root: path.join(dir, 'notes') });
    const ids = await Promise.all(['ada', 'bea', 'cy', 'dee'].map((name) => request(notes, name)));
    await notes.update(`approvals/${ids[0]}.md`, { set: { status: 'rejected' } });
    await settle(notes.root);
    const pending = new ApprovalsIndex({ notes, root: notes.root });
    const expected = (await listApprovals(notes, { status: 'pending' })).map((one) => one.id);
    expect(expected).toHaveLength(3);
    notes.reads = [];
    expect((await pending.pending()).map((one) => one.id)).toEqual(expected);
    expect(notes.reads).toHaveLength(4);
    notes.reads = [];
    expect((await pending.pending()).map((one) => one.id)).toEqual(expected);
    expect(notes.reads).toEqual([]);
  });

  it('sees a decision, a new request and a removed one, reading only those and the pending ones', async () => {
    const notes = new CountingStore({ root: path.join(dir, 'notes') });
    const ids = await Promise.all(['ada', 'bea', 'cy'].map((name) => request(notes, name)));
    await notes.update(`approvals/${ids[0]}.md`, { set: { status: 'approved' } });
    const pending = new ApprovalsIndex({ notes, root: notes.root });
    expect((await pending.pending()).map((one) => one.id).sort()).toEqual([ids[1], ids[2]].sort());

    await notes.update(`approvals/${ids[1]}.md`, { set: { status: 'rejected' } });
    const added = await request(notes, 'dee');
    await rm(path.join(notes.root, `approvals/${ids[2]}.md`));
    notes.reads = [];
    expect((await pending.pending()).map((one) => one.id)).toEqual([added]);
    // The decided one and the new one; never the request decided before.
    expect(notes.reads.sort()).toEqual([`approvals/${added}.md`, `approvals/${ids[1]}.md`].sort());
  });

  it('sees an edit in place of a pending request at once, though the folder did not change', async () => {
    const notes = new FileNoteStore({ root: path.join(dir, 'notes') });
    const id = await request(notes, 'ada');
    await settle(notes.root);
    const pending = new ApprovalsIndex({ notes, root: notes.root });
    expect((await pending.pending()).map((one) => one.id)).toEqual([id]);
    const file = path.join(notes.root, `approvals/${id}.md`);
    // An editor that writes the file where it is: the folder's mtime stays.
    await writeFile(file, (await readFile(file, 'utf8')).replace('status: pending', 'status: rejected'));
    await settle(notes.root);
    expect(await pending.pending()).toEqual([]);
  });

  it('sees an edit in place of a decided request at the next full look, and a change right after a listing', async () => {
    const notes = new FileNoteStore({ root: path.join(dir, 'notes') });
    const id = await request(notes, 'ada');
    await notes.update(`approvals/${id}.md`, { set: { status: 'rejected' } });
    await settle(notes.root);
    let now = Date.now();
    const pending = new ApprovalsIndex({ notes, root: notes.root, now: () => now, recheckMs: 60_000 });
    expect(await pending.pending()).toEqual([]);
    const file = path.join(notes.root, `approvals/${id}.md`);
    await writeFile(file, (await readFile(file, 'utf8')).replace('status: rejected', 'status: pending'));
    await settle(notes.root);
    expect(await pending.pending()).toEqual([]);
    now += 60_000;
    expect((await pending.pending()).map((one) => one.id)).toEqual([id]);

    // A request written within the kernel clock's grain of a listing does not hide behind an equal folder mtime:
    // a folder changed less than 2 s before it was listed is listed again.
    const folder = path.join(notes.root, 'approvals');
    const recent = new Date(Date.now() - 500);
    await utimes(folder, recent, recent);
    const fresh = new ApprovalsIndex({ notes, root: notes.root });
    await fresh.pending();
    const later = await request(notes, 'bea');
    await utimes(folder, recent, recent);
    expect((await fresh.pending()).map((one) => one.id)).toContain(later);
  });

  it('reports a broken note once, until it changes', async () => {
    const notes = new FileNoteStore({ root: path.join(dir, 'notes') });
    await request(notes, 'ada');
    await writeFile(path.join(notes.root, 'approvals/ap-broken.md'), '---\nstatus: [unclosed\n---\n');
    const broken: string[] = [];
    const pending = new ApprovalsIndex({ notes, root: notes.root, onBroken: (message) => broken.push(message) });
    expect(await pending.pending()).toHaveLength(1);
    expect(await pending.pending()).toHaveLength(1);
    expect(broken).toHaveLength(1);
    expect(broken[0]).toContain('ap-broken.md');
  });

  it('is empty without an approvals folder, and reads the whole folder through a store without a root', async () => {
    const notes = new FileNoteStore({ root: path.join(dir, 'notes') });
    expect(await new ApprovalsIndex({ notes, root: notes.root }).pending()).toEqual([]);
    const id = await request(notes, 'ada');
    expect((await new ApprovalsIndex({ notes }).pending()).map((one) => one.id)).toEqual([id]);
  });
});

describe('ApprovalsIndex: every request', () => {
  it('lists what listApprovals lists, in its order, and follows changes, deletions and broken notes', async () => {
    const notes = new FileNoteStore({ root: path.join(dir, 'notes') });
    const index = new ApprovalsIndex({ notes, root: notes.root });
    expect(await index.list()).toEqual({ requests: [], broken: [] });
    const ada = await request(notes, 'ada');
    const anne = await request(notes, 'anne');
    const same = async (status?: 'pending' | 'approved') => {
      const broken: string[] = [];
      const expected = await listApprovals(notes, { ...(status ? { status } : {}), onBroken: (m) => broken.push(m) });
      expect(await index.list(status)).toEqual({ requests: expected, broken });
    };
    await same();
    await notes.update(`approvals/${ada}.md`, { set: { status: 'approved', decided_by: 'test' } });
    await same('pending');
    await same('approved');
    await writeFile(path.join(notes.root, 'approvals/ap-000000000000.md'), '---\nid: [\n---\n');
    await notes.create('approvals/notes-by-hand.md', { data: { title: 'not a request' } });
    await same();
    expect((await index.list()).broken).toHaveLength(2);
    await unlink(path.join(notes.root, `approvals/${anne}.md`));
    await same();
    expect((await index.list()).requests.map((one) => one.id)).toEqual([ada]);
  });

  it('sees a decided request change after a pending pass listed the folder, and skips unchanged notes', async () => {
    const notes = new CountingStore({ root: path.join(dir, 'notes') });
    const [ada, bea] = await Promise.all(['ada', 'bea'].map((name) => request(notes, name)));
    await notes.update(`approvals/${ada}.md`, { set: { status: 'approved' } });
    await settle(notes.root);
    const index = new ApprovalsIndex({ notes, root: notes.root });
    expect((await index.list()).requests).toHaveLength(2);
    // What became of the approved action is written to its note: a pending pass lists the folder and, rightly, does
    // not read the decided note; the full list that follows still must. (Both folder times settled, so each listing
    // is trusted.)
    await notes.update(`approvals/${ada}.md`, { set: { outcome: 'done' } });
    const later = new Date('2026-02-01T00:00:00Z');
    await utimes(path.join(notes.root, 'approvals'), later, later);
    expect((await index.pending()).map((one) => one.id)).toEqual([bea]);
    notes.reads = [];
    const all = await index.list();
    expect(all.requests.find((one) => one.id === ada)?.outcome).toBe('done');
    expect(notes.reads).toEqual([`approvals/${ada}.md`]);
    await settle(notes.root);
    await index.list();
    notes.reads = [];
    await index.list();
    await index.pending();
    expect(notes.reads).toEqual([]);
  });
});
