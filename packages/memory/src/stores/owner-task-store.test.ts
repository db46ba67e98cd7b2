import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { FileNoteStore } from '@assistant/notes';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { guidanceStore } from './guidance-store.ts';
import { type OwnerTaskStore, ownerTaskStore } from './owner-task-store.ts';

let root: string;
let notes: FileNoteStore;
let tasks: OwnerTaskStore;

beforeEach(async () => {
  root = await mkdtemp(path.join(os.tmpdir(), 'assistant-tasks-'));
  notes = new FileNoteStore({ root });
  tasks = ownerTaskStore({ notes });
});
afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

describe('OwnerTaskStore', () => {
  it('refuses a due date that is neither YYYY-MM-DD nor an ISO instant, naming what it got', async () => {
    for (const due of ['next monday', '2026-02-30', '2026-12-01 09:00']) {
      await expect(tasks.add({ title: 'Answer Bob', due, createdBy: 'owner' })).rejects.toMatchObject({
        code: 'MEMORY_INPUT_INVALID',
        message: expect.stringContaining(JSON.stringify(due)),
      });
    }
    expect(await notes.list('tasks')).toEqual([]);
    const ok = await tasks.add({ title: 'Answer Bob', due: '2026-12-01T09:00:00+01:00', createdBy: 'owner' });
    expect(ok.due).toBe('2026-12-01T09:00:00+01:00');
  });

  it('is idempotent for extraction and never changes what the owner set on the task', async () => {
    const task = { title: 'Answer Bob about the offer', due: '2026-12-07', source: 'email/i/3.md' };
    const first = await tasks.add({ ...task, createdBy: 'extraction' });
    expect(first).toMatchObject({ status: 'open', created_by: 'extraction', due: '2026-12-07' });
    await tasks.update(first.id, { status: 'done', due: '2026-12-09' });
    const again = await tasks.add({ ...task, createdBy: 'extraction' });
    expect(again).toMatchObject({ id: first.id, status: 'done', due: '2026-12-09' });
    expect(await notes.list('tasks')).toEqual([first.path]);
  });

  it('lists by status and due date, soonest first', async () => {
    const late = await tasks.add({ title: 'Late', due: '2026-12-20', createdBy: 'owner' });
    const soon = await tasks.add({ title: 'Soon', due: '2026-12-01', createdBy: 'chat' });
    const undated = await tasks.add({ title: 'Someday', createdBy: 'owner' });
    await tasks.update(late.id, { status: 'dropped' });
    expect((await tasks.list()).tasks.map((task) => task.id)).toEqual([soon.id, late.id, undated.id]);
    expect((await tasks.list({ status: 'open' })).tasks.map((task) => task.id)).toEqual([soon.id, undated.id]);
    expect((await tasks.list({ dueBefore: '2026-12-02' })).tasks.map((task) => task.id)).toEqual([soon.id]);
    await expect(tasks.list({ dueBefore: 'soon' })).rejects.toMatchObject({ code: 'MEMORY_INPUT_INVALID' });
  });

  it('updates only the keys given and removes a due date with null', async () => {
    const task = await tasks.add({
      title: 'Call the dentist',
      due: '2026-12-01',
      createdBy: 'owner',
      body: 'Ask for Friday.',
    });
    const updated = await tasks.update(task.id, { due: null, title: 'Call the dentist back' });
    expect(updated.due).toBeUndefined();
    expect(updated.title).toBe('Call the dentist back');
    expect(await readFile(path.join(root, task.path), 'utf8')).toContain('Ask for Friday.');
    await expect(tasks.update('t-missing', { status: 'done' })).rejects.toMatchObject({ code: 'MEMORY_NOT_FOUND' });
  });
});

describe('GuidanceStore', () => {
  it('reads guidance notes, with the title from frontmatter or the first heading', async () => {
    await notes.create('guidance/recruiters.md', {
      data: { applies_to: 'recruiters' },
      body: '# How I answer recruiters\n\nPolitely, and not before Monday.\n',
    });
    const guidance = guidanceStore({ notes });
    expect(await guidance.get('recruiters')).toMatchObject({
      name: 'recruiters',
      title: 'How I answer recruiters',
      applies_to: ['recruiters'],
    });
    expect((await guidance.list()).guidance).toHaveLength(1);
  });
});
