import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { openEventLedger } from '@assistant/events';
import { fakeMemory } from '@assistant/integration-host/testing';
import type { OwnerTask } from '@assistant/memory';
import type { HandlerContext, JsonValue } from '@assistant/sdk';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { checkDueTasks, isDue } from './due-tasks.ts';

let dataDir: string;
beforeEach(async () => {
  dataDir = await mkdtemp(path.join(tmpdir(), 'memory-due-'));
});
afterEach(async () => {
  await rm(dataDir, { recursive: true, force: true });
});

function task(id: string, due: string | undefined, status: OwnerTask['status'] = 'open'): OwnerTask {
  return {
    path: `tasks/${id}.md`,
    id,
    title: `Task ${id}`,
    ...(due === undefined ? {} : { due }),
    status,
    created_by: 'extraction',
    source: 'email/personal/2026/11/m-1.md',
    about: ['contact:alice-martin'],
  };
}

function contextFor(memory: ReturnType<typeof fakeMemory>, lines: string[]) {
  const events = openEventLedger({ dataDir });
  const context = {
    task: { id: '01jtaskdue000000000000000a' },
    instance: { name: 'memory', domain: 'memory', settings: {}, llm: 'default' },
    memory,
    events,
    log: { human: async (message: string) => void lines.push(message), warn: () => {}, info: () => {} },
  } as unknown as HandlerContext<JsonValue>;
  return { context, events };
}

describe('memory.due.check', () => {
  it('fires memory.task_due once per task and due date, again when the due date moves, never for done or future tasks', async () => {
    const memory = fakeMemory({
      timeZone: 'Europe/Berlin',
      tasks: [
        task('a', '2026-11-27'),
        task('b', '2026-11-28'),
        task('c', '2026-12-05'),
        task('d', '2026-11-01', 'done'),
        task('e', undefined),
      ],
    });
    const lines: string[] = [];
    const { context, events } = contextFor(memory, lines);
    const now = Date.parse('2026-11-28T10:00:00Z');

    expect(await checkDueTasks(context, now)).toEqual({ due: 2, fired: 2 });
    // Run again (every 15 minutes): nothing new.
    expect(await checkDueTasks(context, now + 15 * 60_000)).toEqual({ due: 2, fired: 0 });
    let page = await events.list({ types: ['memory.task_due'] });
    expect(page.events.map((event) => event.data.task)).toEqual(['tasks/a.md', 'tasks/b.md']);
    expect(page.events[0]).toMatchObject({
      source: 'memory:memory',
      native_id: 'tasks/a.md@2026-11-27',
      caused_by: ['01jtaskdue000000000000000a'],
      data: { id: 'a', title: 'Task a', due: '2026-11-27', created_by: 'extraction', about: ['contact:alice-martin'] },
    });
    expect(page.events[0]?.problem).toBeUndefined();
    expect(lines).toHaveLength(2);

    // The owner moves task b to the 29th: it fires again on that day, once.
    (memory.tasks[1] as OwnerTask).due = '2026-11-29';
    expect(await checkDueTasks(context, now)).toEqual({ due: 1, fired: 0 });
    expect(await checkDueTasks(context, Date.parse('2026-11-29T08:00:00Z'))).toEqual({ due: 2, fired: 1 });
    expect(await checkDueTasks(context, Date.parse('2026-11-29T09:00:00Z'))).toEqual({ due: 2, fired: 0 });
    page = await events.list({ types: ['memory.task_due'] });
    expect(page.events.map((event) => event.native_id)).toEqual([
      'tasks/a.md@2026-11-27',
      'tasks/b.md@2026-11-28',
      'tasks/b.md@2026-11-29',
    ]);
  });

  it("reads a day in the owner's zone and an instant as an instant", () => {
    // 23:30 UTC on the 27th is already the 28th in Berlin.
    const lateEvening = Date.parse('2026-11-27T23:30:00Z');
    expect(isDue({ status: 'open', due: '2026-11-28' }, lateEvening, 'Europe/Berlin')).toBe(true);
    expect(isDue({ status: 'open', due: '2026-11-28' }, lateEvening, 'UTC')).toBe(false);
    expect(isDue({ status: 'open', due: '2026-11-28T09:00:00Z' }, Date.parse('2026-11-28T08:59:00Z'), 'UTC')).toBe(
      false,
    );
    expect(isDue({ status: 'open', due: '2026-11-28T09:00:00Z' }, Date.parse('2026-11-28T09:00:00Z'), 'UTC')).toBe(
      true,
    );
    expect(isDue({ status: 'dropped', due: '2026-11-01' }, lateEvening, 'UTC')).toBe(false);
  });
});
