import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { FileNoteStore } from '@assistant/notes';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { EventLedger } from './event-ledger.ts';
import { EventingNoteStore } from './eventing-note-store.ts';

let root: string;
beforeEach(async () => {
  root = await mkdtemp(path.join(tmpdir(), 'eventing-notes-'));
});
afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

describe('EventingNoteStore', () => {
  it('reports notes created and changed, and approval requests made and decided, each once', async () => {
    const ledger = new EventLedger({ directory: path.join(root, 'events') });
    const notes = new EventingNoteStore({
      notes: new FileNoteStore({ root: path.join(root, 'notes') }),
      events: ledger,
      source: 'notes',
    });
    expect(notes.root).toBe(path.join(root, 'notes'));
    await notes.create('people/ada.md', { data: { name: 'Ada' } });
    await notes.update('people/ada.md', { set: { birthday: '12-10' } });
    await notes.create('approvals/ap-0123456789ab.md', {
      data: { id: 'ap-0123456789ab', kind: 'hook', status: 'pending' },
    });
    await notes.update('approvals/ap-0123456789ab.md', { set: { decided_by: 'cli' } });
    await notes.update('approvals/ap-0123456789ab.md', { set: { status: 'approved' } });
    await notes.update('approvals/ap-0123456789ab.md', { set: { outcome: 'done' } });
    const events = (await ledger.list()).events.map((event) => [event.type, event.data]);
    expect(events).toEqual([
      ['note.created', { path: 'people/ada.md', folder: 'people' }],
      ['note.changed', { path: 'people/ada.md', folder: 'people', keys: ['birthday'] }],
      ['note.created', { path: 'approvals/ap-0123456789ab.md', folder: 'approvals' }],
      ['approval.requested', { approval: 'ap-0123456789ab', kind: 'hook' }],
      ['note.changed', { path: 'approvals/ap-0123456789ab.md', folder: 'approvals', keys: ['decided_by'] }],
      ['note.changed', { path: 'approvals/ap-0123456789ab.md', folder: 'approvals', keys: ['status'] }],
      ['approval.decided', { approval: 'ap-0123456789ab', decision: 'approved', kind: 'hook' }],
      ['note.changed', { path: 'approvals/ap-0123456789ab.md', folder: 'approvals', keys: ['outcome'] }],
    ]);
    expect((await ledger.list()).events.every((event) => event.problem === undefined)).toBe(true);
  });
});
