import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { isAssistantError } from '@assistant/errors';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { CliContext } from '../cli-context.ts';
import { configCheckCommand } from './config-check-command.ts';

const fixtures = fileURLToPath(new URL('../../../../tests/fixtures/integrations/custom', import.meta.url));
const inbound = fileURLToPath(new URL('../../../../tests/fixtures/integrations/inbound', import.meta.url));

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'assistant-config-check-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function check(config: string): Promise<string> {
  await writeFile(path.join(dir, 'config.yaml'), config);
  let out = '';
  const context: CliContext = {
    stdout: { write: (text: string) => (out += text) },
    stderr: { write: () => true },
    env: { TZ: 'UTC' },
    cwd: dir,
  };
  await configCheckCommand({
    globals: { configPath: path.join(dir, 'config.yaml'), dataDir: undefined },
    context,
    now: new Date('2030-01-01T00:10:00Z'),
  });
  return out;
}

describe('assistant config check', () => {
  it('lists next runs only for instances the server will schedule', async () => {
    const out = await check(`data_dir: ./data
integration_dirs: [${JSON.stringify(fixtures)}]
integrations:
  - {type: greeter, name: friendly, schedule: {every: 45m}}
  - {type: greeter, name: paused, enabled: false, schedule: {every: 45m}}
  - type: mailbox
    name: quiet
    schedule: {every: 30m}
    platforms: {inbox: {enabled: false}}
`);
    const lines = out.split('\n');
    const after = (name: string) => lines[lines.findIndex((line) => line.startsWith(`    ${name} (`)) + 1];
    expect(after('friendly')).toMatch(/^ {6}next runs: \S+ \S+ \S+, /);
    expect(out).toContain(
      '    paused (greeter), disabled, platforms: people, cards, every 45m\n      next runs: none while disabled\n',
    );
    expect(after('quiet')).toBe('      next runs: none: no platform is enabled');
  });

  it("imports every listener and webhook handler and reports a broken export at the manifest's line", async () => {
    // No instance of miswired is configured: a manifest's handlers are checked all the same.
    const error = await check(`data_dir: ./data
integration_dirs: [${JSON.stringify(path.join(inbound, 'miswired'))}, ${JSON.stringify(path.join(inbound, 'hooky'))}]
`).then(
      () => undefined,
      (caught: unknown) => caught,
    );
    // A ManifestError: exit 2 with the hint, as for a broken stage handler.
    if (!isAssistantError(error)) throw new Error(`expected a MANIFEST_INVALID error, got ${String(error)}`);
    expect(error.code).toBe('MANIFEST_INVALID');
    const lines = error.message.split('\n');
    expect(lines[0]).toBe('invalid integration manifest (2 problems):');
    expect(lines[1]).toMatch(
      /miswired\/manifest\.yaml:7:10: listeners\.poll\.handler: \.\/src\/miswired\.ts exports no `lisen` \(it exports: listen, noop\)$/,
    );
    expect(lines[2]).toMatch(
      /miswired\/manifest\.yaml:10:5: webhooks\.deliveries\.handler: `receive` in \.\/src\/miswired\.ts is an object, not a handler function$/,
    );
    expect(lines).toHaveLength(3);
  });

  /** The error `config check` throws for this config.yaml (and secrets.yaml), its problem lines relative to `dir`. */
  async function problemsOf(config: string, secrets?: string): Promise<string[]> {
    if (secrets !== undefined) await writeFile(path.join(dir, 'secrets.yaml'), secrets, { mode: 0o600 });
    const error = await check(config).then(
      () => undefined,
      (caught: unknown) => caught,
    );
    if (!isAssistantError(error)) throw new Error(`expected a CONFIG_INVALID error, got ${String(error)}`);
    expect(error.code).toBe('CONFIG_INVALID');
    return error.message
      .split('\n')
      .slice(1)
      .map((line) => line.replaceAll(`${dir}${path.sep}`, ''));
  }

  it('reports a malformed hook with its file, line and key (issue 33), and nothing loads', async () => {
    await mkdir(path.join(dir, 'hooks'));
    await writeFile(path.join(dir, 'hooks', 'remind.yaml'), 'on: mail.received\nthen:\n  - notfiy: hi\n');
    const lines = await problemsOf(
      'data_dir: ./data\nhooks:\n  - name: inline\n    on: task.failed\n    then: {pause: nowhere}\n',
    );
    expect(lines).toEqual(
      expect.arrayContaining([
        expect.stringMatching(
          /^config\.yaml:5:19: hooks\[0\]\.then\.pause: there is no integration instance `nowhere` to pause/,
        ),
        expect.stringMatching(/^hooks\/remind\.yaml:3:13: then\[0\]\.notfiy: `notfiy` is not an action/),
        '  hint: did you mean `notify`?',
      ]),
    );
  });

  it('reports broken personas beside config.yaml and in the notes with file, line and key (issue 34)', async () => {
    await mkdir(path.join(dir, 'personas'));
    await writeFile(
      path.join(dir, 'personas', 'researcher.md'),
      '---\nmodel: fsat\ntools:\n  allow: [search_notes, serch_notes]\n---\nYou research.\n',
    );
    await mkdir(path.join(dir, 'data', 'notes', 'personas'), { recursive: true });
    await writeFile(path.join(dir, 'data', 'notes', 'personas', 'writer.md'), '---\nmax_children: 0\n---\n');
    const lines = await problemsOf(
      'data_dir: ./data\nllms:\n  fast: {model: m, base_url: "http://127.0.0.1:11434/v1"}\n',
    );
    expect(lines).toEqual([
      'data/notes/personas/writer.md:2:15: max_children: must be at least 1, got `0` (number)',
      'data/notes/personas/writer.md:4:1: the persona has no instructions: its body (below the frontmatter) is empty',
      expect.stringMatching(/^ {2}hint: /),
      "personas/researcher.md:2:8: model: unknown LLM profile `fsat` (config.yaml's `llms:`)",
      '  hint: did you mean `fast`?',
      'personas/researcher.md:4:25: tools.allow[1]: unknown tool `serch_notes`',
      '  hint: did you mean `search_notes`?',
    ]);
  });

  it('leaves a broken persona out of what `assistant start` loads: it does not stop the start', async () => {
    await mkdir(path.join(dir, 'personas'));
    await writeFile(path.join(dir, 'personas', 'broken.md'), '---\ncolour: red\n---\n');
    await writeFile(path.join(dir, 'config.yaml'), 'data_dir: ./data\n');
    const { loadCliConfig } = await import('../load-cli-config.ts');
    const loaded = await loadCliConfig({
      globals: { configPath: path.join(dir, 'config.yaml'), dataDir: undefined },
      context: { stdout: { write: () => true }, stderr: { write: () => true }, env: {}, cwd: dir },
    });
    expect(loaded.config.paths.configFile).toBe(path.join(dir, 'config.yaml'));
  });

  it('passes with valid personas', async () => {
    await mkdir(path.join(dir, 'personas'));
    await writeFile(path.join(dir, 'personas', 'researcher.md'), '---\ntools: {allow: [search_notes]}\n---\nHi.\n');
    await expect(check('data_dir: ./data\n')).resolves.toContain('OK');
  });

  it('reports three key typos and a rule with an unknown action in one run (issue 31: the action came a run later)', async () => {
    const lines = await problemsOf(`data_dir: ./data
integrations:
  - type: email
    name: personal
    enabled: false
    imap_sever: imap.example.com
    platforms:
      inbox:
        automations:
          - name: archive newsletters
            when: {newsletter: true}
            then: archve
server:
  prot: 6767
worker:
  concurency: 2
`);
    expect(lines).toEqual([
      'config.yaml:6:5: integrations[0].imap_sever: unknown key `imap_sever`',
      '  hint: did you mean `imap_server`?',
      'config.yaml:12:19: integrations[0].platforms.inbox.automations[0].then: `archve` is not an action of this platform',
      '  hint: its actions: archive, move, flag, unflag, mark_read, mark_unread, draft_reply, send_reply, unsubscribe',
      'config.yaml:14:3: server.prot: unknown key `prot`',
      '  hint: did you mean `port`?',
      'config.yaml:16:3: worker.concurency: unknown key `concurency`',
      '  hint: did you mean `concurrency`?',
    ]);
  });

  it('checks the rules of every instance the schema accepted, and not the parts it cut away', async () => {
    const lines = await problemsOf(`data_dir: ./data
integrations:
  - type: email
    name: broken
    enabled: false
    schedule: {every: soon}
    platforms:
      inbox:
        automations:
          - {name: one, when: {newsletter: true}, then: flag}
          - {name: two, when: {newsletter: true}, thne: flag}
          - {name: three, when: {newsletter: true}, then: flga}
  - type: email
    name: personal
    enabled: false
    platforms:
      inbox:
        automations:
          - {name: four, when: {newsletter: true}, then: archve}
`);
    const located = lines.filter((line) => !line.startsWith('  '));
    // The third rule keeps its place (the second was cut away before the check), and the second instance is checked.
    expect(located.some((line) => line.startsWith('config.yaml:12:') && line.includes('`flga` is not an action'))).toBe(
      true,
    );
    expect(
      located.some((line) => line.startsWith('config.yaml:19:') && line.includes('`archve` is not an action')),
    ).toBe(true);
    expect(located.some((line) => line.startsWith('config.yaml:6:'))).toBe(true);
    expect(located.some((line) => line.startsWith('config.yaml:11:') && line.includes('thne'))).toBe(true);
  });

  it('suggests the closest secret name for a `!secret` that secrets.yaml does not define', async () => {
    const lines = await problemsOf(
      `data_dir: ./data
integrations:
  - type: email
    name: personal
    enabled: false
    imap_server: imap.example.com
    password: !secret personal_imap_pasword
`,
      'personal_imap_password: hunter2\ngithub_token: x\n',
    );
    expect(lines).toEqual([
      'config.yaml:7:23: integrations[0].password: secret `personal_imap_pasword` is not defined in secrets.yaml',
      '  hint: did you mean `personal_imap_password`? (defined in secrets.yaml) Otherwise add `personal_imap_pasword: …` to it',
    ]);
  });

  it('reports a workflow naming an unknown persona or a cycle at its line (issue 34), and lists good ones', async () => {
    await mkdir(path.join(dir, 'agents'));
    await mkdir(path.join(dir, 'personas'));
    await writeFile(path.join(dir, 'personas', 'writer.md'), '---\ntools: {allow: [search_notes]}\n---\nYou write.\n');
    await writeFile(path.join(dir, 'agents', 'ok.yaml'), 'topology: mesh\nagents: [writer, assistant]\n');
    expect(await check('data_dir: ./data\n')).toContain('  workflows:    ok (mesh)\n');
    await writeFile(
      path.join(dir, 'agents', 'review.yaml'),
      'topology: pipeline\nsteps:\n  - persona: writer\n  - persona: writter\n  - workflow: review\n',
    );
    const lines = await problemsOf('data_dir: ./data\n');
    expect(lines).toEqual([
      'agents/review.yaml:4:14: steps[1].persona: unknown persona `writter`',
      '  hint: did you mean `writer`?',
      'agents/review.yaml:5:15: steps[2].workflow: a cycle of nested workflows: review → review',
      '  hint: a workflow cannot contain itself, directly or through others',
    ]);
  });

  it('reports a persona with problems once, at its file, not again at each workflow naming it', async () => {
    await mkdir(path.join(dir, 'agents'));
    await mkdir(path.join(dir, 'personas'));
    await writeFile(path.join(dir, 'personas', 'writer.md'), '---\nmax_depth: many\n---\nYou write.\n');
    await writeFile(path.join(dir, 'agents', 'ok.yaml'), 'topology: mesh\nagents: [writer]\n');
    const lines = await problemsOf('data_dir: ./data\n');
    expect(lines.filter((line) => !line.startsWith('  '))).toEqual([expect.stringMatching(/^personas\/writer\.md:2:/)]);
  });

  it('says where a mis-indented top-level key belongs: a section, an instance, a platform', async () => {
    const lines = await problemsOf(`data_dir: ./data
integrations:
  - type: email
    name: personal
    enabled: false
    imap_server: imap.example.com
port: 7000
smtp: {host: smtp.example.com}
automations: []
`);
    expect(lines).toEqual([
      'config.yaml:7:1: port: unknown key `port`',
      '  hint: check its indentation: it belongs under `server` (did you mean `server.port`?)',
      'config.yaml:8:1: smtp: unknown key `smtp`',
      '  hint: check its indentation: it is a key of an integration instance of type `email` (did you mean `integrations[0].smtp`?)',
      'config.yaml:9:1: automations: unknown key `automations`',
      '  hint: check its indentation: it belongs under a platform of an integration instance (did you mean `integrations[0].platforms.inbox.automations`?)',
    ]);
  });
});
