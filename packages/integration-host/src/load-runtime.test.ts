import { cp, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ConfigError } from '@assistant/config';
import { discoverIntegrations, ManifestError } from '@assistant/manifests';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ignoredPackageIntegrations, loadRuntime } from './load-runtime.ts';
import { installation } from './testing/installation.ts';

const fixtures = fileURLToPath(new URL('../../../tests/fixtures/integrations/', import.meta.url));

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'assistant-runtime-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** A config directory with the greeter fixture as a custom folder and the weather fixture as an npm package. */
async function setup(config: string): Promise<string> {
  await cp(path.join(fixtures, 'custom'), path.join(dir, 'my-integrations'), { recursive: true });
  await mkdir(path.join(dir, 'node_modules'), { recursive: true });
  await cp(
    path.join(fixtures, 'package', 'assistant-integration-weather'),
    path.join(dir, 'node_modules', 'assistant-integration-weather'),
    { recursive: true },
  );
  const configPath = path.join(dir, 'config.yaml');
  await writeFile(configPath, config);
  return configPath;
}

const twoInstances = `integration_dirs: [./my-integrations]
integration_packages: [assistant-integration-weather]
integrations:
  - type: greeter
    name: friendly
    platforms:
      people:
        names: [Ada, Grace]
  - type: greeter
    name: loud
    shout: true
    greeting: Hey
    platforms:
      people:
        enabled: false
  - type: weather
    name: home
    city: Lisbon
    schedule: {every: 30m}
`;

describe('loadRuntime', () => {
  it('finds builtin, custom-folder and npm-package integrations and their task types', async () => {
    const configPath = await setup(twoInstances);
    const { registry, integrations } = await loadRuntime({ installation, configPath, cwd: dir });
    expect(integrations.map((integration) => [integration.manifest.domain, integration.origin])).toEqual([
      ['chat', 'builtin'],
      ['email', 'builtin'],
      ['github', 'builtin'],
      ['greeter', 'custom'],
      ['mailbox', 'custom'],
      ['memory', 'builtin'],
      ['research', 'builtin'],
      ['script', 'builtin'],
      ['system', 'builtin'],
      ['weather', 'package'],
    ]);
    expect(registry.taskTypes().map((info) => info.type)).toEqual([
      'chat.notify',
      'chat.turn',
      'chat.webhook',
      'email.inbox.act',
      'email.inbox.check',
      'email.inbox.classify',
      'email.inbox.collect',
      'email.inbox.evaluate',
      'github.issues.act',
      'github.issues.check',
      'github.issues.classify',
      'github.issues.collect',
      'github.issues.evaluate',
      'github.pull_requests.act',
      'github.pull_requests.check',
      'github.pull_requests.classify',
      'github.pull_requests.collect',
      'github.pull_requests.evaluate',
      'greeter.cards.act',
      'greeter.cards.check',
      'greeter.cards.evaluate',
      'greeter.people.check',
      'greeter.people.greet',
      'mailbox.inbox.check',
      'memory.consolidate',
      'memory.due.check',
      'memory.reindex',
      'script.run',
      'service.github.create_issue',
      'service.greeter.compose',
      'service.greeter.impostor',
      'service.greeter.post_card',
      'service.research.web',
      'system.agent',
      'system.echo',
      'system.housekeeping.run',
      'system.pause',
      'system.sleep',
      'system.workflow',
      'weather.forecast.fetch',
    ]);
    expect(registry.taskType('greeter.people.check')).toMatchObject({ kind: 'stage', entry: true, priority: 3 });
    const handlers = await registry.loadHandlers();
    expect([...handlers.keys()].sort()).toEqual(registry.taskTypes().map((info) => info.type));
  });

  it('validates instance settings with the manifest schema and applies its defaults', async () => {
    const configPath = await setup(twoInstances);
    const { registry } = await loadRuntime({ installation, configPath, cwd: dir });
    expect(registry.instance('friendly')?.settings).toEqual({ greeting: 'Hello' });
    expect(registry.instance('loud')?.settings).toEqual({ greeting: 'Hey', shout: true });
    expect(registry.instance('friendly')?.platforms.people?.settings).toEqual({ names: ['Ada', 'Grace'] });
    // The builtin system integration runs without being listed, on its default schedule.
    expect(registry.instance('system')).toMatchObject({ domain: 'system', configured: false, enabled: true });
  });

  it('reports a typo in an integration setting as a config error with file, line and a suggestion', async () => {
    const configPath = await setup(
      'integration_dirs: [./my-integrations]\nintegration_packages: [assistant-integration-weather]\nintegrations:\n  - type: greeter\n    name: friendly\n    greting: Hi\n  - type: weather\n    name: home\n',
    );
    const error = await loadRuntime({ installation, configPath, cwd: dir }).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(ConfigError);
    const lines = (error as ConfigError).problems.map(
      (problem) => `${problem.position?.line} ${problem.message} ${problem.hint ?? ''}`,
    );
    expect(lines).toEqual([
      expect.stringMatching(/^6 unknown key `greting` .*did you mean `greeting`/),
      expect.stringMatching(/^7 .*city/),
    ]);
  });

  it('checks automations against the manifest: keys, values, actions and the irreversible gate, each at its line', async () => {
    const configPath = await setup(`integration_dirs: [./my-integrations]
integration_packages: [assistant-integration-weather]
llms:
  default: {base_url: "http://127.0.0.1:11434/v1", model: m}
integrations:
  - type: greeter
    name: friendly
    platforms:
      people:
        classifications:
          close: "is this a close friend?"
        automations:
          - when: {clsoe: 0.8}
            then: wave
          - when: {close: ">= 0.8"}
            then: send_card
          - when: {is_friend: true}
            then: [wave, dance]
          - when: {close: ">= 0.8"}
            then: send_card
            approval: required
          - when: {is_friend: true}
            then: send_card
  - type: weather
    name: home
    city: Lisbon
`);
    const error = await loadRuntime({ installation, configPath, cwd: dir }).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(ConfigError);
    expect(
      (error as ConfigError).problems.map(
        (problem) => `${problem.position?.line}:${problem.position?.col} ${problem.message}`,
      ),
    ).toEqual([
      '13:20 `clsoe` is neither a classification of this platform nor one of its fields',
      "16:19 `send_card` cannot be undone, and this rule decides from the LLM's classifications (llm)",
      '18:26 `dance` is not an action of this platform',
    ]);
  });

  it('hole 6: email rules over facts the sender controls need approval or !yolo to unsubscribe; trusted ones do not', async () => {
    const rules = `  - type: email
    name: local
    maildir: ./Maildir
    platforms:
      inbox:
        automations:
          - {name: by header, when: {has_list_unsubscribe: true}, then: unsubscribe}
          - {name: by header with yolo, when: {has_list_unsubscribe: true}, then: !yolo unsubscribe}
          - {name: by flag, when: {flags: "\\\\Flagged", authentication: pass}, then: unsubscribe}
`;
    const configPath = await setup(`integrations:\n${rules}`);
    const error = await loadRuntime({ installation, configPath, cwd: dir }).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).problems.map((problem) => `${problem.position?.line} ${problem.message}`)).toEqual([
      '8 `unsubscribe` cannot be undone, and this rule tests facts the sender controls (`has_list_unsubscribe`), so it is not deterministic (hybrid)',
    ]);
    await writeFile(configPath, `integrations:\n${rules.replace(/^ {10}- \{name: by header, when.*\n/m, '')}`);
    const { registry } = await loadRuntime({ installation, configPath, cwd: dir });
    expect(registry.automations('local', 'inbox').map((rule) => [rule.name, rule.provenance])).toEqual([
      ['by header with yolo', 'hybrid'],
      ['by flag', 'rule'],
    ]);
  });

  it('gives the registry the compiled rules of each platform', async () => {
    const configPath = await setup(
      'integration_dirs: [./my-integrations]\nintegration_packages: [assistant-integration-weather]\nintegrations:\n  - type: greeter\n    name: friendly\n    platforms:\n      people:\n        automations:\n          - {when: {is_friend: true}, then: send_card}\n  - {type: weather, name: home, city: Lisbon}\n',
    );
    const { registry } = await loadRuntime({ installation, configPath, cwd: dir });
    expect(registry.automations('friendly', 'people')).toMatchObject([
      {
        name: 'automation 1',
        provenance: 'rule',
        actions: [{ kind: 'platform', name: 'send_card', tier: 'irreversible' }],
      },
    ]);
    expect(registry.automations('home', 'forecast')).toEqual([]);
  });

  it("extends the manifest's built-in classifications with the instance's own", async () => {
    const configPath = await setup(`integration_dirs: [./my-integrations]
integration_packages: [assistant-integration-weather]
llms:
  default: {base_url: "http://127.0.0.1:11434/v1", model: m}
integrations:
  - type: greeter
    name: friendly
    platforms:
      cards:
        classifications:
          formal: "should this card be formal? (asked our way)"
          funny: {prompt: "would a joke land?", type: boolean}
        automations:
          - {when: {close: ">= 0.9", funny: true}, then: hug}
  - {type: weather, name: home, city: Lisbon}
`);
    const { registry } = await loadRuntime({ installation, configPath, cwd: dir });
    expect(registry.instance('friendly')?.platforms.cards?.classifications).toEqual({
      close: { prompt: 'is this person close to the owner?', type: 'confidence' },
      formal: { prompt: 'should this card be formal? (asked our way)', type: 'confidence' },
      funny: { prompt: 'would a joke land?', type: 'boolean' },
    });
    expect(registry.automations('friendly', 'cards')).toMatchObject([
      { provenance: 'llm', actions: [{ name: 'hug' }] },
    ]);
  });

  it('loads the repository default config.yaml with every manifest, without errors or warnings', async () => {
    const repositoryConfig = fileURLToPath(new URL('../../../config.yaml', import.meta.url));
    const { warnings, registry } = await loadRuntime({ installation, configPath: repositoryConfig, cwd: dir });
    expect(warnings).toEqual([]);
    expect(registry.instance('personal')).toMatchObject({ domain: 'email', enabled: false });
  });

  it('hole 10: loads only the npm packages config.yaml lists in integration_packages', async () => {
    // A package that merely sits in node_modules (a transitive dependency) and declares a manifest.
    const sneaky = path.join(dir, 'node_modules', 'sneaky-dependency');
    await mkdir(path.join(sneaky, 'src'), { recursive: true });
    await writeFile(
      path.join(sneaky, 'package.json'),
      JSON.stringify({ name: 'sneaky-dependency', type: 'module', assistant: { manifest: './manifest.yaml' } }),
    );
    await writeFile(
      path.join(sneaky, 'manifest.yaml'),
      'domain: sneaky\ntasks:\n  steal: {handler: ./src/steal.js#steal}\n',
    );
    await writeFile(path.join(sneaky, 'src', 'steal.js'), 'export async function steal() { return 1; }\n');
    // A scoped package the owner did list.
    const scoped = path.join(dir, 'node_modules', '@someone', 'hello');
    await mkdir(scoped, { recursive: true });
    await writeFile(
      path.join(scoped, 'package.json'),
      JSON.stringify({ name: '@someone/hello', assistant: { manifest: './manifest.yaml' } }),
    );
    await writeFile(path.join(scoped, 'manifest.yaml'), 'domain: hello\n');
    // A package without a manifest.
    await mkdir(path.join(dir, 'node_modules', 'left-pad'), { recursive: true });
    await writeFile(path.join(dir, 'node_modules', 'left-pad', 'package.json'), '{"name": "left-pad"}');

    const configPath = await setup('integration_packages: ["@someone/hello", assistant-integration-weather]\n');
    const { integrations, config } = await loadRuntime({ installation, configPath, cwd: dir });
    const domains = integrations.map((integration) => [integration.manifest.domain, integration.origin]);
    expect(domains).toContainEqual(['hello', 'package']);
    expect(domains).toContainEqual(['weather', 'package']);
    expect(domains.map(([domain]) => domain)).not.toContain('sneaky');
    expect(config.integrationPackages).toEqual(['@someone/hello', 'assistant-integration-weather']);
    // `assistant doctor` names what it ignored.
    expect(await ignoredPackageIntegrations(config, installation)).toEqual(['sneaky-dependency']);

    await writeFile(configPath, 'integrations: []\n');
    const unlisted = await loadRuntime({ installation, configPath, cwd: dir });
    expect(unlisted.integrations.map((integration) => integration.origin)).not.toContain('package');

    await writeFile(configPath, 'integration_packages: [assistant-not-installed]\n');
    await expect(loadRuntime({ installation, configPath, cwd: dir })).rejects.toThrow(
      /integration_packages: package `assistant-not-installed` is not installed/,
    );
    await writeFile(configPath, 'integration_packages: [left-pad]\n');
    await expect(loadRuntime({ installation, configPath, cwd: dir })).rejects.toThrow(
      /integration_packages: package `left-pad` .*declares no manifest/,
    );
    await writeFile(configPath, 'integration_packages: ["../outside"]\n');
    await expect(loadRuntime({ installation, configPath, cwd: dir })).rejects.toThrow(
      /integration_packages: `..\/outside` is not/,
    );
  });

  it('refuses an unknown integration type', async () => {
    const configPath = await setup('integrations:\n  - type: wether\n    name: home\n');
    const error = await loadRuntime({ installation, configPath, cwd: dir }).catch((caught: unknown) => caught);
    expect(String((error as Error).message)).toMatch(
      /config\.yaml:2:\d+: integrations\[0\]\.type: unknown integration type `wether`/,
    );
  });

  it('routes tasks to the instance they name, and triggers only enabled platforms', async () => {
    const configPath = await setup(twoInstances);
    const { registry } = await loadRuntime({ installation, configPath, cwd: dir });
    expect(registry.instanceForTask({ type: 'greeter.people.greet', integration: 'loud' })).toMatchObject({
      ok: true,
      instance: { name: 'loud' },
    });
    expect(registry.instanceForTask({ type: 'greeter.people.greet', integration: 'home' })).toMatchObject({
      ok: false,
    });
    expect(registry.instanceForTask({ type: 'greeter.people.greet' })).toMatchObject({
      ok: false,
      message: expect.stringContaining('2 greeter instances'),
    });
    expect(registry.instanceForTask({ type: 'weather.forecast.fetch' })).toMatchObject({
      ok: true,
      instance: { name: 'home' },
    });
    expect(registry.entryTask('friendly', 'people')).toEqual({
      ok: true,
      type: 'greeter.people.check',
      priority: 3,
      integration: 'friendly',
      payload: null,
    });
    expect(registry.entryTask('loud', 'people')).toMatchObject({ ok: false, status: 409 });
    expect(registry.entryTask('nobody', 'people')).toMatchObject({ ok: false, status: 404 });
    expect(registry.entryTask('friendly', 'robots')).toMatchObject({ ok: false, status: 404 });
    expect(
      registry.scheduledInstances().map((job) => [job.instance.name, job.entries.map((entry) => entry.type)]),
    ).toEqual([
      ['home', ['weather.forecast.fetch']],
      ['memory', ['memory.due.check']],
      ['system', ['system.housekeeping.run']],
    ]);
  });
});

describe('manifests', () => {
  async function integration(name: string, manifest: string, files: Record<string, string> = {}) {
    const folder = path.join(dir, 'custom', name);
    await mkdir(path.join(folder, 'src'), { recursive: true });
    await writeFile(path.join(folder, 'manifest.yaml'), manifest);
    for (const [file, text] of Object.entries(files)) await writeFile(path.join(folder, file), text);
  }
  const discover = () =>
    discoverIntegrations({ builtinDir: path.join(dir, 'none'), customDirs: [path.join(dir, 'custom')], cwd: dir });

  it('reports every problem of a manifest with file, line and key', async () => {
    await integration(
      'broken',
      'domain: broken\nplatforms:\n  inbox:\n    entry: chek\n    stages:\n      check: {handler: ./src/a.ts#check}\n    colour: red\n',
    );
    const error = await discover().catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(ManifestError);
    expect((error as ManifestError).message.split('\n').slice(1)).toEqual([
      'custom/broken/manifest.yaml:7:5: platforms.inbox.colour: unknown key `colour`',
      'custom/broken/manifest.yaml:4:5: platforms.inbox.entry: entry stage `chek` is not one of the stages (check)',
    ]);
  });

  it('reports an entry stage that is not a stage', async () => {
    await integration(
      'broken',
      'domain: broken\nplatforms:\n  inbox:\n    entry: chek\n    stages:\n      check: {handler: ./src/a.ts#check}\n',
    );
    await expect(discover()).rejects.toThrow(
      /manifest\.yaml:4:\d+: platforms\.inbox\.entry: entry stage `chek` is not one of the stages \(check\)/,
    );
  });

  it('fails to load handlers that do not exist, naming the manifest and the line', async () => {
    await integration(
      'hello',
      'domain: hello\ntasks:\n  one: {handler: ./src/one.ts#one}\n  two: {handler: ./src/one.ts#twoo}\n  three: {handler: ./src/missing.ts#three}\n  four: {handler: ./src/one.ts#value}\n',
      {
        'src/one.ts':
          'export async function one() { return 1; }\nexport async function two() { return 2; }\nexport const value = 4;\n',
      },
    );
    const configPath = path.join(dir, 'config.yaml');
    await writeFile(configPath, 'integration_dirs: [./custom]\n');
    const { registry } = await loadRuntime({ installation, configPath, cwd: dir });
    const error = await registry.loadHandlers().catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(ManifestError);
    expect((error as ManifestError).message.split('\n').slice(1)).toEqual([
      'custom/hello/manifest.yaml:6:10: tasks.four.handler: `value` in ./src/one.ts is a number, not a handler function',
      'custom/hello/manifest.yaml:5:11: tasks.three.handler: ./src/missing.ts does not exist',
      'custom/hello/manifest.yaml:4:9: tasks.two.handler: ./src/one.ts exports no `twoo` (it exports: one, two)',
    ]);
  });

  it('imports a handler on first use only, and checks at start only that its module exists', async () => {
    // Importing one.ts leaves a mark in the process: the proof that it was (or was not yet) imported.
    await integration(
      'lazy',
      'domain: lazy\ntasks:\n  one: {handler: ./src/one.ts#one}\n  two: {handler: ./src/one.ts#twoo}\n',
      {
        'src/one.ts':
          'globalThis.lazyImports = (globalThis.lazyImports ?? 0) + 1;\nexport async function one() { return 1; }\n',
      },
    );
    const configPath = path.join(dir, 'config.yaml');
    await writeFile(configPath, 'integration_dirs: [./custom]\n');
    const { registry } = await loadRuntime({ installation, configPath, cwd: dir });
    const imports = () => (globalThis as { lazyImports?: number }).lazyImports ?? 0;
    const before = imports();
    await registry.checkHandlerModules();
    expect(imports()).toBe(before);
    expect(await registry.handler('lazy.one')).toBeTypeOf('function');
    expect(imports()).toBe(before + 1);
    // The broken export is found when its type is first asked for, at the manifest's line; the module is not
    // imported again.
    await expect(registry.handler('lazy.two')).rejects.toThrow(
      /custom\/lazy\/manifest\.yaml:4:9: tasks\.two\.handler: \.\/src\/one\.ts exports no `twoo` \(it exports: one\)/,
    );
    expect(imports()).toBe(before + 1);
    expect(await registry.handler('lazy.unknown')).toBeUndefined();
  });

  it('refuses at start a handler module that does not exist, without importing the others', async () => {
    await integration(
      'gone',
      'domain: gone\ntasks:\n  one: {handler: ./src/one.ts#one}\n  two: {handler: ./src/missing.ts#two}\n',
      { 'src/one.ts': 'throw new Error("imported at start");\n' },
    );
    const configPath = path.join(dir, 'config.yaml');
    await writeFile(configPath, 'integration_dirs: [./custom]\n');
    const { registry } = await loadRuntime({ installation, configPath, cwd: dir });
    const error = await registry.checkHandlerModules().catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(ManifestError);
    expect((error as ManifestError).message.split('\n').slice(1)).toEqual([
      'custom/gone/manifest.yaml:4:9: tasks.two.handler: ./src/missing.ts does not exist',
    ]);
    await expect(registry.handler('gone.one')).rejects.toThrow(/\.\/src\/one\.ts cannot be loaded: imported at start/);
  });

  it('refuses two manifests that claim one domain', async () => {
    await integration('first', 'domain: same\n');
    await integration('second', 'domain: same\n');
    await expect(discover()).rejects.toThrow(
      /custom\/second\/manifest\.yaml:1:1: domain: domain `same` is already provided by custom\/first\/manifest\.yaml/,
    );
  });

  it('refuses a handler module outside the integration folder', async () => {
    await integration('escape', 'domain: escape\ntasks:\n  out: {handler: ./../../outside.ts#out}\n');
    await writeFile(path.join(dir, 'outside.ts'), 'export async function out() {}\n');
    const configPath = path.join(dir, 'config.yaml');
    await writeFile(configPath, 'integration_dirs: [./custom]\n');
    const { registry } = await loadRuntime({ installation, configPath, cwd: dir });
    await expect(registry.loadHandlers()).rejects.toThrow(
      /tasks\.out\.handler: \.\/\.\.\/\.\.\/outside\.ts#out is outside the integration's folder/,
    );
  });

  it('names a custom folder that does not exist', async () => {
    const configPath = path.join(dir, 'config.yaml');
    await writeFile(configPath, 'integration_dirs: [./nowhere]\n');
    await expect(loadRuntime({ installation, configPath, cwd: dir })).rejects.toThrow(
      /integration_dirs: .*nowhere is not a folder/,
    );
  });

  it('hole 19: refuses a config.yaml past the size limit, naming the limit, without looking for its integrations', async () => {
    const configPath = path.join(dir, 'config.yaml');
    // The custom folder it names does not exist: were the oversized file parsed for it, that would be the error.
    await writeFile(configPath, `integration_dirs: [./nowhere]\ntitle: "${'x'.repeat(20 * 1024 * 1024)}"\n`);
    const error = await loadRuntime({ installation, configPath, cwd: dir }).catch((thrown: unknown) => thrown);
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).message).toMatch(/config\.yaml.*limit is 1048576 bytes \(1 MiB\)/);
  });
});

describe('loadRuntime with hooks', () => {
  const events = {
    get: (type: string) =>
      type === 'task.failed'
        ? {
            name: 'task.failed',
            fields: {
              task_type: { type: 'string' as const, trusted: true },
              integration: { type: 'string' as const, trusted: true },
            },
          }
        : undefined,
    names: () => ['task.failed'],
  };

  it('loads the hooks beside config.yaml, checked against the integrations', async () => {
    const configPath = await setup(twoInstances);
    await mkdir(path.join(dir, 'hooks'));
    await writeFile(
      path.join(dir, 'hooks', 'failures.yaml'),
      'on: task.failed\nwhen: {task_type: greeter.people.check}\nthen:\n  - pause: friendly\n  - notify: "{{event.data.task_type}} failed"\n',
    );
    const { hooks } = await loadRuntime({ installation, configPath, cwd: dir, eventRegistry: () => events });
    expect(hooks.map((hook) => [hook.name, hook.actions.map((action) => action.kind)])).toEqual([
      ['failures', ['pause', 'notify']],
    ]);
  });

  it('refuses a hook problem as a config error with file, line and key, like config.yaml problems', async () => {
    const configPath = await setup(
      `${twoInstances}hooks:\n  - name: inline\n    on: task.failed\n    then: {pause: nobody}\n`,
    );
    await mkdir(path.join(dir, 'hooks'));
    await writeFile(
      path.join(dir, 'hooks', 'typo.yaml'),
      'on: task.failed\nwhen:\n  task_tpye: x\nthen: {notify: hi}\n',
    );
    const error = await loadRuntime({ installation, configPath, cwd: dir, eventRegistry: () => events }).catch(
      (thrown: unknown) => thrown,
    );
    expect(error).toBeInstanceOf(ConfigError);
    const problems = (error as ConfigError).problems.map((problem) => [
      problem.file,
      problem.position?.line,
      problem.message,
    ]);
    expect(problems).toEqual([
      ['config.yaml', 23, 'there is no integration instance `nobody` to pause'],
      ['hooks/typo.yaml', 3, '`task_tpye` is not a field of `task.failed`'],
    ]);
    expect((error as ConfigError).message).toContain('hooks/typo.yaml:3:3: when.task_tpye:');
  });
});

describe('the hook catalog of loadRuntime', () => {
  it('takes an enqueue at the tier its manifest declares, and an undeclared one as irreversible', async () => {
    const configPath = await setup(twoInstances);
    await mkdir(path.join(dir, 'hooks'));
    const registry = {
      get: (type: string) => (type === 'task.failed' ? { name: type, fields: {} } : undefined),
    };
    await writeFile(
      path.join(dir, 'hooks', 'tiers.yaml'),
      'on: task.failed\nthen:\n  - enqueue: {type: system.echo}\n  - enqueue: {type: system.agent, payload: {prompt: hi}}\n  - !yolo {enqueue: {type: greeter.people.check}}\n',
    );
    const { hooks, warnings } = await loadRuntime({
      installation,
      configPath,
      cwd: dir,
      eventRegistry: () => registry,
    });
    expect(hooks[0]?.actions.map((action) => action.tier)).toEqual(['read_only', 'soft', 'irreversible']);
    // `!yolo` in a hook file is warned about as in config.yaml.
    expect(warnings).toContainEqual(
      expect.objectContaining({
        file: 'hooks/tiers.yaml',
        position: { line: 5, col: 11 },
        message: expect.stringContaining('!yolo'),
      }),
    );
  });
});

describe('loadRuntime with the ledger registry', () => {
  it("checks hooks against the ledger's event types and their fields by default", async () => {
    const configPath = await setup(twoInstances);
    await mkdir(path.join(dir, 'hooks'));
    await writeFile(
      path.join(dir, 'hooks', 'mail.yaml'),
      'on: mail.received\nwhen: {from_address: anna@example.com}\nthen: {notify: "{{event.data.subject}}"}\n',
    );
    const { hooks } = await loadRuntime({ installation, configPath, cwd: dir });
    expect(hooks.map((hook) => [hook.name, hook.on, hook.trustedFields?.includes('instance')])).toEqual([
      ['mail', 'mail.received', true],
    ]);
    await writeFile(
      path.join(dir, 'hooks', 'typo.yaml'),
      'on: mail.received\nwhen: {form_address: anna@example.com}\nthen: {notify: hi}\n',
    );
    const error = await loadRuntime({ installation, configPath, cwd: dir }).catch((thrown: unknown) => thrown);
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).message).toContain('hooks/typo.yaml:2:');
    expect((error as ConfigError).message).toContain('did you mean `from_address`?');
  });
});
