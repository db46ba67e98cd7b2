import type { Action, Automation, Classification, WhenConditions } from '@assistant/config';
import type { ReversibilityTier } from '@assistant/manifests';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  type ActionCatalog,
  actionAllowed,
  compileAutomations,
  evaluateRules,
  explainRules,
} from './compile-automations.ts';
import type { FieldType } from './conditions.ts';

const classifications: Record<string, Classification> = {
  human: { prompt: 'is this personal?', type: 'confidence' },
  urgent: { prompt: 'urgent?', type: 'boolean' },
  topic: { prompt: 'about?', type: 'enum', values: ['work', 'bills', 'other'] },
};
const fields: Record<string, FieldType> = {
  is_noreply: 'boolean',
  from_domain: 'string',
  date: 'date',
  size: 'number',
  labels: 'list',
};
const catalog: ActionCatalog = {
  platformActions: {
    archive: { tier: 'soft' },
    move: { tier: 'soft', argument: 'string' },
    comment: { tier: 'soft', argument: 'string', argumentOptional: true },
    flag: { tier: 'read_only' },
    delete: { tier: 'hard' },
    send_reply: { tier: 'irreversible' },
  },
  scripts: { notify: { reversible: true }, wipe: { reversible: false } },
  service: (call) =>
    call === 'research.web.search'
      ? { reversible: true, call }
      : call === 'mail.work.forward'
        ? { reversible: false, call }
        : { problem: `no service ${call}` },
};

const platform = (action: string, argument?: string): Action => ({
  kind: 'platform',
  action,
  ...(argument === undefined ? {} : { argument }),
  yolo: false,
});
const rule = (when: Automation['when'], actions: Action[], extra: Partial<Automation> = {}): Automation => ({
  when,
  actions,
  approval: false,
  ...extra,
});
const compile = (automations: Automation[]) => compileAutomations({ automations, classifications, fields, catalog });
const now = Date.parse('2026-11-22T12:00:00Z');

describe('compileAutomations', () => {
  it('takes no name from Object.prototype for a field, a classification, an action or a script', () => {
    const { rules, problems } = compile([
      rule({ constructor: 'x' }, [platform('archive')]),
      rule({ is_noreply: true }, [platform('toString')]),
      rule({ is_noreply: true }, [{ kind: 'script', script: 'constructor', inputs: {}, yolo: false }]),
    ]);
    expect(rules).toEqual([]);
    expect(problems.map((problem) => [problem.index, problem.path.join('.')])).toEqual([
      [0, 'when.constructor'],
      [1, 'then'],
      [2, 'then'],
    ]);
  });

  it('tells rule, llm and hybrid provenance apart', () => {
    const { rules, problems } = compile([
      rule({ is_noreply: true }, [platform('archive')]),
      rule({ human: '< 0.2' }, [platform('archive')]),
      rule({ 'classification.human': 0.9, from_domain: 'example.com' }, [platform('flag')]),
    ]);
    expect(problems).toEqual([]);
    expect(rules.map((compiled) => compiled.provenance)).toEqual(['rule', 'llm', 'hybrid']);
  });

  it('reports unknown keys, values that do not suit the key, unknown actions and missing arguments', () => {
    const { rules, problems } = compile([
      rule({ humn: 0.5 }, [platform('archive')]),
      rule({ human: 'often', topic: 'sport', urgent: 'yes' }, [platform('archve'), platform('move')]),
      rule({ date: 'last week' }, [{ kind: 'script', script: 'missing', inputs: {}, yolo: false }]),
    ]);
    expect(rules).toEqual([]);
    expect(problems.map((problem) => [problem.index, problem.path.join('.'), problem.message])).toEqual([
      [0, 'when.humn', '`humn` is neither a classification of this platform nor one of its fields'],
      [1, 'when.human', expect.stringContaining('confidence from 0 to 1')],
      [1, 'when.topic', '`topic` is one of work, bills, other; `sport` is not'],
      [1, 'when.urgent', '`urgent` is yes or no: write true or false'],
      [1, 'then.0', '`archve` is not an action of this platform'],
      [1, 'then.1', '`move` takes a string: write `{move: …}`'],
      [2, 'when.date', expect.stringContaining('is a date')],
      [2, 'then', 'script `missing` is not defined under `scripts:`'],
    ]);
    expect(problems[0]?.hint).toBe(
      'classifications: human, urgent, topic; fields: is_noreply, from_domain, date, size, labels',
    );
  });

  it('takes an action whose argument is optional with or without it, each under its own key', () => {
    const { rules, problems } = compile([
      rule({ is_noreply: true }, [platform('comment'), platform('comment', 'Thanks {{ author }}!')]),
    ]);
    expect(problems).toEqual([]);
    expect(rules[0]?.actions.map((action) => action.key)).toEqual(['comment', 'comment:"Thanks {{ author }}!"']);
    expect(
      compile([rule({ is_noreply: true }, [{ kind: 'platform', action: 'comment', argument: 3, yolo: false }])])
        .problems[0]?.message,
    ).toBe('`comment` takes a string, not 3');
  });

  it('refuses an irreversible action decided by the LLM unless it is !yolo or needs approval', () => {
    const { problems } = compile([
      rule({ human: '>= 0.8' }, [platform('send_reply')]),
      rule({ human: '>= 0.8' }, [{ ...platform('send_reply'), yolo: true }]),
      rule({ human: '>= 0.8' }, [platform('send_reply')], { approval: true }),
      rule({ is_noreply: false }, [platform('send_reply')]),
      rule({ urgent: true, from_domain: 'work.example' }, [
        { kind: 'script', script: 'wipe', inputs: {}, yolo: false },
      ]),
      rule({ urgent: true }, [{ kind: 'service', call: 'mail.work.forward', inputs: {}, yolo: false }]),
      rule({ urgent: true }, [{ kind: 'service', call: 'research.web.search', inputs: {}, yolo: false }]),
    ]);
    expect(problems.map((problem) => [problem.index, problem.message])).toEqual([
      [
        0,
        expect.stringMatching(
          /^`send_reply` cannot be undone, and this rule decides from the LLM's classifications \(llm\)/,
        ),
      ],
      // `is_noreply` comes from the sender's address: not deterministic for what cannot be undone.
      [3, expect.stringContaining('tests facts the sender controls (`is_noreply`)')],
      [4, expect.stringContaining('(hybrid)')],
      [5, expect.stringMatching(/^`mail\.work\.forward` cannot be undone/)],
    ]);
  });

  it('hole 6: a rule over untrusted fields is hybrid for irreversible actions; over trusted fields it stays rule', () => {
    const { rules, problems } = compileAutomations({
      automations: [
        rule({ labels: 'unsubscribe-me' }, [platform('send_reply')]),
        rule({ labels: 'unsubscribe-me' }, [{ ...platform('send_reply'), yolo: true }], { name: 'yolo' }),
        rule({ labels: 'unsubscribe-me' }, [platform('send_reply')], { name: 'asks', approval: true }),
        rule({ is_noreply: true, from_domain: 'a.example' }, [platform('send_reply')], { name: 'trusted' }),
        rule({ is_noreply: true, labels: 'x' }, [platform('archive')], { name: 'reversible' }),
      ],
      classifications,
      fields,
      trustedFields: ['is_noreply', 'from_domain'],
      catalog,
    });
    expect(problems.map((problem) => [problem.index, problem.path.join('.'), problem.message])).toEqual([
      [
        0,
        'then',
        '`send_reply` cannot be undone, and this rule tests facts the sender controls (`labels`), so it is not deterministic (hybrid)',
      ],
    ]);
    expect(rules.map((compiled) => [compiled.name, compiled.provenance])).toEqual([
      ['yolo', 'hybrid'],
      ['asks', 'hybrid'],
      ['trusted', 'rule'],
      // Reversible actions need nobody's approval, whatever the facts: the rule stays `rule`.
      ['reversible', 'rule'],
    ]);
    const [yolo] = rules;
    expect(
      evaluateRules(yolo ? [yolo] : [], { classifications: {}, fields: { labels: ['unsubscribe-me'] } }, now),
    ).toMatchObject([{ provenance: 'hybrid', actions: [{ key: 'send_reply', yolo: true }] }]);
  });

  it('hole 14: an action listed twice in a rule is compiled once', () => {
    const { rules } = compile([rule({ is_noreply: true }, [platform('archive'), platform('archive')])]);
    expect(rules[0]?.actions.map((action) => action.key)).toEqual(['archive']);
  });
});

describe('evaluateRules', () => {
  const { rules } = compile([
    rule({ human: '< 0.2', is_noreply: true }, [platform('archive')], { name: 'archive robots' }),
    rule({ topic: ['bills', 'work'] }, [platform('move', 'Bills')]),
    rule({ date: '< now() - 7d', labels: 'old' }, [platform('delete')]),
    rule({ from_domain: null }, [platform('flag')]),
    rule({ size: '> 1000' }, [platform('flag')]),
  ]);

  it('matches when every condition holds and says why', () => {
    const matches = evaluateRules(
      rules,
      {
        classifications: { human: 0.1, topic: 'bills' },
        fields: {
          is_noreply: true,
          date: '2026-11-01T00:00:00Z',
          labels: ['Old', 'x'],
          from_domain: 'a.example',
          size: 10,
        },
      },
      now,
    );
    expect(
      matches.map((match) => [match.rule, match.provenance, match.reason, match.actions.map((action) => action.key)]),
    ).toEqual([
      ['archive robots', 'hybrid', 'human < 0.2, is_noreply = true', ['archive']],
      ['automation 2', 'llm', 'topic in [bills, work]', ['move:"Bills"']],
      ['automation 3', 'rule', 'date < now() - 7d, labels has old', ['delete']],
    ]);
  });

  it('never fires on a classification the item does not have', () => {
    const matches = evaluateRules(rules, { classifications: {}, fields: { is_noreply: true } }, now);
    expect(matches.map((match) => match.rule)).toEqual(['automation 4']);
  });
});

describe('control flow: stop, any, not', () => {
  const { rules, problems } = compile([
    rule({ any: [{ from_domain: 'bank.example' }, { topic: 'bills' }] }, [platform('move', 'Bills')], {
      name: 'bills',
      stop: true,
    }),
    rule({ is_noreply: true, not: { labels: 'keep' } }, [platform('archive')], { name: 'robots' }),
    rule({ size: '> 0' }, [platform('flag')], { name: 'everything' }),
  ]);

  it('compiles `any:` and `not:` into a tree over the flat list of tests', () => {
    expect(problems).toEqual([]);
    expect(rules[0]?.when).toEqual({
      kind: 'all',
      children: [
        {
          kind: 'any',
          children: [
            { kind: 'all', children: [{ kind: 'test', condition: 0 }] },
            { kind: 'all', children: [{ kind: 'test', condition: 1 }] },
          ],
        },
      ],
    });
    expect(rules[0]?.provenance).toBe('hybrid');
    expect(rules.map((compiled) => compiled.stop)).toEqual([true, false, false]);
  });

  it('a rule with `stop: true` that holds keeps every later rule from the item, and explain says which stopped it', () => {
    const facts = {
      classifications: { topic: 'other' },
      fields: { from_domain: 'bank.example', is_noreply: true, size: 5 },
    };
    expect(evaluateRules(rules, facts, now).map((match) => [match.rule, match.reason])).toEqual([
      ['bills', 'any of (from_domain = bank.example; topic = bills)'],
    ]);
    const explained = explainRules(rules, facts, now);
    expect(explained.map((entry) => [entry.name, entry.conditionsHold, entry.stoppedBy])).toEqual([
      ['bills', true, undefined],
      ['robots', true, 'bills'],
      ['everything', true, 'bills'],
    ]);
    expect(explained[0]?.conditions.map((condition) => [condition.group, condition.text, condition.holds])).toEqual([
      ['any 1 of 2', 'from_domain = bank.example', true],
      ['any 2 of 2', 'topic = bills', false],
    ]);
    // Without the stop, the later rules run.
    const other = {
      classifications: { topic: 'other' },
      fields: { from_domain: 'x.example', is_noreply: true, size: 5 },
    };
    expect(evaluateRules(rules, other, now).map((match) => [match.rule, match.reason])).toEqual([
      ['robots', 'is_noreply = true, not (labels has keep)'],
      ['everything', 'size > 0'],
    ]);
  });

  it('`not:` fails when its conditions hold', () => {
    const facts = { classifications: {}, fields: { is_noreply: true, labels: ['Keep'], size: 1 } };
    expect(evaluateRules(rules, facts, now).map((match) => match.rule)).toEqual(['everything']);
  });

  it('a missing classification is unknown: `not:` of it does not hold, `any:` holds only through another entry', () => {
    const { rules: negated } = compile([
      rule({ not: { human: '> 0.5' } }, [platform('archive')], { name: 'not personal' }),
      rule({ any: [{ human: '> 0.5' }, { is_noreply: true }] }, [platform('flag')], { name: 'either' }),
    ]);
    expect(evaluateRules(negated, { classifications: {}, fields: { is_noreply: false } }, now)).toEqual([]);
    expect(
      evaluateRules(negated, { classifications: {}, fields: { is_noreply: true } }, now).map((match) => match.rule),
    ).toEqual(['either']);
    expect(
      evaluateRules(negated, { classifications: { human: 0.1 }, fields: {} }, now).map((match) => match.rule),
    ).toEqual(['not personal']);
  });

  it('a paused rule is explained as paused, never matches, and its stop does not apply', () => {
    const facts = { classifications: {}, fields: { from_domain: 'bank.example', is_noreply: true, size: 5 } };
    const paused = (candidate: { name: string }) => (candidate.name === 'bills' ? 'paused by owner' : undefined);
    expect(evaluateRules(rules, facts, now, { paused }).map((match) => match.rule)).toEqual(['robots', 'everything']);
    expect(explainRules(rules, facts, now, { paused })[0]).toMatchObject({
      conditionsHold: true,
      paused: 'paused by owner',
    });
  });

  it('reports a problem inside `any:` or `not:` at its path', () => {
    const { rules: none, problems: found } = compile([
      rule({ any: [{ humn: 0.5 }, { topic: 'sport' }], not: { size: 'big' } }, [platform('archive')]),
    ]);
    expect(none).toEqual([]);
    expect(found.map((problem) => problem.path.join('.'))).toEqual([
      'when.any.0.humn',
      'when.any.1.topic',
      'when.not.size',
    ]);
  });
});

// -------------------------------------------------------------------------------- property: the safety gate

const tiers: ReversibilityTier[] = ['read_only', 'soft', 'hard', 'irreversible'];
const classificationNames = ['c1', 'c2', 'c3'];
const fieldNames = ['f1', 'f2'];

const scenario = fc
  .record({
    classificationTypes: fc.tuple(...classificationNames.map(() => fc.constantFrom('confidence', 'boolean', 'enum'))),
    actionTiers: fc.dictionary(fc.constantFrom('a1', 'a2', 'a3', 'a4'), fc.constantFrom(...tiers), { minKeys: 1 }),
    scriptReversible: fc.boolean(),
  })
  .chain(({ classificationTypes, actionTiers, scriptReversible }) => {
    const defined: Record<string, Classification> = {};
    classificationNames.forEach((name, index) => {
      const type = classificationTypes[index] ?? 'confidence';
      defined[name] = type === 'enum' ? { prompt: name, type, values: ['x', 'y'] } : { prompt: name, type };
    });
    // Mostly valid keys, some junk: rules with problems are dropped, so most rules must compile to test the gate.
    const key = fc.oneof(
      { weight: 8, arbitrary: fc.constantFrom(...classificationNames, 'classification.c1') },
      { weight: 3, arbitrary: fc.constantFrom(...fieldNames, 'field.f1') },
      { weight: 1, arbitrary: fc.constant('junk') },
    );
    const value = fc.oneof(
      fc.double({ min: 0, max: 1, noNaN: true }),
      fc.constantFrom('< 0.5', '>= 0.3', 'x', 'y', 'z', '> 2'),
      fc.boolean(),
      fc.constant(null),
      fc.array(fc.constantFrom('x', 'y', 'z'), { maxLength: 2 }),
    );
    const action: fc.Arbitrary<Action> = fc.oneof(
      {
        weight: 8,
        arbitrary: fc.record({
          kind: fc.constant('platform' as const),
          action: fc.constantFrom('a1', 'a2', 'a3', 'a4'),
          yolo: fc.boolean(),
        }),
      },
      {
        weight: 2,
        arbitrary: fc.record({
          kind: fc.constant('script' as const),
          script: fc.constant('s1'),
          inputs: fc.constant({}),
          yolo: fc.boolean(),
        }),
      },
      // Names outside the allowlist, which must never come out.
      {
        weight: 1,
        arbitrary: fc.record({
          kind: fc.constant('platform' as const),
          action: fc.constant('nope'),
          yolo: fc.boolean(),
        }),
      },
      {
        weight: 1,
        arbitrary: fc.record({
          kind: fc.constant('script' as const),
          script: fc.constant('missing'),
          inputs: fc.constant({}),
          yolo: fc.boolean(),
        }),
      },
    );
    // Values mostly of the key's own type, so most rules compile and can match.
    const valueFor = (key: string): fc.Arbitrary<Automation['when'][string]> => {
      const type = defined[key.replace(/^classification\./, '')]?.type;
      const suited =
        type === 'confidence'
          ? fc.oneof(fc.double({ min: 0, max: 1, noNaN: true }), fc.constantFrom('< 0.5', '>= 0.3', '> 0.9'))
          : type === 'boolean'
            ? fc.boolean()
            : type === 'enum'
              ? fc.oneof(fc.constantFrom('x', 'y'), fc.constant<string[]>(['x', 'y']))
              : key.endsWith('f1')
                ? fc.oneof(fc.boolean(), fc.constant(null))
                : fc.constantFrom('x', 'y');
      return fc.oneof({ weight: 6, arbitrary: suited }, { weight: 1, arbitrary: value });
    };
    const flatWhen = fc
      .uniqueArray(key, { minLength: 1, maxLength: 3 })
      .chain((keys) =>
        fc
          .tuple(...keys.map(valueFor))
          .map((values) => Object.fromEntries(keys.map((name, index) => [name, values[index] ?? null]))),
      );
    const sometimes = <T>(arbitrary: fc.Arbitrary<T>) =>
      fc.oneof({ weight: 3, arbitrary: fc.constant(null) }, { weight: 1, arbitrary });
    // Control flow: `any:` and `not:` nest up to two levels below the rule's own map.
    const whenAt = (depth: number): fc.Arbitrary<WhenConditions> =>
      depth === 0
        ? flatWhen
        : fc
            .tuple(
              flatWhen,
              sometimes(fc.array(whenAt(depth - 1), { minLength: 1, maxLength: 2 })),
              sometimes(whenAt(depth - 1)),
            )
            .map(([base, any, not]) => ({
              ...base,
              ...(any === null ? {} : { any }),
              ...(not === null ? {} : { not }),
            }));
    const when = whenAt(2);
    const automation: fc.Arbitrary<Automation> = fc
      .record({
        when,
        actions: fc.array(action, { minLength: 1, maxLength: 3 }),
        approval: fc.boolean(),
        stop: fc.boolean(),
      })
      .map(({ stop, ...rest }) => (stop ? { ...rest, stop: true } : rest));
    // Each classification present (with a value of its own type, or of another) or missing.
    const answer = (type: string) =>
      fc.oneof(
        {
          weight: 6,
          arbitrary:
            type === 'confidence'
              ? fc.double({ min: 0, max: 1, noNaN: true })
              : type === 'boolean'
                ? fc.boolean()
                : fc.constantFrom('x', 'y'),
        },
        {
          weight: 1,
          arbitrary: fc.oneof(fc.double({ min: 0, max: 1, noNaN: true }), fc.boolean(), fc.constantFrom('x', 'y')),
        },
      );
    const facts = fc.record({
      classifications: fc.record(
        Object.fromEntries(
          classificationNames.map((name, index) => [name, answer(classificationTypes[index] ?? 'confidence')]),
        ),
        { requiredKeys: [] },
      ),
      fields: fc.dictionary(
        fc.constantFrom(...fieldNames),
        fc.oneof(fc.boolean(), fc.constantFrom('x', 'y'), fc.integer()),
      ),
    });
    return fc.record({
      defined: fc.constant(defined),
      actionTiers: fc.constant(actionTiers),
      scriptReversible: fc.constant(scriptReversible),
      automations: fc.array(automation, { maxLength: 6 }),
      paused: fc.uniqueArray(fc.nat({ max: 5 }), { maxLength: 2 }),
      facts,
    });
  });

describe('automation safety (property)', () => {
  it('never yields an action outside the allowlist, an unapproved irreversible LLM action, or a match on a missing classification', () => {
    const seen = { runs: 0, matches: 0, gated: 0 };
    fc.assert(
      fc.property(scenario, ({ defined, actionTiers, scriptReversible, automations, facts }) => {
        seen.runs += 1;
        const allowlist: ActionCatalog = {
          platformActions: Object.fromEntries(Object.entries(actionTiers).map(([name, tier]) => [name, { tier }])),
          scripts: { s1: { reversible: scriptReversible } },
          service: () => ({ problem: 'no services' }),
        };
        const { rules } = compileAutomations({
          automations,
          classifications: defined,
          fields: { f1: 'boolean', f2: 'string' },
          catalog: allowlist,
        });
        const matches = evaluateRules(rules, facts, now);
        seen.matches += matches.length;
        for (const match of matches) {
          const source = automations[match.ruleIndex ?? -1];
          for (const action of match.actions) {
            if (action.kind === 'platform') expect(Object.keys(actionTiers)).toContain(action.name);
            else expect(action.name).toBe('s1');
            // The gate: irreversible from llm/hybrid only with !yolo or approval.
            if (action.tier === 'irreversible' && match.provenance !== 'rule') {
              seen.gated += 1;
              expect(action.yolo || match.approval).toBe(true);
            }
            expect(actionAllowed(action, match.provenance, match.approval)).toBe(true);
          }
          // A condition on a classification the item lacks never holds.
          for (const key of Object.keys(source?.when ?? {})) {
            const name = key.startsWith('classification.') ? key.slice('classification.'.length) : key;
            if (name in defined) expect(facts.classifications[name]).not.toBeUndefined();
          }
        }
      }),
      { numRuns: 1_000 },
    );
    // The property means something only if the generator reaches the interesting cases.
    expect(seen.matches).toBeGreaterThan(50);
    expect(seen.gated).toBeGreaterThan(10);
  });
});

describe('explainRules', () => {
  const { rules } = compile([
    rule({ human: '< 0.2', is_noreply: true }, [platform('archive')], { name: 'archive robots' }),
    rule({ urgent: true, from_domain: 'work.example' }, [platform('send_reply'), platform('flag')], {
      name: 'answer work',
      approval: true,
    }),
    rule({ size: '> 1000' }, [platform('flag')]),
  ]);

  it('shows each condition with the value it saw, a missing classification failing, and each action with its gate', () => {
    const facts = {
      classifications: { human: 0.1 },
      fields: { is_noreply: false, from_domain: 'work.example', size: 5000 },
    };
    const explained = explainRules(rules, facts, now);
    expect(explained.map((entry) => [entry.name, entry.conditionsHold, entry.match !== undefined])).toEqual([
      ['archive robots', false, false],
      ['answer work', false, false],
      ['automation 3', true, true],
    ]);
    expect(explained[0]?.conditions).toEqual([
      { key: 'human', text: 'human < 0.2', subject: 'classification', name: 'human', value: 0.1, holds: true },
      {
        key: 'is_noreply',
        text: 'is_noreply = true',
        subject: 'field',
        name: 'is_noreply',
        value: false,
        holds: false,
      },
    ]);
    expect(explained[1]?.conditions[0]).toEqual({
      key: 'urgent',
      text: 'urgent = true',
      subject: 'classification',
      name: 'urgent',
      value: undefined,
      holds: false,
      missing: true,
    });
    expect(explained[1]?.conditions[1]?.holds).toBe(true);
    expect(explained[1]?.actions.map((entry) => [entry.action.key, entry.allowed, entry.gate])).toEqual([
      ['send_reply', true, "cannot be undone; allowed only with a person's approval (approval: required)"],
      ['flag', true, "can be undone (read only); waits for a person's approval"],
    ]);
    expect(explained[2]?.match).toEqual(evaluateRules(rules, facts, now)[0]);
  });

  it('agrees with evaluateRules and with its own conditions on random rules and items (property)', () => {
    const seen = { grouped: 0, groupedMatches: 0, stopped: 0, paused: 0 };
    fc.assert(
      fc.property(scenario, ({ defined, actionTiers, scriptReversible, automations, paused, facts }) => {
        const { rules: compiled } = compileAutomations({
          automations,
          classifications: defined,
          fields: { f1: 'boolean', f2: 'string' },
          catalog: {
            platformActions: Object.fromEntries(Object.entries(actionTiers).map(([name, tier]) => [name, { tier }])),
            scripts: { s1: { reversible: scriptReversible } },
            service: () => ({ problem: 'no services' }),
          },
        });
        const options = { paused: (rule: { index: number }) => (paused.includes(rule.index) ? 'paused' : undefined) };
        const explained = explainRules(compiled, facts, now, options);
        expect(explained.flatMap((entry) => (entry.match ? [entry.match] : []))).toEqual(
          evaluateRules(compiled, facts, now, options),
        );
        let stopper: string | undefined;
        for (const entry of explained) {
          // The reference: walk `when:` as written, reading its tests in order from the explanation, in Kleene's
          // three values (a missing classification is unknown; only true holds).
          const source = automations[entry.index];
          let next = 0;
          const truth = (when: WhenConditions): 'true' | 'false' | 'unknown' => {
            const values = Object.entries(when).map(([key, value]): 'true' | 'false' | 'unknown' => {
              if (key === 'any' && Array.isArray(value)) {
                const any = (value as WhenConditions[]).map(truth);
                return any.includes('true') ? 'true' : any.includes('unknown') ? 'unknown' : 'false';
              }
              if (key === 'not' && value !== null && typeof value === 'object' && !Array.isArray(value)) {
                const inner = truth(value);
                return inner === 'unknown' ? 'unknown' : inner === 'true' ? 'false' : 'true';
              }
              const condition = entry.conditions[next++];
              return condition?.missing ? 'unknown' : condition?.holds ? 'true' : 'false';
            });
            return values.includes('false') ? 'false' : values.includes('unknown') ? 'unknown' : 'true';
          };
          expect(source).toBeDefined();
          expect(entry.conditionsHold).toBe(truth(source?.when ?? {}) === 'true');
          expect(next).toBe(entry.conditions.length);
          if (Object.keys(source?.when ?? {}).every((key) => key !== 'any' && key !== 'not')) {
            expect(entry.conditionsHold).toBe(entry.conditions.every((condition) => condition.holds));
          } else {
            seen.grouped += 1;
            if (entry.match) seen.groupedMatches += 1;
          }
          // `stop: true` on a rule that runs and holds: no later rule matches.
          expect(entry.stoppedBy).toBe(stopper);
          if (entry.stoppedBy !== undefined) seen.stopped += 1;
          expect(entry.paused !== undefined).toBe(paused.includes(entry.index));
          if (entry.paused !== undefined) seen.paused += 1;
          const runs = entry.paused === undefined && entry.stoppedBy === undefined;
          if (runs && entry.stop && entry.conditionsHold) stopper ??= entry.name;
          expect(entry.match !== undefined).toBe(
            runs && entry.conditionsHold && entry.actions.some((action) => action.allowed),
          );
          for (const condition of entry.conditions) {
            if (condition.missing) expect(condition.holds).toBe(false);
            if (condition.subject === 'classification' && facts.classifications[condition.name] === undefined) {
              expect(condition.missing).toBe(true);
            }
          }
          for (const action of entry.actions) {
            expect(action.allowed).toBe(actionAllowed(action.action, entry.provenance, entry.approval));
          }
        }
      }),
      { numRuns: 1_000 },
    );
    // The property means something only if the generator reaches control flow that matters.
    expect(seen.grouped).toBeGreaterThan(50);
    expect(seen.groupedMatches).toBeGreaterThan(5);
    expect(seen.stopped).toBeGreaterThan(5);
    expect(seen.paused).toBeGreaterThan(5);
  });
});
