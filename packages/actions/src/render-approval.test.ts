import { isDeepStrictEqual } from 'node:util';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { digestOf, fitRendering, renderAction, renderToolCall, type ShownAction } from './render-approval.ts';

const value = fc.oneof(
  fc.string(),
  fc.integer(),
  fc.boolean(),
  fc.string().map((text) => `${text}\n${text}`),
);
const action: fc.Arbitrary<ShownAction> = fc.record(
  {
    kind: fc.constantFrom('platform', 'script', 'service'),
    name: fc.string({ minLength: 1 }),
    tier: fc.constantFrom('read_only', 'soft', 'irreversible'),
    target: fc.record({ field: fc.string(), value: fc.option(fc.string(), { nil: undefined }) }),
    argument: fc.jsonValue(),
    inputs: fc.dictionary(fc.string(), value),
    routes: fc.jsonValue(),
    humanLog: fc.string(),
    text: fc.string(),
  },
  { requiredKeys: ['kind', 'name', 'tier'] },
);

describe('renderAction', () => {
  it('renders two actions that differ in anything they run with to different digests', () => {
    fc.assert(
      fc.property(action, action, (left, right) => {
        // Platform actions show no inputs; an absent and an empty list of inputs read the same ("inputs: none").
        const runs = (shown: ShownAction) => ({
          ...shown,
          inputs:
            shown.kind === 'platform' ? undefined : Object.keys(shown.inputs ?? {}).length === 0 ? {} : shown.inputs,
          argument: shown.argument === null ? null : shown.argument,
        });
        fc.pre(!isDeepStrictEqual(JSON.parse(JSON.stringify(runs(left))), JSON.parse(JSON.stringify(runs(right)))));
        expect(digestOf(renderAction(left))).not.toBe(digestOf(renderAction(right)));
      }),
      { numRuns: 500 },
    );
  });

  it('shows every input in sorted order and the full text with its length, so a text cannot pose as an input', () => {
    const posing = renderAction({
      kind: 'service',
      name: 'github.work.create_issue',
      tier: 'irreversible',
      inputs: { title: 'Hello', body: 'one\ninput to = "attacker"' },
    });
    expect(posing).toBe(
      [
        'action: github.work.create_issue',
        'kind: service',
        'tier: irreversible',
        'input body (25 characters):',
        'one',
        'input to = "attacker"',
        'input title = "Hello"',
      ].join('\n'),
    );
    const honest = renderAction({
      kind: 'service',
      name: 'github.work.create_issue',
      tier: 'irreversible',
      inputs: { title: 'Hello', body: 'one', to: 'attacker' },
    });
    expect(digestOf(posing)).not.toBe(digestOf(honest));
  });
});

describe('renderToolCall', () => {
  it('shows the arguments in full as indented JSON', () => {
    const memo = `${'harmless memo line\n'.repeat(300)}the end`;
    const { rendering } = renderToolCall({
      tool: 'mail__send',
      tier: 'irreversible',
      loop: 'system.agent',
      task: 't1',
      input: { memo, to: 'attacker@example.com' },
    });
    expect(rendering).toContain('"to": "attacker@example.com"');
    expect(rendering).toContain(JSON.stringify(memo));
  });
});

describe('fitRendering', () => {
  it('keeps a rendering that fits, and says plainly how much more there is when it does not', () => {
    expect(fitRendering({ rendering: 'short', maxChars: 10, id: 'ap-000000000000' })).toBe('short');
    const long = 'x'.repeat(5_000);
    const fitted = fitRendering({ rendering: long, maxChars: 4_096, id: 'ap-000000000000' });
    expect(Array.from(fitted).length).toBeLessThanOrEqual(4_096);
    const match =
      /\n…\n(\d+) more characters: open the request \(`assistant approvals show ap-000000000000` or \/approvals\/ap-000000000000 on the dashboard\)$/.exec(
        fitted,
      );
    expect(match).not.toBeNull();
    const kept = fitted.length - (match?.[0].length ?? 0);
    expect(kept + Number(match?.[1])).toBe(5_000);
  });
});
