import { describe, expect, it } from 'vitest';
import { parseAutomations } from './parse-automations.ts';
import { formatProblem } from './problems.ts';

describe('parseAutomations', () => {
  it('reads one automation or a list, normalised as config.yaml reads them, with !yolo', () => {
    const one = parseAutomations({ file: 'rule.yaml', text: 'name: a\nwhen: {human: "> 0.5"}\nthen: archive\n' });
    expect(one.errors).toEqual([]);
    expect(one.automations).toEqual([
      {
        name: 'a',
        when: { human: '> 0.5' },
        actions: [{ kind: 'platform', action: 'archive', yolo: false }],
        approval: false,
      },
    ]);
    const list = parseAutomations({
      file: 'rules.yaml',
      text: '- when: {is_noreply: true}\n  then: !yolo send_reply\n- when: {x: 1}\n  then: [{move: Bills}]\n  approval: required\n',
    });
    expect(list.errors).toEqual([]);
    expect(list.automations?.map((automation) => [automation.actions[0], automation.approval])).toEqual([
      [{ kind: 'platform', action: 'send_reply', yolo: true }, false],
      [{ kind: 'platform', action: 'move', argument: 'Bills', yolo: false }, true],
    ]);
  });

  it('reports bad keys and values with file, line and key, and locates later problems too', () => {
    const bad = parseAutomations({
      file: 'rules.yaml',
      text: '- when: {a: 1}\n  then: archive\n- when: {b: 2}\n  thn: flag\n',
    });
    expect(bad.automations).toBeUndefined();
    expect(bad.errors.map(formatProblem)).toEqual([
      'rules.yaml:3:3: [1].then: unexpected nothing',
      'rules.yaml:4:3: [1].thn: unknown key `thn`\n  hint: did you mean `then`?',
    ]);
    const good = parseAutomations({ file: 'rule.yaml', text: 'when:\n  humn: 0.5\nthen: archive\n' });
    expect(formatProblem(good.locate(0, ['when', 'humn'], { message: 'no such thing', at: 'key' }))).toBe(
      'rule.yaml:2:3: when.humn: no such thing',
    );
    expect(parseAutomations({ file: 'x.yaml', text: 'just text\n' }).errors[0]?.message).toMatch(
      /expected one automation/,
    );
    expect(
      parseAutomations({ file: 'x.yaml', text: 'when: {a: !secret s}\nthen: archive\n' }).errors[0]?.message,
    ).toMatch(/no place in a rule/);
    expect(
      formatProblem(
        parseAutomations({ file: 'x.yaml', text: 'when: [\n' }).errors[0] ?? {
          severity: 'error',
          file: '',
          path: [],
          message: '',
        },
      ),
    ).toMatch(/^x\.yaml:\d+:\d+: YAML syntax/);
  });

  it('reads `stop:`, `any:` and `not:`, and names the file, line and key of each one written wrong', () => {
    const good = parseAutomations({
      file: 'rule.yaml',
      text: 'when:\n  any:\n    - {human: "> 0.5"}\n    - not: {is_noreply: true}\nthen: archive\nstop: true\n',
    });
    expect(good.errors).toEqual([]);
    expect(good.automations?.[0]).toMatchObject({
      when: { any: [{ human: '> 0.5' }, { not: { is_noreply: true } }] },
      stop: true,
    });
    const problems = (text: string) => parseAutomations({ file: 'rule.yaml', text }).errors.map(formatProblem);
    expect(problems('when:\n  any: {human: 1}\nthen: archive\n')).toEqual([
      expect.stringMatching(/^rule\.yaml:2:8: when\.any: `any:` needs a list of condition maps/),
    ]);
    expect(problems('when:\n  not: [1]\nthen: archive\n')).toEqual([
      expect.stringMatching(/^rule\.yaml:2:8: when\.not: `not:` needs one condition map/),
    ]);
    expect(problems('when:\n  human: {a: 1}\nthen: archive\n')).toEqual([
      expect.stringMatching(/^rule\.yaml:2:10: when\.human: `human` is tested against a value .*not a condition map/),
    ]);
    expect(problems('when:\n  any:\n    - {}\nthen: archive\n')).toEqual([
      expect.stringMatching(/^rule\.yaml:3:7: when\.any\[0\]: an `any:` entry needs at least one condition/),
    ]);
    expect(problems('when: {a: 1}\nthen: archive\nstop: yes\n')).toEqual([
      expect.stringMatching(/^rule\.yaml:3:7: stop: `stop` is true or false, got `"yes"`/),
    ]);
  });
});
