import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { type ActionRegistry, checkActTask, decideApproval } from '@assistant/actions';
import { readYaml } from '@assistant/config';
import { FileNoteStore } from '@assistant/notes';
import { openFileTaskQueue, type Task } from '@assistant/queue';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { compileHook } from './compile-hook.ts';
import { decideHook } from './decide-hook.ts';
import type { CompiledHook } from './hook-types.ts';
import { performHookActions, planHookTasks } from './perform-hook-actions.ts';
import { testCatalog, testEvent, testRegistry } from './testing/hook-fixtures.ts';

// The worker's gate (checkActTask) before a script or service task a hook enqueued: what a hook may do alone runs,
// what needed a person runs only as approved, and a task that claims a hook it does not match is refused.

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'hooks-gate-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

function compiled(text: string, name: string): CompiledHook {
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

function registryWith(hooks: CompiledHook[]): ActionRegistry {
  const byName = new Map(hooks.map((hook) => [hook.name, hook]));
  return {
    integrations: [],
    taskType: () => undefined,
    instance: () => undefined,
    instances: () => [],
    instanceForTask: () => ({ ok: false, message: 'none' }),
    manifestPlatform: () => undefined,
    automations: () => [],
    hook: (name) => byName.get(name),
  };
}

const scripts = { deploy: { reversible: false }, note: { reversible: true } };
const event = testEvent('task.failed', { task_type: 'github.pulls.check', integration: 'github' });
const nowMs = Date.parse('2026-11-28T08:00:00Z');

function asTask(type: string, payload: unknown): Task {
  return {
    id: 't1',
    type,
    priority: 7,
    createdAt: new Date(nowMs).toISOString(),
    readyAt: new Date(nowMs).toISOString(),
    source: 'automation',
    payload: payload as never,
    attempts: 1,
    maxAttempts: 3,
    history: [],
  };
}

async function plannedScript(hook: CompiledHook) {
  const decision = await decideHook({ hook, event, nowMs });
  const [planned] = planHookTasks({ decision, hook, event, firingId: 'f1', timeZone: 'UTC', nowMs });
  return asTask(planned?.task.type ?? '', planned?.task.payload);
}

describe('the act gate for tasks a hook enqueued', () => {
  it('lets a deterministic or !yolo hook run its irreversible script, and refuses one that claims what it is not', async () => {
    const notes = new FileNoteStore({ root: path.join(dir, 'notes') });
    const ruled = compiled('on: task.failed\nwhen: {task_type: github.pulls.check}\nthen: {script: deploy}\n', 'ruled');
    const yolo = compiled('on: task.failed\nask: Green?\nthen: !yolo {script: deploy}\n', 'yolo');
    const asked = compiled('on: task.failed\nask: Green?\napproval: required\nthen: {script: deploy}\n', 'asked');
    const registry = registryWith([ruled, yolo, asked]);
    const check = (task: Task) => checkActTask({ registry, notes, task, scripts });

    expect(await check(await plannedScript(ruled))).toBeUndefined();
    const yoloTask = await plannedScript(yolo);
    // Decided without the slow path here: the plan is what the task would carry.
    expect(await check(yoloTask)).toBeUndefined();
    expect(await check(await plannedScript(asked))).toMatch(/needs approval, which the task does not cite/);

    const forged = (changes: Record<string, unknown>) => {
      const payload = yoloTask.payload as { requested_by: Record<string, unknown> };
      return asTask('script.run', { ...payload, requested_by: { ...payload.requested_by, ...changes } });
    };
    expect(await check(forged({ hook: 'nobody' }))).toMatch(/no hook `nobody` is loaded/);
    expect(await check(forged({ version: '0000000000000000' }))).toMatch(/changed since it fired/);
    expect(
      await check(
        asTask('script.run', {
          script: 'deploy',
          inputs: {},
          requested_by: { hook: 'ruled', version: ruled.version, event: event.id, firing: 'f2' },
        }),
      ),
    ).toBeUndefined();
    // A reversible script needs nobody's say-so.
    expect(
      await check(
        asTask('script.run', {
          script: 'note',
          requested_by: { hook: 'nobody', version: 'x', event: 'e', firing: 'f' },
        }),
      ),
    ).toBeUndefined();
  });

  it('runs an approved hook task exactly as approved, and refuses it changed', async () => {
    const notes = new FileNoteStore({ root: path.join(dir, 'notes') });
    const queue = await openFileTaskQueue({ directory: path.join(dir, 'queue') });
    const hook = compiled(
      'on: task.failed\nask: Green?\napproval: required\nthen:\n  - script: deploy\n    inputs: {what: "{{event.data.integration}}"}\n',
      'deploy',
    );
    const registry = registryWith([hook]);
    const decision = await decideHook({
      hook,
      event,
      nowMs,
      ask: async () => ({ fire: true, reason: 'green', cached: false }),
    });
    const performed = await performHookActions({
      decision,
      hook,
      event,
      firingId: 'f7',
      timeZone: 'UTC',
      nowMs,
      deps: { queue, notes, approvalExpiresMs: 3_600_000 },
    });
    const id = performed.approval?.id ?? '';
    const waiting = await plannedScript(hook);
    expect(
      await checkActTask({
        registry,
        notes,
        task: asTask('script.run', { ...(waiting.payload as object), approval: id }),
        scripts,
      }),
    ).toMatch(/is pending, not approved/);

    const decided = await decideApproval({ notes, queue, id, decision: 'approve', by: 'test', nowMs });
    const record = await queue.get(decided.enqueued?.[0]?.task ?? '');
    const task = record && 'task' in record ? record.task : undefined;
    if (!task) throw new Error('the approved task was not enqueued');
    expect(task.payload).toMatchObject({ script: 'deploy', inputs: { what: 'github' }, approval: id });
    expect(await checkActTask({ registry, notes, task, scripts })).toBeUndefined();
    const changed = { ...task, payload: { ...(task.payload as object), inputs: { what: 'everything' } } };
    expect(await checkActTask({ registry, notes, task: changed, scripts })).toMatch(
      /did not approve this task as it is/,
    );
  });
});
