import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { compileAutomations, evaluateRules, itemFacts } from '@assistant/automations';
import type { Automation, Config } from '@assistant/config';
import { isAssistantError } from '@assistant/errors';
import type { ManifestPlatform } from '@assistant/manifests';
import { FileNoteStore } from '@assistant/notes';
import { openFileTaskQueue } from '@assistant/queue';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { ActionRegistry } from './action-registry.ts';
// approvals.ts first: it and enqueue-actions.ts import each other, and index.ts loads them in this order.
import { readApproval } from './approvals.ts';
import { enqueueActions } from './enqueue-actions.ts';
import { describeOutcome, explainItem, itemOf } from './explain-item.ts';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'assistant-explain-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

const platform = {
  classifications: { close: { prompt: 'close?', type: 'confidence' } },
  fields: { is_friend: { type: 'boolean', trusted: true }, name: 'string' },
  actions: { hug: { tier: 'soft' }, send_card: { tier: 'irreversible' }, wave: { tier: 'read_only' } },
} as unknown as ManifestPlatform;

const automations: Automation[] = [
  {
    name: 'hug friends',
    when: { is_friend: true },
    actions: [{ kind: 'platform', action: 'hug', yolo: false }],
    approval: false,
  },
  {
    name: 'cards for close people',
    when: { close: '>= 0.8' },
    actions: [{ kind: 'platform', action: 'send_card', yolo: false }],
    approval: true,
  },
  {
    name: 'wave when tense',
    when: { tense: true },
    actions: [{ kind: 'platform', action: 'wave', yolo: false }],
    approval: false,
  },
];

const config = {
  scripts: {},
  integrations: [{ type: 'greeter', name: 'friendly', platforms: { cards: { classifications: {}, automations } } }],
} as unknown as Pick<Config, 'scripts' | 'integrations'>;

const rules = compileAutomations({
  automations: automations.slice(0, 2),
  classifications: { close: { prompt: 'close?', type: 'confidence' } },
  fields: { is_friend: 'boolean', name: 'string' },
  trustedFields: ['is_friend'],
  catalog: {
    platformActions: { hug: { tier: 'soft' }, send_card: { tier: 'irreversible' }, wave: { tier: 'read_only' } },
    scripts: {},
    service: () => ({ problem: 'none' }),
  },
}).rules;

const registry: ActionRegistry = {
  integrations: [],
  taskType: () => undefined,
  instance: (name) =>
    name === 'friendly' ? { name, domain: 'greeter', platforms: { cards: {}, people: {} } } : undefined,
  instances: () => [{ name: 'friendly', domain: 'greeter', platforms: { cards: {}, people: {} } }],
  instanceForTask: () => ({ ok: false, message: 'none' }),
  manifestPlatform: (domain, name) =>
    domain === 'greeter' && (name === 'cards' || name === 'people') ? platform : undefined,
  automations: (instance, name) => (instance === 'friendly' && name === 'cards' ? rules : []),
};

describe('explainItem', () => {
  it('explains each configured rule over the facts the worker reads, and what became of each action', async () => {
    const notes = new FileNoteStore({ root: path.join(dir, 'notes') });
    const queue = await openFileTaskQueue({ directory: path.join(dir, 'queue') });
    const notePath = 'greeter/friendly/ada.md';
    await notes.create(notePath, { data: { name: 'Ada', is_friend: true, classifications: { close: 0.9 } } });
    const data = (await notes.read(notePath))?.data as Record<string, unknown>;
    // What the evaluate stage does: the same rules, the same facts.
    await enqueueActions({
      notes,
      queue,
      instance: 'friendly',
      domain: 'greeter',
      platform: 'cards',
      notePath,
      title: 'Ada',
      matches: evaluateRules(rules, itemFacts(platform, data)),
      approvalExpiresMs: 60_000,
    });

    const explained = await explainItem({ registry, config, notes, notePath });
    expect(explained).toMatchObject({ instance: 'friendly', platform: 'cards', title: 'Ada', rulesFrom: 'config' });
    expect(explained.facts).toEqual({ classifications: { close: 0.9 }, fields: { is_friend: true, name: 'Ada' } });
    expect(explained.rules.map((rule) => [rule.name, rule.provenance, rule.conditionsHold])).toEqual([
      ['hug friends', 'rule', true],
      ['cards for close people', 'llm', true],
    ]);
    expect(explained.rules[0]?.conditions[0]).toMatchObject({ text: 'is_friend = true', value: true, holds: true });
    expect(explained.rules[0]?.actions[0]?.outcome).toMatchObject({ state: 'taken', rule: 'hug friends' });
    const waiting = explained.rules[1]?.actions[0]?.outcome;
    expect(waiting).toMatchObject({ state: 'waiting', approval: expect.stringMatching(/^ap-[0-9a-f]{12}$/) });
    expect(explained.approvals).toEqual([
      expect.objectContaining({ status: 'pending', rule: 'cards for close people' }),
    ]);
    expect(explained.taken.map((entry) => entry.action)).toEqual(['hug']);
    expect((await readApproval(notes, explained.approvals[0]?.id ?? ''))?.item).toBe(notePath);
  });

  it('says an action is not due when its instance is disabled: nothing is evaluated there', async () => {
    const notes = new FileNoteStore({ root: path.join(dir, 'notes') });
    const notePath = 'greeter/friendly/ada.md';
    await notes.create(notePath, { data: { name: 'Ada', is_friend: true, classifications: { close: 0.9 } } });
    const enabled = await explainItem({ registry, config, notes, notePath });
    expect(describeOutcome(enabled.rules[0]?.actions[0]?.outcome ?? { state: 'none' }, 'hug friends')).toBe(
      'not taken yet: the next evaluation takes it',
    );
    const disabledConfig = {
      scripts: {},
      integrations: [
        {
          type: 'greeter',
          name: 'friendly',
          enabled: false,
          platforms: { cards: { classifications: {}, automations } },
        },
      ],
    } as unknown as Pick<Config, 'scripts' | 'integrations'>;
    const disabled = await explainItem({ registry, config: disabledConfig, notes, notePath });
    const outcomes = disabled.rules.map((rule) =>
      describeOutcome(rule.actions[0]?.outcome ?? { state: 'none' }, rule.name),
    );
    expect(outcomes).toEqual([
      'not taken: instance friendly is disabled (enabled: false), so nothing is evaluated until it is enabled',
      'not asked: instance friendly is disabled (enabled: false), so nothing is evaluated until it is enabled',
    ]);
  });

  it('a missing classification fails its condition; a dry run compiles the given rules and reports their problems', async () => {
    const notes = new FileNoteStore({ root: path.join(dir, 'notes') });
    const notePath = 'greeter/friendly/linus.md';
    await notes.create(notePath, { data: { name: 'Linus', is_friend: false, platform: 'cards' } });
    const explained = await explainItem({ registry, config, notes, notePath });
    expect(explained.rules[1]?.conditions[0]).toMatchObject({ name: 'close', missing: true, holds: false });
    expect(explained.rules[1]?.actions[0]?.outcome).toEqual({ state: 'none' });

    const dry = await explainItem({
      registry,
      config,
      notes,
      notePath,
      dryRun: { file: 'rule.yaml', automations: [automations[0] as Automation, automations[2] as Automation] },
    });
    expect(dry.rulesFrom).toEqual({ file: 'rule.yaml' });
    expect(dry.rules.map((rule) => rule.name)).toEqual(['hug friends']);
    expect(dry.problems).toEqual([
      expect.objectContaining({
        index: 1,
        path: ['when', 'tense'],
        message: expect.stringContaining('`tense` is neither'),
      }),
    ]);
  });

  it('says clearly when a note is not an item, is missing, or could be of several platforms', async () => {
    const notes = new FileNoteStore({ root: path.join(dir, 'notes') });
    await notes.create('journal/today.md', { data: {} });
    const refused = await explainItem({ registry, config, notes, notePath: 'journal/today.md' }).catch(
      (error) => error,
    );
    expect(isAssistantError(refused, 'BAD_REQUEST')).toBe(true);
    expect(refused.message).toBe('journal/today.md is not an item of any platform: items live under greeter/friendly/');
    const missing = await explainItem({ registry, config, notes, notePath: 'greeter/friendly/x.md' }).catch(
      (error) => error,
    );
    expect(isAssistantError(missing, 'NOT_FOUND')).toBe(true);
    expect(itemOf({ registry, config }, 'greeter/friendly/x.md', {})).toMatchObject({ platform: 'cards' });
    const both = {
      integrations: [
        { type: 'greeter', name: 'friendly', platforms: { cards: { automations: [1] }, people: { automations: [1] } } },
      ],
    } as never;
    expect(itemOf({ registry, config: both }, 'greeter/friendly/x.md', {})).toEqual({
      notItem:
        "greeter/friendly/x.md may be an item of any of friendly's platforms cards, people: say which (--platform)",
    });
    expect(itemOf({ registry, config: both }, 'greeter/friendly/x.md', {}, 'people')).toMatchObject({
      platform: 'people',
    });
  });
});
