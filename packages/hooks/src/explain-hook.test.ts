import { EventRegistry } from '@assistant/events';
import { describe, expect, it } from 'vitest';
import { compileHook } from './compile-hook.ts';
import { describeHook, dryRunHook, eventForTest, formatDryRun } from './explain-hook.ts';
import { testCatalog, testEvent, testRegistry } from './testing/hook-fixtures.ts';

function hookOf(source: Record<string, unknown>) {
  const result = compileHook({
    name: 'accountant',
    file: 'hooks/accountant.yaml',
    line: 1,
    source,
    registry: testRegistry,
    catalog: testCatalog,
  });
  if (!result.hook) throw new Error(JSON.stringify(result.problems));
  return result.hook;
}

describe('eventForTest', () => {
  it('builds the record a dry run decides on, with the problem the ledger would mark, and refuses a non-event', () => {
    const registry = new EventRegistry();
    const good = eventForTest({
      input: { type: 'task.done', data: { task: 't1', task_type: 'system.echo', attempts: 1 } },
      registry,
      nowMs: Date.parse('2026-11-28T08:00:00Z'),
    });
    expect(good).toMatchObject({ type: 'task.done', at: '2026-11-28T08:00:00.000Z', source: 'test' });
    expect(good.id).toMatch(/^ev-[0-9a-f]{20}$/);
    expect(good.problem).toBeUndefined();
    const broken = eventForTest({ input: { type: 'mail.received', data: { subject: 1 } }, registry });
    expect(broken.problem).toEqual(expect.any(String));
    expect(() => eventForTest({ input: { data: {} }, registry })).toThrowError(
      expect.objectContaining({ code: 'HOOK_TEST_EVENT_INVALID', message: expect.stringContaining('type') }),
    );
  });
});

describe('dryRunHook', () => {
  it('explains the fast path, reports the slow path as not asked without `ask`, and lists the actions', async () => {
    // A hook's `then:` as YAML gives it: a key no object literal may name (biome's noThenProperty).
    const hook = hookOf(
      Object.fromEntries([
        ['on', 'mail.received'],
        ['when', { from_address: 'anna@accountant.example' }],
        ['ask', 'Does it name a deadline?'],
        ['then', [{ notify: 'Deadline: {{event.data.subject}}' }]],
      ]),
    );
    expect(describeHook(hook)).toMatchObject({
      name: 'accountant',
      on: 'mail.received',
      ask: { question: 'Does it name a deadline?' },
    });
    const event = testEvent('mail.received', { from_address: 'anna@accountant.example', subject: 'Pay by Friday' });
    const notAsked = await dryRunHook({ hook, event });
    expect(notAsked.slowPath).toBe('not asked');
    expect(notAsked.decision.fire).toBe(false);
    expect(formatDryRun(notAsked)).toContain('Slow path: not asked (pass --ask to call the model)');
    const asked = await dryRunHook({ hook, event, ask: async () => ({ fire: true, reason: 'Friday', cached: false }) });
    expect(asked.slowPath).toBe('asked');
    expect(formatDryRun(asked)).toContain('notify "Deadline: Pay by Friday"');
    expect(formatDryRun(asked)).toContain('Decision: FIRES');
    const other = await dryRunHook({ hook, event: testEvent('mail.received', { from_address: 'eve@x.example' }) });
    expect(other.slowPath).toBe('not reached');
  });
});
