import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { FileNoteStore } from '@assistant/notes';
import { RetryableError, UnrecoverableError } from '@assistant/queue';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ActionNotTakenError, runActionOnce } from './run-action-once.ts';

let dir: string;
let notes: FileNoteStore;
beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'assistant-once-'));
  notes = new FileNoteStore({ root: dir });
  await notes.create('item.md', { data: { subject: 'Letters' } });
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('runActionOnce', () => {
  it('hole 14: of many concurrent runs of one action on one item, exactly one calls the action', async () => {
    let calls = 0;
    const results = await Promise.all(
      Array.from({ length: 10 }, (_unused, index) =>
        runActionOnce({ notes, notePath: 'item.md', key: 'unsubscribe', task: `task-${index}` }, async () => {
          calls += 1;
          return 'done';
        }),
      ),
    );
    expect(calls).toBe(1);
    expect(results.filter((result) => result.ran)).toHaveLength(1);
    const started = (await notes.read('item.md'))?.data.actions_started;
    expect(started).toEqual([{ action: 'unsubscribe', task: expect.stringMatching(/^task-/), at: expect.any(String) }]);
  });

  it('keeps a failed action recorded, says so on the note, and fails without retries', async () => {
    const failed = runActionOnce({ notes, notePath: 'item.md', key: 'send_reply', task: 't1' }, async () => {
      throw new Error('SMTP timed out after DATA');
    });
    await expect(failed).rejects.toBeInstanceOf(UnrecoverableError);
    await expect(failed).rejects.toThrow(/may have happened anyway/);
    expect((await notes.read('item.md'))?.data.actions_started).toEqual([
      expect.objectContaining({ action: 'send_reply', task: 't1', error: 'SMTP timed out after DATA' }),
    ]);
    const again = await runActionOnce({ notes, notePath: 'item.md', key: 'send_reply', task: 't2' }, async () => 1);
    expect(again).toMatchObject({ ran: false, task: 't1' });
  });

  it('forgets an action that certainly did not happen, so the retry of its task takes it', async () => {
    const outage = runActionOnce({ notes, notePath: 'item.md', key: 'send_reply', task: 't1' }, async () => {
      throw new ActionNotTakenError('SMTP refused the connection');
    });
    // Retryable: the worker puts the task back for after its backoff instead of failing it for good.
    await expect(outage).rejects.toBeInstanceOf(RetryableError);
    await expect(outage).rejects.not.toBeInstanceOf(UnrecoverableError);
    expect((await notes.read('item.md'))?.data.actions_started).toEqual([]);
    const retried = await runActionOnce(
      { notes, notePath: 'item.md', key: 'send_reply', task: 't1' },
      async () => 'sent',
    );
    expect(retried).toEqual({ ran: true, value: 'sent' });
    expect((await notes.read('item.md'))?.data.actions_started).toEqual([
      expect.objectContaining({ action: 'send_reply', task: 't1' }),
    ]);
  });
});
