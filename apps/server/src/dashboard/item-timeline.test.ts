import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { openFileTaskQueue } from '@assistant/queue';
import { describe, expect, it } from 'vitest';
import { ItemTimelineIndex } from './item-timeline.ts';

describe('ItemTimelineIndex', () => {
  it('finds the tasks about an item, follows removals, and reads a task again only when it moved', async () => {
    const root = await mkdtemp(path.join(tmpdir(), 'item-timeline-'));
    const queue = await openFileTaskQueue({ directory: path.join(root, 'queue'), dataDirectory: root });
    try {
      const enqueue = async (type: string, payload: Record<string, unknown>) => {
        const outcome = await queue.enqueue({ type, payload: payload as never, integration: 'inbox' });
        if (outcome.status !== 'enqueued') throw new Error(outcome.status);
        return outcome.task.id;
      };
      await enqueue('email.inbox.check', {});
      const classify = await enqueue('email.inbox.classify', { note: 'email/inbox/1.md' });
      const act = await enqueue('email.inbox.act', { item: 'email/inbox/1.md', actions: [] });
      await enqueue('email.inbox.classify', { note: 'email/inbox/2.md' });
      await enqueue('email.inbox.classify', { note: '../outside.md' });
      const index = new ItemTimelineIndex(() => queue);
      await index.refresh();
      expect(index.ready).toBe(true);
      expect(index.tasksOf('email/inbox/1.md').map((task) => task.id)).toEqual([classify, act]);
      expect(index.tasksOf('email/inbox/2.md')).toHaveLength(1);
      expect(index.tasksOf('../outside.md')).toEqual([]);
      await queue.remove(act);
      await index.refresh();
      expect(index.tasksOf('email/inbox/1.md').map((task) => task.id)).toEqual([classify]);
      // Nothing moved: the pass reads no task file.
      await index.refresh();
      expect(index.progress).toEqual({ read: 0, toRead: 0 });
    } finally {
      await queue.close();
      await rm(root, { recursive: true, force: true });
    }
  });
});
