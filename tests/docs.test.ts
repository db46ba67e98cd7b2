// docs/configuration.md is the reference for config.yaml: every key the schema accepts must be in it, so a new
// key cannot ship undocumented. And every YAML example in the docs passes the check for what it is.
import { mkdir, readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { runCli } from '@assistant/cli';
import { configJsonSchema } from '@assistant/config';
import { formatManifestProblem, ManifestError, parseManifest } from '@assistant/manifests';
import { parseNamedTaskFile } from '@assistant/queue';
import { describe, expect, it } from 'vitest';
import { repoRoot } from './helpers/node-process.ts';
import { tempDir } from './helpers/temp-dir.ts';

/** Keywords whose value is a single subschema. */
const subschemaKeywords = ['additionalProperties', 'items', 'not', 'propertyNames', 'contains', 'if', 'then', 'else'];
/** Keywords whose value is a list of subschemas. */
const subschemaListKeywords = ['anyOf', 'oneOf', 'allOf', 'prefixItems'];
/** Keywords whose value maps names to subschemas; only `properties` names are config keys. */
const subschemaMapKeywords = ['$defs', 'definitions', 'patternProperties', 'dependentSchemas'];

function isRecord(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/**
 * Every property name anywhere in a JSON Schema: `properties`, recursing through nested subschemas. Values of
 * `default`, `const`, `enum` and `examples` are data, not schemas, and are not walked.
 */
function propertyNames(schema: unknown, names = new Set<string>()): Set<string> {
  if (!isRecord(schema)) return names;
  const properties = schema.properties;
  if (isRecord(properties)) {
    for (const [name, property] of Object.entries(properties)) {
      names.add(name);
      propertyNames(property, names);
    }
  }
  for (const keyword of subschemaKeywords) propertyNames(schema[keyword], names);
  for (const keyword of subschemaListKeywords) {
    const list = schema[keyword];
    if (Array.isArray(list)) for (const item of list) propertyNames(item, names);
  }
  for (const keyword of subschemaMapKeywords) {
    const map = schema[keyword];
    if (isRecord(map)) for (const item of Object.values(map)) propertyNames(item, names);
  }
  return names;
}

describe('docs/configuration.md', () => {
  it('finds keys through nested subschemas', () => {
    const schema = {
      properties: { top: { anyOf: [{ type: 'null' }, { $ref: '#/$defs/thing' }] } },
      $defs: { thing: { properties: { inner: { items: { properties: { deep: {} } } } } } },
      additionalProperties: { oneOf: [{ properties: { extra: { default: { properties: { notAKey: 1 } } } } }] },
    };
    expect([...propertyNames(schema)].sort()).toEqual(['deep', 'extra', 'inner', 'top']);
  });

  it('mentions every key of config.yaml as `name`', async () => {
    const text = await readFile(path.join(repoRoot, 'docs/configuration.md'), 'utf8');
    const names = [...propertyNames(configJsonSchema())].sort();
    // The walk reaches the nested keys (`base_url`, `every`, `rate_limit`, …), not just the top level.
    expect(names).toEqual(expect.arrayContaining(['data_dir', 'base_url', 'every', 'values', 'rate_limit', 'per']));
    const missing = names.filter((name) => !text.includes(`\`${name}\``));
    expect(missing, `keys not mentioned as \`name\` in docs/configuration.md: ${missing.join(', ')}`).toEqual([]);
  });
});

/**
 * A fenced YAML block of the docs. The info string after `yaml` says what the block is, so nothing is skipped by
 * accident:
 * - nothing: config.yaml, whole or some of its top-level keys; run through `assistant config check` as it is, with
 *   a secrets.yaml that holds a made-up value for each `!secret` it uses (secrets have no place in docs).
 * - `platform`: keys of one platform of an integration instance (`classifications`, `automations`); wrapped into an
 *   email instance's `inbox` platform, beside the `default` LLM profile and the `notify` script that
 *   docs/configuration.md's examples define.
 * - `automations`: items of an `automations:` list, at any indentation; wrapped into that platform's list.
 * - `secrets`: a secrets.yaml; checked beside a config that uses each of its names with `!secret`.
 * - `needs-packages`: a config naming npm packages that are not installed here; the check must refuse exactly those.
 * - `manifest`: an integration's manifest.yaml, parsed against the manifest schema.
 * - `task-file`: a task file; its first line is a comment naming the file, parsed as the queue reads task files.
 * - `hook`: a hook file of `hooks/`; its first line is a comment naming it (`# hooks/accountant.yaml`). Run through
 *   `config check` in `hooks/` beside a config with the `default` LLM profile, a `merge_pr` script and an email
 *   instance `work-mail`, so its event type, fields, actions and names are checked as at start.
 * - `hooks-config`: config.yaml's `hooks:` list, checked the same way inside that config.
 * - `persona NAME` (in a ```markdown block, the only markdown blocks read): a persona file `personas/NAME.md`, run
 *   through `config check` beside the hooks' config, so its keys, tools, profile and limits are checked as
 *   `loadPersonas` checks them.
 * - `workflow`: a workflow of `agents/`; its first line is a comment naming it (`# agents/article.yaml`). Run through
 *   `config check` beside every other workflow example (a pipeline may nest one) and the personas they name.
 */
interface YamlExample {
  file: string;
  line: number;
  kind: string;
  /** What the info string says after the kind (a persona's name). */
  argument?: string;
  text: string;
}

const exampleKinds = [
  'config',
  'platform',
  'automations',
  'secrets',
  'needs-packages',
  'manifest',
  'task-file',
  'hook',
  'hooks-config',
  'persona',
  'workflow',
];

/** The personas docs/agents.md's workflow examples name, as files of `personas/` beside config.yaml. */
const workflowPersonaFiles = Object.fromEntries(
  ['researcher', 'writer', 'editor', 'manager', 'optimist', 'critic'].map((name) => [
    `personas/${name}.md`,
    `---\ntools: {allow: [search_notes, spawn_agent, wait_agents]}\n---\nYou are the ${name}.\n`,
  ]),
);

/**
 * What hook examples are checked beside: the `default` LLM profile, the script and the email instance
 * docs/hooks.md's examples name.
 */
const hookBase = `llms:
  default: {base_url: "http://127.0.0.1:11434/v1", model: llama3.2}
scripts:
  merge_pr: {shell: 'true', inputs: [reason]}
integrations:
  - type: email
    name: work-mail
    imap_server: imap.example.com
    username: you@example.com
`;

async function yamlExamples(): Promise<YamlExample[]> {
  const docs = (await readdir(path.join(repoRoot, 'docs'))).filter((name) => name.endsWith('.md'));
  const readmes = (await readdir(path.join(repoRoot, 'integrations'))).map((name) => `integrations/${name}/README.md`);
  const files = ['README.md', ...docs.map((name) => `docs/${name}`), ...readmes];
  const examples: YamlExample[] = [];
  for (const file of files) {
    const text = await readFile(path.join(repoRoot, file), 'utf8').catch(() => undefined);
    if (text === undefined) continue;
    const lines = text.split('\n');
    for (let index = 0; index < lines.length; index += 1) {
      const fence = /^(\s*)```(ya?ml|markdown)\b(.*)$/.exec(lines[index] ?? '');
      if (!fence) continue;
      const end = lines.findIndex((line, at) => at > index && /^\s*```\s*$/.test(line));
      if (end < 0) throw new Error(`${file}:${index + 1}: a ${fence[2]} block that is never closed`);
      const [kind, argument] = (fence[3]?.trim() || 'config').split(/\s+/);
      // Markdown blocks are notes and transcripts shown for reading, except the persona files.
      if (fence[2] === 'markdown' && kind !== 'persona') {
        index = end;
        continue;
      }
      examples.push({
        file,
        line: index + 1,
        kind: kind ?? 'config',
        ...(argument === undefined ? {} : { argument }),
        text: `${lines.slice(index + 1, end).join('\n')}\n`,
      });
      index = end;
    }
  }
  return examples;
}

/** Removes the indentation every non-blank line shares. */
function dedent(text: string): string {
  const indents = text
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => /^ */.exec(line)?.[0].length ?? 0);
  const common = Math.min(...indents);
  return text
    .split('\n')
    .map((line) => line.slice(common))
    .join('\n');
}

function indent(text: string, spaces: number): string {
  return text
    .split('\n')
    .map((line) => (line.trim() === '' ? line : `${' '.repeat(spaces)}${line}`))
    .join('\n');
}

const emailInstance = `llms:
  default: {base_url: "http://127.0.0.1:11434/v1", model: llama3.2}
scripts:
  notify: {shell: 'notify-send "$ASSISTANT_INPUT_CHANNEL"', inputs: [channel, subject], reversible: true}
integrations:
  - type: email
    name: personal
    imap_server: imap.example.com
    username: you@example.com
    platforms:
      inbox:
`;

/** A secrets.yaml with a made-up value for each \`!secret name\` in \`config\`, or undefined when it uses none. */
function madeUpSecrets(config: string): string | undefined {
  const names = new Set([...config.matchAll(/!secret\s+([\w.-]+)/g)].map((match) => match[1]));
  if (names.size === 0) return undefined;
  return [...names].map((name) => `${name}: "made-up-secret-for-the-docs-test-${name}"\n`).join('');
}

/** Runs `assistant config check` in this process on `config` (and `secrets`, when given) in a fresh directory. */
async function configCheck(
  config: string,
  secrets?: string,
  /** Other files beside config.yaml, by relative path (`hooks/accountant.yaml`). */
  files: Record<string, string> = {},
): Promise<{ code: number; stdout: string; stderr: string }> {
  await using dir = await tempDir();
  await dir.write('config.yaml', config);
  for (const [name, text] of Object.entries(files)) {
    await mkdir(path.dirname(path.join(dir.path, name)), { recursive: true });
    await dir.write(name, text);
  }
  if (secrets !== undefined) await dir.write('secrets.yaml', secrets, 0o600);
  let stdout = '';
  let stderr = '';
  const code = await runCli({
    argv: ['config', 'check', '--config', path.join(dir.path, 'config.yaml')],
    context: {
      stdout: { write: (text: string) => (stdout += text) },
      stderr: { write: (text: string) => (stderr += text) },
      env: {},
      cwd: dir.path,
    },
  });
  return { code, stdout, stderr };
}

/** Checks one example as what its info string says it is; resolves with a problem, or undefined when it passes. */
async function checkExample(example: YamlExample): Promise<string | undefined> {
  const failed = (result: { code: number; stdout: string; stderr: string }, checked: string) =>
    result.code === 0
      ? undefined
      : `config check exit ${result.code}:\n${result.stderr}${result.stdout}\n--- checked ---\n${checked}`;
  switch (example.kind) {
    case 'config':
      return failed(await configCheck(example.text, madeUpSecrets(example.text)), example.text);
    case 'platform': {
      const config = `${emailInstance}${indent(dedent(example.text), 8)}`;
      return failed(await configCheck(config), config);
    }
    case 'automations': {
      const config = `${emailInstance}        automations:\n${indent(dedent(example.text), 10)}`;
      return failed(await configCheck(config), config);
    }
    case 'secrets': {
      // Each name as an LLM profile's token: a place that takes any secret string.
      const names = [...example.text.matchAll(/^([\w.-]+):/gm)].map((match) => match[1]);
      const profiles = names.map(
        (name, index) => `  p${index}: {base_url: "http://127.0.0.1:11434/v1", model: m, api_key: !secret ${name}}`,
      );
      const config = `llms:\n${profiles.join('\n')}\n`;
      return failed(await configCheck(config, example.text), config);
    }
    case 'needs-packages': {
      // The check stops at the first package it cannot find: that must be its only complaint.
      const result = await configCheck(example.text, madeUpSecrets(example.text));
      // The one-line flow list the docs write: `integration_packages: [a, "@b/c"]`.
      const list = /^integration_packages: \[(.*)\]$/m.exec(example.text)?.[1] ?? '';
      const names = list
        .split(',')
        .map((name) => name.trim().replace(/^"|"$/g, ''))
        .filter((name) => name !== '');
      if (names.length === 0) return 'a needs-packages example names no integration_packages';
      const expected = names.map((name) => `assistant: integration_packages: package \`${name}\` is not installed\n`);
      if (result.code === 2 && expected.includes(`${result.stderr.split('\n')[0]}\n`)) return undefined;
      return `expected config check to refuse only an uninstalled ${names.join(' or ')}, got exit ${result.code}:\n${result.stderr}`;
    }
    case 'manifest':
      try {
        parseManifest(example.text, `${example.file}:${example.line}`);
        return undefined;
      } catch (error) {
        return error instanceof ManifestError ? error.problems.map(formatManifestProblem).join('\n') : String(error);
      }
    case 'task-file': {
      const named = /^# (?:\S*\/)?([^/\s]+\.yaml)\n/.exec(example.text)?.[1];
      if (named === undefined) return 'a task-file example must start with a comment naming its file';
      try {
        parseNamedTaskFile(named, example.text);
        return undefined;
      } catch (error) {
        return String(error);
      }
    }
    case 'hook': {
      const named = /^# hooks\/([a-z0-9][a-z0-9_-]*)\.yaml\n/.exec(example.text)?.[1];
      if (named === undefined) return 'a hook example must start with a comment naming its file: `# hooks/NAME.yaml`';
      return failed(await configCheck(hookBase, undefined, { [`hooks/${named}.yaml`]: example.text }), example.text);
    }
    case 'hooks-config': {
      const config = `${hookBase}${example.text}`;
      return failed(await configCheck(config), config);
    }
    case 'persona': {
      if (example.argument === undefined || !/^[A-Za-z0-9_-]{1,64}$/.test(example.argument)) {
        return 'a persona example names its persona after the kind: ```markdown persona researcher';
      }
      return failed(
        await configCheck(hookBase, undefined, { [`personas/${example.argument}.md`]: example.text }),
        example.text,
      );
    }
    case 'workflow': {
      const workflowFile = (text: string) => /^# (agents\/[a-z0-9][a-z0-9_-]*\.yaml)\n/.exec(text)?.[1];
      const own = workflowFile(example.text);
      if (own === undefined)
        return 'a workflow example must start with a comment naming its file: `# agents/NAME.yaml`';
      const workflows = (await yamlExamples()).filter((other) => other.kind === 'workflow');
      const files = Object.fromEntries(
        workflows.flatMap((other) => {
          const file = workflowFile(other.text);
          return file === undefined ? [] : [[file, other.text]];
        }),
      );
      return failed(
        await configCheck('data_dir: ./data\n', undefined, { ...workflowPersonaFiles, ...files, [own]: example.text }),
        example.text,
      );
    }
    default:
      return `unknown example kind \`${example.kind}\`: write one of ${exampleKinds.join(', ')} after \`\`\`yaml`;
  }
}

describe('YAML examples in README.md, docs/ and integrations/*/README.md', () => {
  it('finds the examples of every kind', async () => {
    const kinds = new Set((await yamlExamples()).map((example) => example.kind));
    expect([...kinds].sort()).toEqual([...exampleKinds].sort());
  });

  it('each passes the check for what it is: config check, the manifest schema or the task file parser', async () => {
    const problems: string[] = [];
    for (const example of await yamlExamples()) {
      const problem = await checkExample(example);
      if (problem !== undefined) problems.push(`${example.file}:${example.line} (${example.kind}): ${problem}`);
    }
    expect(problems, problems.join('\n\n')).toEqual([]);
  });

  it('notices a broken example', async () => {
    const broken = { file: 'test', line: 1, text: '' };
    expect(await checkExample({ ...broken, kind: 'config', text: 'data_dir: ./data\nno_such_key: 1\n' })).toMatch(
      /no_such_key/,
    );
    expect(
      await checkExample({ ...broken, kind: 'platform', text: 'automations:\n  - then: no_such_action\n' }),
    ).toMatch(/no_such_action/);
    expect(await checkExample({ ...broken, kind: 'manifest', text: 'domain: x\nno_such_key: 1\n' })).toBeDefined();
    expect(await checkExample({ ...broken, kind: 'task-file', text: 'payload: {}\n' })).toMatch(/comment naming/);
    expect(
      await checkExample({ ...broken, kind: 'hook', text: '# hooks/x.yaml\non: a.b\nthen: {notfiy: hi}\n' }),
    ).toMatch(/notfiy/);
    expect(
      await checkExample({ ...broken, kind: 'workflow', text: '# agents/x.yaml\ntopology: mesh\nagents: [ghost]\n' }),
    ).toMatch(/agents\/x\.yaml:3:10: agents\[0\]: unknown persona `ghost`/);
    // A hook written wrong deep inside is reported at its file, line, column and key, with the right word.
    const misspelt =
      '# hooks/x.yaml\ndescription: x\non: task.failed\nwhen:\n  task_type: system.sleep\nthen:\n  - notfiy: hi\n';
    expect(await checkExample({ ...broken, kind: 'hook', text: misspelt })).toMatch(
      /^hooks\/x\.yaml:7:\d+: then\[0\]\.notfiy: `notfiy` is not an action: .*\n\s*hint: did you mean `notify`\?/m,
    );
    // docs/hooks.md's worked example "merge when green" without `approval: required`: refused at the script's line.
    const unapproved = [
      '# hooks/merge-when-green.yaml',
      'on: github.delivery',
      'when: {event: check_suite, action: completed, repository: acme/api}',
      'ask: Did the build pass?',
      'once: true',
      'then:',
      '  - script: merge_pr',
      '',
    ].join('\n');
    expect(await checkExample({ ...broken, kind: 'hook', text: unapproved })).toMatch(
      /^hooks\/merge-when-green\.yaml:7:\d+: then\[0\]: `script merge_pr` cannot be undone, and this hook decides by asking an LLM/m,
    );
    expect(
      await checkExample({ ...broken, kind: 'hooks-config', text: 'hooks:\n  - name: x\n    whne: {}\n' }),
    ).toMatch(/whne/);
    expect(
      await checkExample({
        ...broken,
        kind: 'persona',
        argument: 'x',
        text: '---\ntools: {allow: [serch_notes]}\n---\nHi.\n',
      }),
    ).toMatch(/^personas\/x\.md:2:\d+: tools\.allow\[0\]: unknown tool `serch_notes`/m);
    expect(await checkExample({ ...broken, kind: 'yml-ish', text: 'a: 1\n' })).toMatch(/unknown example kind/);
  });
});
