import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { FileNoteStore } from '@assistant/notes';
import { describe, expect, it } from 'vitest';
import { ItemSubjects, itemNoteOfTask, payloadPreview, renderItemSubject, subjectOfNote } from './item-subjects.ts';
import { markFailuresSeen, readFailuresSeenUntil, seenFile } from './seen-failures.ts';

describe('itemNoteOfTask', () => {
  it('finds the item in the fields the pipeline writes, and nothing outside the notes folder', () => {
    expect(itemNoteOfTask({ payload: { note: 'email/inbox/1-2.md' } })).toBe('email/inbox/1-2.md');
    expect(itemNoteOfTask({ payload: { item: 'github/gh/a/b/1.md', actions: [] } })).toBe('github/gh/a/b/1.md');
    expect(itemNoteOfTask({ payload: { script: 'x', requested_by: { item: 'email/inbox/3.md' } } })).toBe(
      'email/inbox/3.md',
    );
    expect(itemNoteOfTask({ payload: { inputs: {} }, onResult: { requested_by: { item: 'email/inbox/4.md' } } })).toBe(
      'email/inbox/4.md',
    );
    expect(itemNoteOfTask({ payload: { uid: 5, uid_validity: 'v' }, result: { note: 'email/inbox/v-5.md' } })).toBe(
      'email/inbox/v-5.md',
    );
    expect(itemNoteOfTask({ payload: { uid: 5, uid_validity: 'v' } })).toBeUndefined();
    for (const hostile of ['../secrets.md', '/etc/passwd.md', 'a/../../b.md', 'a\\b.md', 'notes.txt']) {
      expect(itemNoteOfTask({ payload: { note: hostile } })).toBeUndefined();
    }
  });
});

describe('subjects', () => {
  it('names a mail by subject and sender, a pull request by repository, number, title and author', () => {
    expect(subjectOfNote('e.md', { subject: 'Lunch?', from: 'Ada <ada@example.com>' })).toMatchObject({
      subject: 'Lunch?',
      sender: 'Ada <ada@example.com>',
    });
    expect(subjectOfNote('g.md', { title: 'Fix it', author: 'octocat', repo: 'o/r', number: 12 })).toMatchObject({
      subject: 'Fix it',
      sender: '@octocat',
      where: 'o/r#12',
    });
    const rendered = renderItemSubject(subjectOfNote('e.md', { subject: '<img src=x onerror=alert(1)>' })).toString();
    expect(rendered).toContain('&lt;img src=x onerror=alert(1)&gt;');
    expect(rendered).not.toContain('<img');
  });

  it('previews a task without an item by its data, secrets aside', () => {
    expect(payloadPreview({ ms: 60000, marker: 'x' })).toBe('ms: 60000, marker: "x"');
    expect(payloadPreview({ text: 'a'.repeat(500) }).length).toBeLessThanOrEqual(121);
    expect(payloadPreview(undefined)).toBe('');
  });

  it('reads a note again only when it changed', async () => {
    const root = await mkdtemp(path.join(tmpdir(), 'item-subjects-'));
    try {
      const notes = new FileNoteStore({ root });
      await notes.create('email/inbox/1.md', { data: { subject: 'First' }, body: 'x\n' });
      const subjects = new ItemSubjects(notes);
      expect((await subjects.lookup(['email/inbox/1.md'])).get('email/inbox/1.md')?.subject).toBe('First');
      await notes.update('email/inbox/1.md', { set: { subject: 'Second, longer' } });
      expect((await subjects.lookup(['email/inbox/1.md'])).get('email/inbox/1.md')?.subject).toBe('Second, longer');
      expect((await subjects.lookup(['email/inbox/gone.md'])).get('email/inbox/gone.md')).toBeUndefined();
    } finally {
      await rm(root, { recursive: true, force: true });
    }
  });
});

describe('failures seen', () => {
  it('remembers until when failures were seen, never moving back, and reads a broken file as never', async () => {
    const dataDir = await mkdtemp(path.join(tmpdir(), 'seen-'));
    try {
      expect(await readFailuresSeenUntil(dataDir)).toBe(0);
      await markFailuresSeen({ dataDir, untilMs: 2_000_000 });
      await markFailuresSeen({ dataDir, untilMs: 1_000_000 });
      expect(await readFailuresSeenUntil(dataDir)).toBe(2_000_000);
      await writeFile(seenFile(dataDir), 'not json');
      expect(await readFailuresSeenUntil(dataDir)).toBe(0);
    } finally {
      await rm(dataDir, { recursive: true, force: true });
    }
  });
});
