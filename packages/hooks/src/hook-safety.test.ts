import { Yolo } from '@assistant/config';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { compileHook } from './compile-hook.ts';
import { decideHook } from './decide-hook.ts';
import type { CompiledHook, HookDecision } from './hook-types.ts';
import { testCatalog, testEvent, testEventTypes, testRegistry } from './testing/hook-fixtures.ts';

// Every action a hook can name, of every tier: soft (notify, chat, agent, pause, a reversible script or service),
// read_only (system.echo), irreversible (a script or service that cannot be undone, a task whose handler declares
// nothing, a merge).
const actions = [
  { notify: 'Mail: {{event.data.subject}}' },
  { chat: { text: 'a hook fired' } },
  { agent: 'Look at {{event.data.subject}}' },
  { pause: 'work-mail' },
  { script: 'note' },
  { script: 'deploy' },
  { service: 'research.web.search' },
  { service: { call: 'mail.send', inputs: { to: '{{event.data.from_address}}' } } },
  { enqueue: { type: 'system.echo' } },
  { enqueue: { type: 'email.inbox.check' } },
  { enqueue: { type: 'github.pulls.merge', payload: { pr: 1 } } },
];

const fields = testEventTypes['mail.received']?.fields ?? {};
const conditionFor: Record<string, fc.Arbitrary<unknown>> = {
  from_address: fc.constantFrom('anna@a.example', 'bob@b.example'),
  from_domain: fc.constantFrom('a.example', 'b.example'),
  subject: fc.constantFrom('Tax', 'Hello'),
  instance: fc.constantFrom('work-mail', 'home'),
  authenticated: fc.boolean(),
};
const fieldNames = Object.keys(fields);
const conditionMap = fc
  .dictionary(fc.constantFrom(...fieldNames), fc.constant(null), { maxKeys: 3 })
  .chain((keys) =>
    fc.record(Object.fromEntries(Object.keys(keys).map((name) => [name, conditionFor[name] ?? fc.constant('x')]))),
  );
const when = fc.oneof(
  conditionMap,
  fc.record({
    any: fc.array(
      conditionMap.filter((map) => Object.keys(map).length > 0),
      { minLength: 1, maxLength: 2 },
    ),
  }),
  fc.record({ not: conditionMap.filter((map) => Object.keys(map).length > 0) }),
);

const hookSource = fc
  .record({
    when: fc.option(when, { nil: undefined }),
    filter: fc.option(conditionMap, { nil: undefined }),
    ask: fc.boolean(),
    approval: fc.boolean(),
    listYolo: fc.boolean(),
    actions: fc.array(fc.record({ action: fc.constantFrom(...actions), yolo: fc.boolean() }), {
      minLength: 1,
      maxLength: 4,
    }),
  })
  .map((drawn) => {
    const list = drawn.actions.map(({ action, yolo }) => (yolo ? new Yolo(action) : action));
    const source: Record<string, unknown> = {
      on: drawn.filter === undefined ? 'mail.received' : { type: 'mail.received', filter: drawn.filter },
      ...(drawn.when === undefined ? {} : { when: drawn.when }),
      ...(drawn.ask ? { ask: 'Should this fire?' } : {}),
      ...(drawn.approval ? { approval: 'required' } : {}),
    };
    // A `then` key written into an object literal reads as a thenable to the linter: set it as the data it is.
    Object.defineProperty(source, 'then', {
      value: drawn.listYolo ? new Yolo(drawn.actions.map(({ action }) => action)) : list,
      enumerable: true,
    });
    return source;
  });

const event = fc
  .record({
    data: fc.record(Object.fromEntries(fieldNames.map((name) => [name, conditionFor[name] ?? fc.constant('x')]))),
    problem: fc.option(fc.constant('subject: expected a string'), { nil: undefined }),
  })
  .map(({ data, problem }) => testEvent('mail.received', data, problem === undefined ? {} : { problem }));

/** The invariant: an irreversible action that does not wait for a person is `!yolo`, or the decision is `rule`. */
function unauthorised(decision: HookDecision): string[] {
  return decision.actions
    .filter(({ action, needsApproval }) => action.tier === 'irreversible' && !needsApproval)
    .filter(({ action }) => !action.yolo && decision.provenance !== 'rule')
    .map(({ summary }) => summary);
}

describe('hook safety (property)', () => {
  it('no hook, event and ask verdict authorises an irreversible action without approval or !yolo', async () => {
    const seen = { loaded: 0, refused: 0, unattendedIrreversible: 0 };
    await fc.assert(
      fc.asyncProperty(hookSource, event, fc.boolean(), async (source, record, verdict) => {
        const result = compileHook({
          source,
          name: 'generated',
          file: 'hooks/generated.yaml',
          line: 1,
          registry: testRegistry,
          catalog: testCatalog,
        });
        if (!result.hook) {
          // Refused at load: then it held an irreversible action it may not take alone, or a shape problem.
          expect(result.problems.length + result.issues.length).toBeGreaterThan(0);
          seen.refused++;
          return;
        }
        seen.loaded++;
        const hook = result.hook;
        if (hook.ask) expect(hook.provenance).not.toBe('rule');
        const decision = await decideHook({
          hook,
          event: record,
          nowMs: 0,
          ask: async () => ({ fire: verdict, reason: verdict ? 'yes' : 'no', cached: false }),
        });
        expect(unauthorised(decision)).toEqual([]);
        if (record.problem !== undefined) expect(decision.fire).toBe(false);
        if (hook.ask && !verdict) expect(decision.fire).toBe(false);
        if (decision.actions.some(({ action, needsApproval }) => action.tier === 'irreversible' && !needsApproval))
          seen.unattendedIrreversible++;
      }),
      { numRuns: 400 },
    );
    // The generator reaches every side: hooks refused at load, loaded ones, and irreversible actions run alone.
    expect(seen.refused).toBeGreaterThan(20);
    expect(seen.loaded).toBeGreaterThan(100);
    expect(seen.unattendedIrreversible).toBeGreaterThan(20);
  });

  it('holds for a compiled hook edited by hand to claim rule provenance and no approval', async () => {
    await fc.assert(
      fc.asyncProperty(hookSource, event, fc.boolean(), async (source, record, verdict) => {
        // Compiled with approval forced on, so every combination loads; then the approval and provenance are forged.
        Object.defineProperty(source, 'approval', { value: 'required', enumerable: true });
        const result = compileHook({
          source,
          name: 'forged',
          file: 'hooks/forged.yaml',
          line: 1,
          registry: testRegistry,
          catalog: testCatalog,
        });
        if (!result.hook) return;
        const forged: CompiledHook = { ...result.hook, provenance: 'rule', approval: false };
        const decision = await decideHook({
          hook: forged,
          event: record,
          nowMs: 0,
          ask: async () => ({ fire: verdict, reason: 'r', cached: false }),
        });
        const trusted = new Set(forged.trustedFields);
        const deterministic =
          forged.ask === undefined && forged.conditions.every((condition) => trusted.has(condition.subject.name));
        for (const { action, needsApproval } of decision.actions) {
          if (action.tier === 'irreversible' && !needsApproval) expect(action.yolo || deterministic).toBe(true);
        }
      }),
      { numRuns: 300 },
    );
  });
});
