import { chmod, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { isAssistantError } from '@assistant/errors';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig, parseConfig } from './load-config.ts';
import { formatProblem } from './problems.ts';
import { Secret } from './secret.ts';
import { emailType, fixturesDir } from './testing/email-type.ts';

const fixtures = fileURLToPath(fixturesDir);
const secretsText = await readFile(path.join(fixtures, 'secrets.yaml'), 'utf8');
const parse = (text: string, options: { lenient?: boolean; secrets?: string | undefined } = {}) =>
  parseConfig({
    text,
    secretsText: 'secrets' in options ? options.secrets : secretsText,
    ...(options.lenient ? {} : { integrationTypes: [emailType] }),
  });
const errorLines = (text: string, options: { lenient?: boolean; secrets?: string } = {}) =>
  parse(text, options).errors.map((problem) => formatProblem(problem));

describe('good fixtures', async () => {
  const names = await readdir(path.join(fixtures, 'good'));
  it.each(names)('%s loads without errors', async (name) => {
    const result = parse(await readFile(path.join(fixtures, 'good', name), 'utf8'));
    expect(result.errors.map(formatProblem)).toEqual([]);
    expect(result.config).toBeDefined();
  });

  it('the repository default config.yaml has no errors in the keys every integration shares', async () => {
    // The integrations' own settings are checked with their manifests, in packages/integration-host's load-runtime test.
    const text = await readFile(new URL('../../../config.yaml', import.meta.url), 'utf8');
    expect(parseConfig({ text }).errors.map(formatProblem)).toEqual([]);
  });
});

describe('bad fixtures', async () => {
  const names = await readdir(path.join(fixtures, 'bad'));
  it.each(names)('%s reports exactly the problems its `# expect:` lines list', async (name) => {
    const text = await readFile(path.join(fixtures, 'bad', name), 'utf8');
    const expected = [...text.matchAll(/^# expect: (.*)$/gm)].map((match) => match[1]);
    expect(expected.length).toBeGreaterThan(0);
    const result = parse(text);
    expect(result.config).toBeUndefined();
    expect(result.errors.map((problem) => formatProblem(problem).split('\n')[0])).toEqual(expected);
  });
});

describe('normalisation', async () => {
  const full = parse(await readFile(path.join(fixtures, 'good', 'full.yaml'), 'utf8'));
  const config = full.config;
  if (!config) throw new Error('full.yaml must load');
  const [personal, work] = config.integrations;
  const inbox = personal?.platforms.inbox;

  it('expands classification shorthand to {prompt, type: confidence}', () => {
    expect(inbox?.classifications.human).toEqual({
      prompt: 'is this a personal email written by a human?',
      type: 'confidence',
    });
    expect(inbox?.classifications.requires_response?.type).toBe('boolean');
    expect(inbox?.classifications.category).toEqual({
      prompt: 'what kind of email is this?',
      type: 'enum',
      values: ['bill', 'travel', 'other'],
    });
  });

  it('turns `then` into a list of typed actions and keeps `!yolo` as data', () => {
    expect(inbox?.automations[0]?.actions).toEqual([{ kind: 'platform', action: 'archive', yolo: false }]);
    expect(inbox?.automations[1]?.actions.map((action) => action.kind)).toEqual(['platform', 'script', 'service']);
    expect(inbox?.automations[1]?.actions[0]).toEqual({
      kind: 'platform',
      action: 'move',
      argument: 'Paperwork',
      yolo: false,
    });
    expect(inbox?.automations[2]?.actions).toEqual([{ kind: 'platform', action: 'send_reply', yolo: true }]);
    const yolo = full.warnings.find((warning) => warning.message.includes('!yolo'));
    expect(yolo && formatProblem(yolo)).toMatch(
      /^config\.yaml:\d+:\d+: integrations\[0\]\.platforms\.inbox\.automations\[2\]\.then: /,
    );
  });

  it('reads `service: domain.service` and `domain.instance.service`, as a string or with inputs', () => {
    const actionsOf = (then: string) =>
      parse(
        `integrations:\n  - type: email\n    name: mail\n    imap_server: imap.example.com\n    username: me\n    password: !secret email_password\n    platforms:\n      inbox:\n        automations:\n          - when: {is_noreply: true}\n            then: ${then}\n`,
      ).config?.integrations[0]?.platforms.inbox?.automations[0]?.actions;
    expect(actionsOf('{service: research.web}')).toEqual([
      { kind: 'service', call: 'research.web', inputs: {}, yolo: false },
    ]);
    expect(actionsOf('[{service: {call: research.deep.web, inputs: {question: why}}}]')).toEqual([
      { kind: 'service', call: 'research.deep.web', inputs: { question: 'why' }, yolo: false },
    ]);
    expect(actionsOf('{service: {call: research.web}}')).toEqual([
      { kind: 'service', call: 'research.web', inputs: {}, yolo: false },
    ]);
  });

  it('keeps schedules as intervals or validated cron expressions', () => {
    expect(personal?.schedule).toEqual({ kind: 'every', everyMs: 1_800_000, catchUp: true });
    expect(work?.schedule).toEqual({
      kind: 'cron',
      expression: '0 8-18 * * 1-5',
      timezone: 'Europe/Berlin',
      catchUp: true,
    });
    expect(work?.enabled).toBe(false);
  });

  it('separates instance settings from the keys every integration shares', () => {
    expect(Object.keys(personal?.settings ?? {}).sort()).toEqual(['imap_server', 'password', 'username']);
    expect(personal?.llm).toBe('fast');
  });

  it('resolves secrets into values that never print', () => {
    const password = personal?.settings.password;
    expect(password).toBeInstanceOf(Secret);
    expect((password as Secret).reveal()).toBe('hunter2');
    const printed = JSON.stringify(config);
    for (const value of ['hunter2', 'ghp_example', 'a-long-random-token']) expect(printed).not.toContain(value);
    expect(printed).toContain('[secret email_password]');
    expect(String(password)).toBe('[secret email_password]');
  });

  it('merges queue policy defaults with the file, and normalises durations to ms', () => {
    expect(config.queue.durability).toBe('strict');
    expect(config.queue.retention).toEqual({ doneMs: 3 * 86_400_000, failedMs: 60 * 86_400_000 });
    expect(config.queue.policies.defaults).toEqual({
      dedup: true,
      rateLimit: null,
      maxAttempts: 5,
      backoff: { type: 'exponential', delayMs: 10_000, maxMs: 1_800_000 },
      timeoutMs: 600_000,
    });
    expect(config.queue.policies.overrides['service.research.search']).toEqual({
      rateLimit: { max: 10, perMs: 3_600_000 },
    });
    expect(config.worker).toEqual({
      concurrency: 4,
      pollIntervalMs: 500,
      shutdownGraceMs: 60_000,
      sandbox: 'bubblewrap',
      modelBacklog: 16,
    });
  });

  it('fills every default for an empty file', () => {
    const empty = parse('');
    expect(empty.config?.server).toEqual({
      host: '127.0.0.1',
      port: 6767,
      allowedHosts: [],
      eventStreamsPerClient: 32,
      dashboard: true,
    });
    expect(empty.config?.worker).toEqual({
      concurrency: 2,
      pollIntervalMs: 1000,
      shutdownGraceMs: 30_000,
      sandbox: 'bubblewrap',
      modelBacklog: 32,
    });
    expect(parse('worker:\n  model_backlog: 5\n').config?.worker.modelBacklog).toBe(5);
    expect(parse('worker:\n  model_backlog: 0\n').config).toBeUndefined();
    expect(empty.config?.integrations).toEqual([]);
    expect(empty.config?.queue.maxTaskBytes).toBe(1_048_576);
    expect(parse('integrations:\nllms:\n').config?.integrations).toEqual([]);
  });
});

describe('llms', () => {
  const profile = (settings: string) => {
    const result = parse(`llms:\n  p: {${settings}}\n`);
    expect(result.errors.map(formatProblem)).toEqual([]);
    return result.config?.llms.p;
  };

  it('leaves max_in_flight unset by default, for any server: the gate finds the limit itself', () => {
    for (const url of ['http://127.0.0.1:11434/v1', 'http://gpu-box.local:8000/v1', 'https://api.example.com/v1']) {
      expect(profile(`base_url: "${url}", model: m`), url).not.toHaveProperty('maxInFlight');
    }
  });

  it('reads max_in_flight and the per-minute budgets, and refuses values out of range', () => {
    expect(
      profile(
        'base_url: "http://127.0.0.1/v1", model: m, max_in_flight: 4, requests_per_minute: 60, tokens_per_minute: 90000',
      ),
    ).toMatchObject({ maxInFlight: 4, requestsPerMinute: 60, tokensPerMinute: 90_000 });
    expect(profile('base_url: "http://127.0.0.1/v1", model: m')).not.toHaveProperty('requestsPerMinute');
    expect(errorLines('llms:\n  p: {base_url: "http://127.0.0.1/v1", model: m, max_in_flight: 0}\n')).toHaveLength(1);
    expect(errorLines('llms:\n  p: {base_url: "http://127.0.0.1/v1", model: m, max_in_flight: 257}\n')).toHaveLength(1);
    expect(errorLines('llms:\n  p: {base_url: "http://127.0.0.1/v1", model: m, tokens_per_minute: 0}\n')).toHaveLength(
      1,
    );
  });
});

describe('credentials in URLs', () => {
  it('refuses a user name or password in an llms base_url, naming file, line and key, and where the key goes', () => {
    const withPassword = parse('llms:\n  cloud: {base_url: "https://me:sk-live-1234@api.example.com/v1", model: m}\n');
    expect(withPassword.config).toBeUndefined();
    expect(withPassword.errors.map(formatProblem)).toEqual([
      'config.yaml:2:21: llms.cloud.base_url: the URL holds a user name or password (https://***:***@api.example.com/v1); config.yaml is shown by `assistant config check`, /config and /health, and its URLs are logged\n' +
        '  hint: remove `user:password@` from the URL; an API key goes in `api_key: !secret llm_key`, with `llm_key: …` in secrets.yaml',
    ]);
    // A key written as the user name alone (`https://KEY@host`) is a credential too.
    expect(errorLines('llms:\n  cloud: {base_url: "https://sk-live-1234@api.example.com/v1", model: m}\n')).toEqual([
      expect.stringContaining(
        'llms.cloud.base_url: the URL holds a user name or password (https://***@api.example.com/v1)',
      ),
    ]);
    expect(JSON.stringify([withPassword.errors, withPassword.warnings])).not.toContain('sk-live-1234');
    // Nor does a URL too broken to parse repeat them.
    const broken = errorLines('llms:\n  cloud: {base_url: "https://me:sk-live-1234@", model: m}\n');
    expect(broken).toEqual([expect.stringContaining('got `"https://***@"` (string)')]);
  });
});

describe('problems', () => {
  it('reports several problems at once, in file order', () => {
    const lines = errorLines('worker:\n  concurency: 2\nqueue:\n  durability: fast\nservr: {}\n');
    expect(lines).toEqual([
      'config.yaml:2:3: worker.concurency: unknown key `concurency`\n  hint: did you mean `concurrency`?',
      'config.yaml:4:15: queue.durability: expected one of `os`, `strict`, got `"fast"` (string)',
      'config.yaml:5:1: servr: unknown key `servr`\n  hint: did you mean `server`?',
    ]);
  });

  it('says where a mis-indented classification belongs instead of dropping it', () => {
    const text = [
      'llms: {default: {base_url: "http://127.0.0.1:1/v1", model: m}}',
      'integrations:',
      '  - type: email',
      '    name: personal',
      '    imap_server: imap.example.com',
      '    platforms:',
      '      inbox:',
      '        classifications:',
      '        human: "is this personal?"',
      '',
    ].join('\n');
    expect(errorLines(text)).toEqual([
      'config.yaml:9:9: integrations[0].platforms.inbox.human: unknown key `human`\n  hint: check its indentation: it belongs under `classifications`',
    ]);
  });

  it('names the secret, the file and the line when a secret is missing', () => {
    expect(errorLines('server:\n  token: !secret api_token\n')).toEqual([
      'config.yaml:2:18: server.token: secret `api_token` is not defined in secrets.yaml\n  hint: add `api_token: …` to secrets.yaml',
    ]);
    expect(errorLines('server:\n  token: !secret api_token\n', { secrets: undefined as never })[0]).toContain(
      'secrets.yaml does not exist',
    );
  });

  it('rejects malformed secrets.yaml entries without echoing their value', () => {
    const result = parse('', { secrets: 'good: x\nbad:\n  - supersecret\n' });
    expect(result.errors.map(formatProblem)).toEqual([
      'secrets.yaml:3:3: bad: a secret must be a single value (a string), not a list or mapping',
    ]);
  });

  it('refuses alias bombs', () => {
    const bomb = [
      'a: &a [x, x, x, x, x, x, x, x, x, x]',
      'b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]',
      'c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]',
      'd: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]',
      'e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]',
      'f: [*e, *e, *e, *e, *e, *e, *e, *e, *e, *e]',
    ].join('\n');
    expect(errorLines(bomb)).toEqual([
      'config.yaml:1:1: the document expands to more than 100000 values\n  hint: aliases (*name) that nest aliases multiply',
    ]);
  });

  it('rejects duplicate keys and documents that are not mappings', () => {
    expect(errorLines('server: {}\nserver: {}\n')[0]).toMatch(
      /^config\.yaml:2:1: YAML syntax: Map keys must be unique/,
    );
    expect(errorLines('- a\n- b\n')).toEqual([
      'config.yaml:1:1: expected a mapping of settings (llms:, integrations:, …) at the top of the file',
    ]);
  });

  it('lists known types for an unknown integration type', () => {
    expect(errorLines('integrations:\n  - {type: slack, name: x}\n')).toEqual([
      'config.yaml:2:12: integrations[0].type: unknown integration type `slack`\n  hint: known: email',
    ]);
  });
});

describe('warnings', () => {
  const warningLines = (text: string, options: { lenient?: boolean } = {}) =>
    parse(text, options).warnings.map((problem) => formatProblem(problem));

  it('warns that a remote LLM endpoint takes data off the machine', () => {
    const lines = warningLines('llms:\n  cloud: {base_url: "https://api.example.com/v1", model: m}\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(
      /^config\.yaml:2:21: llms\.cloud\.base_url: LLM profile `cloud` sends prompts to api\.example\.com/,
    );
    expect(warningLines('llms:\n  local: {base_url: "http://[::1]:8080/v1", model: m}\n')).toEqual([]);
  });

  it('warns that scripts run unsandboxed with `sandbox: none`, and refuses other sandboxes', () => {
    expect(warningLines('worker:\n  sandbox: none\n')).toEqual([
      'config.yaml:2:12: worker.sandbox: `sandbox: none`: scripts run without a sandbox and can read and write whatever Assistant can (secrets.yaml, the data folder, your home folder)\n  hint: install bubblewrap (apt-get install bubblewrap) and remove `sandbox: none`',
    ]);
    expect(warningLines('worker:\n  sandbox: bubblewrap\n')).toEqual([]);
    expect(errorLines('worker:\n  sandbox: auto\n')).toHaveLength(1);
  });

  it('warns about secrets written inline', () => {
    const lines = warningLines('server:\n  token: plain-text-token\n');
    expect(lines).toEqual([
      'config.yaml:2:10: server.token: a secret is written inline in the config file\n  hint: move it to secrets.yaml and write `token: !secret name`',
    ]);
  });

  it('says which settings went unchecked when no manifest is loaded', () => {
    const lines = warningLines('integrations:\n  - {type: email, name: a, imap_sever: x}\n', { lenient: true });
    expect(lines).toEqual([
      'config.yaml:2:12: integrations[0].type: no manifest for integration type `email` was loaded, so `imap_sever` went unchecked',
    ]);
    expect(
      errorLines('integrations:\n  - {type: email, name: a, platforms: {inbox: {clasifications: {}}}}\n', {
        lenient: true,
      }),
    ).toEqual([
      'config.yaml:2:48: integrations[0].platforms.inbox.clasifications: unknown key `clasifications`\n  hint: did you mean `classifications`?',
    ]);
  });
});

describe('loadConfig', () => {
  let directory: string;
  beforeEach(async () => {
    directory = await mkdtemp(path.join(tmpdir(), 'assistant-config-'));
  });
  afterEach(async () => {
    await rm(directory, { recursive: true, force: true });
  });

  it('resolves data directories against the config file, and --data against the working directory', async () => {
    await mkdir(path.join(directory, 'etc'));
    await writeFile(
      path.join(directory, 'etc', 'config.yaml'),
      'data_dir: ../state\ndirectories: {notes: /srv/notes}\n',
    );
    const { config } = await loadConfig({ configPath: 'etc/config.yaml', cwd: directory });
    expect(config.paths.dataDir).toBe(path.join(directory, 'state'));
    expect(config.paths.queue).toBe(path.join(directory, 'state', 'queue'));
    expect(config.paths.notes).toBe('/srv/notes');
    const overridden = await loadConfig({ configPath: 'etc/config.yaml', cwd: directory, dataDir: 'elsewhere' });
    expect(overridden.config.paths.dataDir).toBe(path.join(directory, 'elsewhere'));
  });

  it('warns when secrets.yaml is readable by others, and not when it is private', async () => {
    await writeFile(path.join(directory, 'config.yaml'), 'server:\n  token: !secret server_token\n');
    await writeFile(path.join(directory, 'secrets.yaml'), 'server_token: abc\n');
    await chmod(path.join(directory, 'secrets.yaml'), 0o644);
    const open = await loadConfig({ configPath: 'config.yaml', cwd: directory });
    expect(open.warnings.map(formatProblem)).toEqual([
      'secrets.yaml: is readable by other users (mode 644)\n  hint: run `chmod 600 secrets.yaml`',
    ]);
    expect(open.config.server.token?.reveal()).toBe('abc');
    await chmod(path.join(directory, 'secrets.yaml'), 0o600);
    expect((await loadConfig({ configPath: 'config.yaml', cwd: directory })).warnings).toEqual([]);
  });

  it('throws ConfigError with every problem, and CONFIG_NOT_FOUND for a missing file', async () => {
    await writeFile(path.join(directory, 'config.yaml'), 'sever: {}\nworker: {concurrency: 0}\n');
    const error = await loadConfig({ configPath: 'config.yaml', cwd: directory }).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).problems).toHaveLength(2);
    expect((error as ConfigError).code).toBe('CONFIG_INVALID');
    const missing = await loadConfig({ configPath: 'nope.yaml', cwd: directory }).catch((caught: unknown) => caught);
    expect(isAssistantError(missing, 'CONFIG_NOT_FOUND')).toBe(true);
    expect((missing as Error).message).toBe('config file nope.yaml does not exist');
  });
});

describe('unusual files', () => {
  it('reports a secrets.yaml that is a folder instead of crashing', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'assistant-config-'));
    try {
      await writeFile(path.join(dir, 'config.yaml'), 'data_dir: ./data\n');
      await mkdir(path.join(dir, 'secrets.yaml'));
      await expect(loadConfig({ configPath: path.join(dir, 'config.yaml'), cwd: dir })).rejects.toThrow(
        'secrets.yaml cannot be read: it is a folder',
      );
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('refuses a backoff whose max is shorter than its delay', () => {
    const result = parseConfig({ text: 'queue:\n  policies:\n    defaults:\n      backoff: {delay: 10m, max: 1m}\n' });
    expect(result.errors.map((problem) => problem.message)).toEqual([
      'the longest backoff `max` is shorter than the first `delay`',
    ]);
  });
});
