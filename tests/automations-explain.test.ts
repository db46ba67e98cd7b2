// `assistant automations explain NOTE [--rule FILE]` with a real config, real notes made by the worker, real processes.
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { repoRoot, runCli } from './helpers/node-process.ts';
import { type TempDir, tempDir } from './helpers/temp-dir.ts';

const greeter = path.join(repoRoot, 'tests/fixtures/integrations/custom/greeter');
const config = `data_dir: ./data
integration_dirs: [${JSON.stringify(greeter)}]
memory: {consolidate: []} # memory has its own tests (tests/memory-worker.test.ts)
llms:
  default: {base_url: "http://127.0.0.1:11434/v1", model: m}
integrations:
  - type: greeter
    name: friendly
    platforms:
      cards:
        names: [Ada, Linus]
        friends: [Ada]
        automations:
          - name: hug friends
            when: {is_friend: true}
            then: hug
          - name: cards for close people
            when: {close: ">= 0.8"}
            then: send_card
            approval: required
          - name: formal cards
            when: {formal: true, name: Linus}
            then: wave
`;

const cli = (dir: TempDir, args: readonly string[]) => runCli(args, { cwd: dir.path });

describe('assistant automations explain', () => {
  it('prints each rule with the values it saw, what was done and what waits; --json; --rule dry runs and broken rule files', async () => {
    await using dir = await tempDir();
    await dir.write('config.yaml', config);
    expect((await cli(dir, ['trigger', 'friendly', 'cards'])).code).toBe(0);
    expect((await cli(dir, ['work', '--exit-when-idle'])).code).toBe(0);

    const ada = await cli(dir, ['automations', 'explain', 'greeter/friendly/ada.md']);
    expect(ada.stderr).toBe('');
    expect(ada.code).toBe(0);
    expect(ada.stdout).toContain(
      'greeter/friendly/ada.md: Ada\nan item of friendly/cards (greeter); rules from config.yaml',
    );
    expect(ada.stdout).toContain(
      '1. "hug friends": MATCHED (rule provenance)\n   holds: is_friend = true (field; saw true)\n',
    );
    expect(ada.stdout).toMatch(/ {3}action hug \[soft\]: can be undone \(soft\); taken at \S+ \(task [0-9a-z]{26}\)\n/);
    // The file as the dashboard shows it (relative to the data directory) names the same note.
    const shown = await cli(dir, ['automations', 'explain', 'notes/greeter/friendly/ada.md']);
    expect(shown.code).toBe(0);
    expect(shown.stdout).toContain('greeter/friendly/ada.md: Ada\n');
    expect(ada.stdout).toContain(
      '2. "cards for close people": MATCHED (llm provenance, approval required)\n   holds: close >= 0.8 (classification; saw 0.9)\n',
    );
    expect(ada.stdout).toMatch(
      /action send_card \[irreversible\]: cannot be undone; allowed only with a person's approval \(approval: required\); waiting for approval (ap-[0-9a-f]{12}) \(expires /,
    );
    // A classification the item lacks fails its condition, and says so.
    expect(ada.stdout).toContain(
      '3. "formal cards": not matched (hybrid provenance)\n   fails: formal = true (classification; the item has no classification `formal`, so it fails)\n   fails: name = Linus (field; saw "Ada")\n',
    );
    expect(ada.stdout).toMatch(/Approvals:\n {2}ap-[0-9a-f]{12} pending \(rule "cards for close people"\), expires /);

    const linus = await cli(dir, [
      'automations',
      'explain',
      path.join('data', 'notes', 'greeter', 'friendly', 'linus.md'),
      '--json',
    ]);
    expect(linus.code).toBe(0);
    const explained = JSON.parse(linus.stdout);
    expect(explained).toMatchObject({
      item: 'greeter/friendly/linus.md',
      platform: 'cards',
      rulesFrom: 'config',
      taken: [],
    });
    expect(
      explained.rules.map((rule: { name: string; match?: unknown }) => [rule.name, rule.match !== undefined]),
    ).toEqual([
      ['hug friends', false],
      ['cards for close people', false],
      ['formal cards', false],
    ]);
    expect(explained.rules[1].conditions[0]).toMatchObject({ text: 'close >= 0.8', value: 0.1, holds: false });

    // A dry run of a rule being written, instead of the configured ones.
    await dir.write(
      'draft.yaml',
      '- name: wave at Linus\n  when: {name: Linus}\n  then: wave\n- when: {close: "< 0.5"}\n  then: hug\n',
    );
    const dry = await cli(dir, ['automations', 'explain', 'greeter/friendly/linus.md', '--rule', 'draft.yaml']);
    expect(dry.code).toBe(0);
    expect(dry.stdout).toContain('rules from draft.yaml (a dry run)');
    expect(dry.stdout).toContain(
      '1. "wave at Linus": MATCHED (rule provenance)\n   holds: name = Linus (field; saw "Linus")\n',
    );
    expect(dry.stdout).toContain('action wave [read only]: can be undone (read only); would be taken');
    expect(dry.stdout).toContain('2. "automation 2": MATCHED (llm provenance)');
    expect(dry.stdout).not.toContain('hug friends');

    // A rule that does not compile: file, line and key, and a non-zero exit.
    await dir.write('broken.yaml', 'name: typo\nwhen:\n  is_frend: true\nthen: send_card\n');
    const broken = await cli(dir, ['automations', 'explain', 'greeter/friendly/ada.md', '--rule', 'broken.yaml']);
    expect(broken.code).toBe(2);
    expect(broken.stderr).toMatch(
      /^assistant: broken\.yaml has 1 problem:\nbroken\.yaml:3:3: when\.is_frend: `is_frend` is neither/,
    );
    await dir.write('bad-yaml.yaml', 'when: {name: Ada\nthen: hug\n');
    const unparsable = await cli(dir, ['automations', 'explain', 'greeter/friendly/ada.md', '--rule', 'bad-yaml.yaml']);
    expect(unparsable.code).toBe(2);
    expect(unparsable.stderr).toMatch(
      /^assistant: bad-yaml\.yaml has \d+ problems?:\nbad-yaml\.yaml:\d+:\d+: YAML syntax/,
    );
    await dir.write('irreversible.yaml', 'when: {close: ">= 0.5"}\nthen: send_card\n');
    const gated = await cli(dir, ['automations', 'explain', 'greeter/friendly/ada.md', '--rule', 'irreversible.yaml']);
    expect(gated.code).toBe(2);
    expect(gated.stderr).toMatch(
      /irreversible\.yaml:2:7: then: `send_card` cannot be undone, and this rule decides from the LLM's/,
    );

    // Not an item, no such note.
    await dir.write('data/notes/journal/today.md', '# today\n');
    const journal = await cli(dir, ['automations', 'explain', 'journal/today.md']);
    expect(journal.code).toBe(1);
    expect(journal.stderr).toBe(
      'assistant: journal/today.md is not an item of any platform: items live under greeter/friendly/\n',
    );
    const missing = await cli(dir, ['automations', 'explain', 'greeter/friendly/nobody.md']);
    expect(missing.stderr).toBe('assistant: there is no note greeter/friendly/nobody.md\n');
    expect(missing.code).toBe(1);
  });
});
