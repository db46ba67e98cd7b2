import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { readYaml } from '@assistant/config';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { loadHooks } from './load-hooks.ts';
import { testCatalog, testRegistry } from './testing/hook-fixtures.ts';

let configDir: string;

beforeEach(async () => {
  configDir = await mkdtemp(path.join(tmpdir(), 'hooks-load-'));
  await mkdir(path.join(configDir, 'hooks'));
});
afterEach(async () => {
  await rm(configDir, { recursive: true, force: true });
});

async function hookFile(name: string, text: string): Promise<void> {
  await writeFile(path.join(configDir, 'hooks', name), text);
}

/** Loads the hooks, with config.yaml's text when given (its `hooks:` as config loading leaves them). */
async function load(configText?: string) {
  if (configText !== undefined) await writeFile(path.join(configDir, 'config.yaml'), configText);
  const hooks =
    configText === undefined
      ? []
      : ((readYaml({ text: configText, file: 'config.yaml' }).data as { hooks: unknown[] }).hooks ?? []);
  return loadHooks({
    configDir,
    ...(configText === undefined
      ? {}
      : { config: { hooks, paths: { configFile: path.join(configDir, 'config.yaml') } } }),
    registry: testRegistry,
    catalog: testCatalog,
  });
}

describe('loadHooks', () => {
  it('loads a hook file, named by the file, with its event, conditions and actions', async () => {
    await hookFile(
      'accountant.yaml',
      [
        'description: Remind me of the accountant',
        'on: mail.received',
        'when:',
        '  from_domain: accountant.example',
        'then:',
        '  - notify: "Mail from your accountant: {{event.data.subject}}"',
        '    after: 2d',
        '',
      ].join('\n'),
    );
    const { hooks, problems } = await load();
    expect(problems).toEqual([]);
    expect(hooks).toHaveLength(1);
    const hook = hooks[0];
    expect(hook).toMatchObject({
      name: 'accountant',
      file: 'hooks/accountant.yaml',
      on: 'mail.received',
      enabled: true,
      once: false,
      catchUp: 'once',
      provenance: 'rule',
      approval: false,
      actions: [
        {
          kind: 'notify',
          text: 'Mail from your accountant: {{event.data.subject}}',
          delayMs: 2 * 24 * 3600 * 1000,
          tier: 'soft',
          yolo: false,
        },
      ],
    });
    expect(hook?.conditions.map((condition) => condition.text)).toEqual(['from_domain = accountant.example']);
    expect(hook?.version).toMatch(/^[0-9a-f]{16}$/);
  });

  it('reports a malformed file with its file, line and key, and still loads the other hooks', async () => {
    await hookFile('broken.yaml', 'on: task.failed\nthen:\n  - notify: hi\nwhen:\n  attempts: "> x"\n');
    await hookFile('typo.yaml', 'on: task.failed\nthen:\n  - notfiy: hi\n');
    await hookFile('syntax.yaml', 'on: task.failed\nthen: [notify: hi\n');
    await hookFile('good.yaml', 'on: task.failed\nthen:\n  - notify: "{{event.data.task_type}} failed"\n');
    const { hooks, problems } = await load();
    expect(hooks.map((hook) => hook.name)).toEqual(['good']);
    expect(problems).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ file: 'hooks/broken.yaml', line: 5, key: 'when.attempts', hook: 'broken' }),
        expect.objectContaining({
          file: 'hooks/typo.yaml',
          line: 3,
          key: 'then[0].notfiy',
          hint: 'did you mean `notify`?',
        }),
        expect.objectContaining({ file: 'hooks/syntax.yaml', message: expect.stringContaining('YAML syntax') }),
      ]),
    );
    expect(problems.find((problem) => problem.file === 'hooks/syntax.yaml')?.line).toBeGreaterThan(0);
  });

  it('refuses an unknown event type, field, task type, service, script, integration and template field', async () => {
    await hookFile('event.yaml', 'on: mail.recieved\nthen: {notify: hi}\n');
    await hookFile('field.yaml', 'on: mail.received\nwhen:\n  form_domain: x.example\nthen: {notify: hi}\n');
    await hookFile('task.yaml', 'on: task.failed\nthen:\n  - enqueue: {type: email.inbox.chek}\n');
    await hookFile('service.yaml', 'on: task.failed\nthen:\n  - service: nothing.here\n');
    await hookFile('script.yaml', 'on: task.failed\nthen:\n  - script: nope\n');
    await hookFile('pause.yaml', 'on: task.failed\nthen:\n  - pause: work-mial\n');
    await hookFile('template.yaml', 'on: task.failed\nthen:\n  - notify: "{{event.data.tasktype}}"\n');
    const { hooks, problems } = await load();
    expect(hooks).toEqual([]);
    const byFile = Object.fromEntries(problems.map((problem) => [problem.file, problem]));
    expect(byFile['hooks/event.yaml']).toMatchObject({
      line: 1,
      key: 'on',
      message: '`mail.recieved` is not an event type',
      hint: 'did you mean `mail.received`?',
    });
    expect(byFile['hooks/field.yaml']).toMatchObject({
      line: 3,
      key: 'when.form_domain',
      hint: 'did you mean `from_domain`?',
    });
    expect(byFile['hooks/task.yaml']).toMatchObject({
      line: 3,
      key: 'then[0].enqueue.type',
      hint: 'did you mean `email.inbox.check`?',
    });
    expect(byFile['hooks/service.yaml']).toMatchObject({ line: 3, key: 'then[0].service' });
    expect(byFile['hooks/script.yaml']).toMatchObject({ line: 3, key: 'then[0].script' });
    expect(byFile['hooks/pause.yaml']).toMatchObject({
      line: 3,
      key: 'then[0].pause',
      hint: 'did you mean `work-mail`?',
    });
    expect(byFile['hooks/template.yaml']).toMatchObject({
      line: 3,
      key: 'then[0].notify',
      hint: 'did you mean `event.data.task_type`?',
    });
  });

  it('refuses, at the line, an irreversible action of a hook that asks an LLM, unless approval or !yolo', async () => {
    await hookFile(
      'merge.yaml',
      'on: task.failed\nask: "Is this the build going green?"\nthen:\n  - notify: merging\n  - enqueue: {type: github.pulls.merge}\n',
    );
    await hookFile(
      'approved.yaml',
      'on: task.failed\nask: "Green?"\napproval: required\nthen:\n  - enqueue: {type: github.pulls.merge}\n',
    );
    await hookFile(
      'yolo.yaml',
      'on: task.failed\nask: "Green?"\nthen:\n  - !yolo {enqueue: {type: github.pulls.merge}}\n',
    );
    const { hooks, problems } = await load();
    expect(problems).toEqual([
      expect.objectContaining({
        file: 'hooks/merge.yaml',
        line: 5,
        key: 'then[1]',
        message: expect.stringContaining('cannot be undone, and this hook decides by asking an LLM'),
      }),
    ]);
    expect(hooks.map((hook) => [hook.name, hook.provenance, hook.approval])).toEqual([
      ['approved', 'llm', true],
      ['yolo', 'llm', false],
    ]);
    expect(hooks[1]?.actions[0]).toMatchObject({ kind: 'enqueue', yolo: true, tier: 'irreversible' });
  });

  it('makes a hook over untrusted fields with an irreversible action hybrid, and refuses it without approval', async () => {
    await hookFile('outsider.yaml', 'on: mail.received\nwhen: {from_domain: x.example}\nthen:\n  - script: deploy\n');
    await hookFile('trusted.yaml', 'on: mail.received\nwhen: {authenticated: true}\nthen:\n  - script: deploy\n');
    await hookFile('soft.yaml', 'on: mail.received\nwhen: {from_domain: x.example}\nthen:\n  - script: note\n');
    const { hooks, problems } = await load();
    expect(problems).toEqual([
      expect.objectContaining({
        file: 'hooks/outsider.yaml',
        line: 4,
        message: expect.stringContaining('tests facts an outsider controls (`from_domain`)'),
      }),
    ]);
    expect(hooks.map((hook) => [hook.name, hook.provenance])).toEqual([
      ['soft', 'rule'],
      ['trusted', 'rule'],
    ]);
  });

  it('loads the hooks: list of config.yaml, located in config.yaml', async () => {
    const text = [
      'llms: {}',
      'hooks:',
      '  - name: failures',
      '    on: task.failed',
      '    count: {at_least: 3, within: 1h, per: integration}',
      '    then:',
      '      - pause: work-mail',
      '  - name: bad',
      '    on: task.failed',
      '    whne: {attempts: 3}',
      '    then: {notify: hi}',
      '',
    ].join('\n');
    const { hooks, problems } = await load(text);
    expect(hooks).toHaveLength(1);
    expect(hooks[0]).toMatchObject({
      name: 'failures',
      file: 'config.yaml',
      line: 3,
      count: { atLeast: 3, withinMs: 3_600_000, per: 'integration' },
      actions: [{ kind: 'pause', integration: 'work-mail', tier: 'soft' }],
    });
    expect(problems).toEqual([
      expect.objectContaining({
        file: 'config.yaml',
        line: 10,
        key: 'hooks[1].whne',
        hint: 'did you mean `when`?',
        hook: 'bad',
      }),
    ]);
  });

  it('refuses a hook name used twice, and a name: that differs from the file', async () => {
    await hookFile('same.yaml', 'on: task.failed\nthen: {notify: hi}\n');
    await hookFile('other.yaml', 'name: elsewhere\non: task.failed\nthen: {notify: hi}\n');
    const { hooks, problems } = await load('hooks:\n  - name: same\n    on: task.failed\n    then: {notify: hi}\n');
    expect(hooks.map((hook) => hook.name)).toEqual(['same']);
    expect(problems).toEqual([
      expect.objectContaining({
        file: 'config.yaml',
        line: 2,
        message: expect.stringContaining('already defined in hooks/same.yaml'),
      }),
      expect.objectContaining({ file: 'hooks/other.yaml', line: 1, key: 'name' }),
    ]);
  });

  it('needs an LLM profile for ask: and agent:', async () => {
    await hookFile('ask.yaml', 'on: task.failed\nask: {question: "Serious?", llm: big}\nthen: {notify: hi}\n');
    await hookFile(
      'agent.yaml',
      'on: task.failed\nthen:\n  - agent: {prompt: "Look into {{event.data.task_type}}", llm: fast}\n',
    );
    const { hooks, problems } = await load();
    expect(hooks.map((hook) => hook.name)).toEqual(['agent']);
    expect(problems).toEqual([
      expect.objectContaining({ file: 'hooks/ask.yaml', line: 2, key: 'ask.llm', hint: 'profiles: default, fast' }),
    ]);
  });

  it('gives a hook a new version when its content changes, not when only its formatting does', async () => {
    await hookFile('a.yaml', 'on: task.failed\nthen: {notify: hi}\n');
    const first = (await load()).hooks[0]?.version;
    await hookFile('a.yaml', '# a comment\nthen:\n  notify: hi\non: task.failed\n');
    const second = (await load()).hooks[0]?.version;
    await hookFile('a.yaml', 'on: task.failed\nthen: {notify: hello}\n');
    const third = (await load()).hooks[0]?.version;
    expect(second).toBe(first);
    expect(third).not.toBe(first);
  });
});

describe('names that Object.prototype holds', () => {
  it('are no field, script or action: a problem each, never a crash or a hook that loads', async () => {
    await hookFile('proto-field.yaml', 'on: task.failed\nwhen: {constructor: x}\nthen: {notify: hi}\n');
    await hookFile('proto-script.yaml', 'on: task.failed\nthen: {script: constructor}\n');
    await hookFile(
      'proto-count.yaml',
      'on: task.failed\ncount: {at_least: 2, within: 1h, per: toString}\nthen: {notify: hi}\n',
    );
    const { hooks, problems } = await load();
    expect(hooks).toEqual([]);
    expect(problems.map((problem) => [problem.file, problem.key])).toEqual([
      ['hooks/proto-count.yaml', 'count.per'],
      ['hooks/proto-field.yaml', 'when.constructor'],
      ['hooks/proto-script.yaml', 'then.script'],
    ]);
  });
});
