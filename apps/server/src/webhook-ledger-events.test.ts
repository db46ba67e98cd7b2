import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { type EventLedger, openEventLedger } from '@assistant/events';
import { openFileTaskQueue, type TaskQueue } from '@assistant/queue';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { WebhookLedgerEvents } from './webhook-ledger-events.ts';

let root: string;
let ledger: EventLedger;
let queue: TaskQueue;
beforeEach(async () => {
  root = await mkdtemp(path.join(os.tmpdir(), 'assistant-webhook-ledger-'));
  ledger = openEventLedger({ dataDir: root });
  queue = await openFileTaskQueue({ directory: path.join(root, 'queue') });
});
afterEach(async () => {
  await queue.close();
  await rm(root, { recursive: true, force: true });
});

const failed = (task: string, taskType = 'email.inbox.check') =>
  ledger.emit({
    type: 'task.failed',
    source: 'queue',
    nativeId: `${task}:failed`,
    data: { task, task_type: taskType, attempts: 3, error: 'the server said no' },
    causedBy: [task],
  });

async function deliveries(): Promise<{ endpoint: string; id: string; event: { type: string; data: unknown } }[]> {
  const entries = await queue.list({ type: 'chat.webhook' });
  const tasks = await Promise.all(entries.map((entry) => queue.get(entry.name?.id ?? '')));
  return tasks
    .map((record) => record?.task?.payload as { endpoint: string; id: string; event: { type: string; data: unknown } })
    .sort((a, b) => `${a.id}${a.endpoint}`.localeCompare(`${b.id}${b.endpoint}`));
}

describe('WebhookLedgerEvents', () => {
  it('enqueues each chosen ledger event once per endpoint that takes its type, across restarts, from where it began', async () => {
    const stateFile = path.join(root, 'chat', 'webhook-events.json');
    const make = () =>
      new WebhookLedgerEvents({
        ledger,
        endpoints: new Map([
          ['ops', new Set(['task.failed', 'chat.webhook_event'])],
          ['audit', new Set(['task.failed', 'task.done'])],
        ]),
        queue,
        stateFile,
        logger: { warn: () => {} },
      });
    // The first look only notes the ledger's end: what happened before the endpoint was configured is not sent.
    await failed('01before');
    expect(await make().scan()).toEqual({ enqueued: 0 });

    const first = await failed('01first');
    // The deliveries' own reports are never sent (each would make another), nor an event that breaks its schema.
    await failed('01delivery', 'chat.webhook');
    await ledger.emit({ type: 'task.failed', source: 'queue', nativeId: 'bad', data: { task: 7 } });
    await ledger.emit({
      type: 'task.done',
      source: 'queue',
      nativeId: '01done:done',
      data: { task: '01done', task_type: 'chat.webhook', attempts: 1 },
    });
    const scanner = make();
    expect(await scanner.scan()).toEqual({ enqueued: 2 });
    expect(await scanner.scan()).toEqual({ enqueued: 0 });
    expect(await deliveries()).toEqual([
      {
        endpoint: 'audit',
        id: first.event.id,
        event: {
          type: 'task.failed',
          timestamp: first.event.at,
          data: {
            id: first.event.id,
            source: 'queue',
            caused_by: ['01first'],
            data: { task: '01first', task_type: 'email.inbox.check', attempts: 3, error: 'the server said no' },
          },
        },
      },
      expect.objectContaining({ endpoint: 'ops', id: first.event.id }),
    ]);

    // A restart goes on from the saved cursor: nothing again, the next event once.
    expect(await make().scan()).toEqual({ enqueued: 0 });
    const next = await failed('01next');
    expect(await make().scan()).toEqual({ enqueued: 2 });
    expect((await deliveries()).map((delivery) => `${delivery.endpoint} ${delivery.id}`)).toEqual([
      `audit ${first.event.id}`,
      `ops ${first.event.id}`,
      `audit ${next.event.id}`,
      `ops ${next.event.id}`,
    ]);
  });

  it('refuses a damaged state file, sending nothing, rather than starting over', async () => {
    const stateFile = path.join(root, 'webhook-events.json');
    await writeFile(stateFile, '{"offset": 3}');
    const scanner = new WebhookLedgerEvents({
      ledger,
      endpoints: new Map([['ops', new Set(['task.failed'])]]),
      queue,
      stateFile,
      logger: { warn: () => {} },
    });
    await failed('01x');
    await expect(scanner.scan()).rejects.toThrow('is not {"cursor": "…"}; fix or remove it');
    expect(await deliveries()).toEqual([]);
  });
});
