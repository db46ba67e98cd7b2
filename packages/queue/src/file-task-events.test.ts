import { type FSWatcher, watch } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FileTaskEvents } from './file-task-events.ts';
import { FileTaskQueue } from './file-task-queue.ts';
import type { TaskEvent } from './interfaces.ts';

let directory: string;
let events: FileTaskEvents | undefined;

beforeEach(async () => {
  directory = await mkdtemp(path.join(os.tmpdir(), 'assistant-events-'));
});
afterEach(async () => {
  await events?.close();
  events = undefined;
  await rm(directory, { recursive: true, force: true });
});

async function waitForEvent(seen: TaskEvent[], what: string, match: (event: TaskEvent) => boolean) {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const found = seen.find(match);
    if (found) return found;
    if (Date.now() > deadline) throw new Error(`waited 10 s for ${what}; saw ${JSON.stringify(seen)}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** Runs a task through added → claimed → completed and checks the stream reports each state it stays in. */
async function expectEveryState(queue: FileTaskQueue, stream: FileTaskEvents): Promise<void> {
  const seen: TaskEvent[] = [];
  stream.subscribe((event) => seen.push(event));
  const outcome = await queue.enqueue({ type: 'events.poll' });
  if (outcome.status !== 'enqueued') throw new Error('not enqueued');
  const id = outcome.task.id;
  await waitForEvent(seen, 'the added event', (event) => event.id === id && event.kind === 'added');
  const consumer = queue.consumer({ pollIntervalMs: 20 });
  try {
    await consumer.start();
    const claimed = await consumer.claim();
    if (!claimed) throw new Error('nothing claimed');
    await waitForEvent(seen, 'the claimed event', (event) => event.id === id && event.kind === 'claimed');
    await consumer.complete(claimed, 'ok');
  } finally {
    await consumer.close();
  }
  await waitForEvent(seen, 'the completed event', (event) => event.id === id && event.kind === 'completed');
}

describe('FileTaskEvents without a working watcher', () => {
  it('lists the directories instead when its watchers fail, so a subscriber without a poll of its own still hears', async () => {
    const queue = await FileTaskQueue.open({ directory: path.join(directory, 'queue') });
    const failing: FSWatcher[] = [];
    events = new FileTaskEvents(queue.paths, {
      pollIntervalMs: 20,
      watch: (watched, listener) => {
        const watcher = watch(watched, listener);
        failing.push(watcher);
        // As a watcher on a network filesystem or past the inotify limit does, a moment after it started.
        setImmediate(() => watcher.emit('error', new Error('watching failed')));
        return watcher;
      },
    });
    await expectEveryState(queue, events);
    expect(failing).toHaveLength(4);
  });

  it('lists the directories when a watcher cannot start at all', async () => {
    const queue = await FileTaskQueue.open({ directory: path.join(directory, 'queue') });
    events = new FileTaskEvents(queue.paths, {
      pollIntervalMs: 20,
      watch: () => {
        throw Object.assign(new Error('too many open files'), { code: 'EMFILE' });
      },
    });
    await expectEveryState(queue, events);
  });
});
