import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { approvalRendering, decideApproval, readApproval } from '@assistant/actions';
import { readYaml } from '@assistant/config';
import { FileNoteStore } from '@assistant/notes';
import { openFileTaskQueue } from '@assistant/queue';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { compileHook } from './compile-hook.ts';
import { decideHook } from './decide-hook.ts';
import type { CompiledHook } from './hook-types.ts';
import { resolveAt } from './notify-at.ts';
import { performHookActions, planHookTasks } from './perform-hook-actions.ts';
import { testCatalog, testEvent, testRegistry } from './testing/hook-fixtures.ts';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'hooks-perform-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

function compiled(text: string, name = 'reminder'): CompiledHook {
  const result = compileHook({
    source: readYaml({ text, file: `hooks/${name}.yaml` }).data,
    name,
    file: `hooks/${name}.yaml`,
    line: 1,
    registry: testRegistry,
    catalog: testCatalog,
  });
  if (!result.hook) throw new Error(JSON.stringify(result));
  return result.hook;
}

const nowMs = Date.parse('2026-11-25T10:00:00Z'); // a Wednesday
const event = testEvent('task.failed', { task_type: 'email.inbox.check', integration: 'work-mail', error: 'timeout' });

async function setup() {
  const notes = new FileNoteStore({ root: path.join(dir, 'notes') });
  const queue = await openFileTaskQueue({ directory: path.join(dir, 'queue') });
  return { notes, queue, approvalExpiresMs: 86_400_000 };
}

describe('planHookTasks', () => {
  it('turns each action into its queue task, with due times written into the task', async () => {
    const hook = compiled(`
on: task.failed
then:
  - notify: "{{event.data.task_type}} failed"
    after: 2h
  - notify: {text: "Friday check", at: "friday 09:00"}
  - chat: {conversation: c-ops, text: "failed: {{event.data.error}}"}
  - pause: {integration: work-mail}
  - agent: {prompt: "Why did {{event.data.task_type}} fail?", llm: fast}
  - script: note
  - service: {call: research.web.search, inputs: {query: "{{event.data.task_type}}"}}
  - enqueue: {type: system.echo, payload: {said: "{{event.data.integration}}"}, delay: 5m}
`);
    const decision = await decideHook({ hook, event, nowMs });
    const tasks = planHookTasks({ decision, hook, event, firingId: 'f1', timeZone: 'Europe/Berlin', nowMs }).map(
      (entry) => entry.task,
    );
    const requestedBy = { hook: 'reminder', version: hook.version, event: event.id, firing: 'f1' };
    expect(tasks).toEqual([
      expect.objectContaining({
        type: 'chat.notify',
        payload: expect.objectContaining({
          conversation: 'notifications',
          text: 'email.inbox.check failed',
          message: expect.stringMatching(/^h-[0-9a-f]{24}$/),
        }),
        ready_at: '2026-11-25T12:00:00.000Z',
      }),
      // Friday 09:00 in Berlin (UTC+1 in November).
      expect.objectContaining({ type: 'chat.notify', ready_at: '2026-11-27T08:00:00.000Z' }),
      expect.objectContaining({
        type: 'chat.notify',
        payload: expect.objectContaining({ conversation: 'c-ops', text: 'failed: timeout' }),
      }),
      expect.objectContaining({
        type: 'system.pause',
        payload: {
          integration: 'work-mail',
          reason: `hook reminder fired on task.failed ${event.id}`,
          by: 'hook:reminder',
        },
      }),
      expect.objectContaining({
        type: 'system.agent',
        payload: { prompt: 'Why did email.inbox.check fail?', profile: 'fast' },
      }),
      expect.objectContaining({
        type: 'script.run',
        payload: { script: 'note', inputs: {}, requested_by: requestedBy, provenance: 'rule' },
      }),
      expect.objectContaining({
        type: 'service.research.search',
        integration: 'research',
        payload: { inputs: { query: 'email.inbox.check' } },
        on_result: { routes: [{ note: true }], requested_by: requestedBy },
      }),
      expect.objectContaining({
        type: 'system.echo',
        payload: { said: 'work-mail' },
        ready_at: '2026-11-25T10:05:00.000Z',
      }),
    ]);
  });
});

describe('resolveAt', () => {
  it('reads times of day, weekdays and dates in the owner time zone', () => {
    const at = (text: string) => new Date(resolveAt({ at: text, nowMs, timeZone: 'America/New_York' })).toISOString();
    expect(at('09:00')).toBe('2026-11-25T14:00:00.000Z');
    expect(at('04:00')).toBe('2026-11-26T09:00:00.000Z');
    expect(at('wed 04:00')).toBe('2026-12-02T09:00:00.000Z');
    expect(at('2026-12-01')).toBe('2026-12-01T14:00:00.000Z');
    expect(at('2026-12-01T08:30:00Z')).toBe('2026-12-01T08:30:00.000Z');
    expect(at('2020-01-01T00:00:00Z')).toBe(new Date(nowMs).toISOString());
    expect(() => at('someday')).toThrow(/is not a time/);
  });

  it('counts the wall clock across a change of summer time', () => {
    // Saturday 24 October 2026, noon in Berlin (UTC+2); Berlin is back on UTC+1 from Sunday 03:00.
    const saturday = Date.parse('2026-10-24T10:00:00Z');
    const at = (text: string) =>
      new Date(resolveAt({ at: text, nowMs: saturday, timeZone: 'Europe/Berlin' })).toISOString();
    expect(at('sunday 09:00')).toBe('2026-10-25T08:00:00.000Z');
    expect(at('11:00')).toBe('2026-10-25T10:00:00.000Z');
    expect(at('13:00')).toBe('2026-10-24T11:00:00.000Z');
  });
});

describe('performHookActions', () => {
  it('enqueues what may run alone and does nothing for a decision that does not fire', async () => {
    const deps = await setup();
    const hook = compiled(
      'on: task.failed\nwhen: {attempts: "> 2"}\nthen:\n  - notify: failed\n  - enqueue: {type: system.echo}\n',
    );
    const quiet = await decideHook({ hook, event: { ...event, data: { ...event.data, attempts: 1 } }, nowMs });
    expect(
      await performHookActions({ decision: quiet, hook, event, firingId: 'f0', timeZone: 'UTC', nowMs, deps }),
    ).toEqual({
      enqueued: [],
    });
    const fired = testEvent('task.failed', { ...event.data, attempts: 3 });
    const decision = await decideHook({ hook, event: fired, nowMs });
    const result = await performHookActions({
      decision,
      hook,
      event: fired,
      firingId: 'f1',
      timeZone: 'UTC',
      nowMs,
      deps,
    });
    expect(result.approval).toBeUndefined();
    expect(result.enqueued.map((entry) => entry.type)).toEqual(['chat.notify', 'system.echo']);
    const task = await deps.queue.get(result.enqueued[0]?.task ?? '');
    expect(task).toMatchObject({
      task: { source: 'automation', payload: { text: 'failed', conversation: 'notifications' } },
    });
  });

  it('puts the actions that wait for a person into one request, enqueued as shown once approved', async () => {
    const deps = await setup();
    const hook = compiled(
      'on: task.failed\nask: Is the build green now?\napproval: required\nthen:\n  - notify: merging\n  - enqueue: {type: github.pulls.merge, payload: {pr: 7}}\n',
      'merge',
    );
    const decision = await decideHook({
      hook,
      event,
      nowMs,
      ask: async () => ({ fire: true, reason: 'the last run passed', cached: false }),
    });
    const first = await performHookActions({ decision, hook, event, firingId: 'f9', timeZone: 'UTC', nowMs, deps });
    expect(first.enqueued).toEqual([]);
    expect(first.approval).toMatchObject({ created: true });
    const again = await performHookActions({ decision, hook, event, firingId: 'f9', timeZone: 'UTC', nowMs, deps });
    expect(again.approval).toEqual({ ...first.approval, created: false });

    const id = first.approval?.id ?? '';
    const request = await readApproval(deps.notes, id);
    expect(request).toMatchObject({ kind: 'hook', status: 'pending', provenance: 'llm', rule: 'merge' });
    const { rendering, bound } = approvalRendering(request ?? ({} as never));
    expect(bound).toBe(true);
    expect(rendering).toContain('2. enqueue github.pulls.merge {"pr":7} (irreversible)');
    expect(rendering).toContain('payload: {"pr":7}');

    const decided = await decideApproval({ ...deps, id, decision: 'approve', by: 'test', nowMs: nowMs + 1000 });
    expect(decided.enqueued?.map((entry) => entry.type)).toEqual(['chat.notify', 'github.pulls.merge']);
    const merge = await deps.queue.get(decided.enqueued?.[1]?.task ?? '');
    expect(merge).toMatchObject({ task: { type: 'github.pulls.merge', payload: { pr: 7 } } });
    expect((await readApproval(deps.notes, id))?.tasks).toHaveLength(2);
  });
});
