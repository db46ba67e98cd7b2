import { readFile } from 'node:fs/promises';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { configJsonSchema } from './json-schema.ts';
import { emailType, fixturesDir } from './testing/email-type.ts';

// Editors see tagged values as plain scalars: `!secret name` is the string `name` to them.
const asEditorSees = (text: string): unknown =>
  parse(text, {
    customTags: [
      { tag: '!secret', resolve: (value: string) => value },
      { tag: '!yolo', resolve: (value: string) => value },
    ],
  });

describe('configJsonSchema', () => {
  const schema = configJsonSchema({ integrationTypes: [emailType] });
  const validate = new Ajv2020({ strict: false, allErrors: true }).compile(schema);

  it('is a draft 2020-12 schema that refuses unknown top-level keys', () => {
    expect(schema.$schema).toBe('https://json-schema.org/draft/2020-12/schema');
    expect(schema.additionalProperties).toBe(false);
    expect(Object.keys(schema.properties as object).sort()).toEqual(
      [
        'agents',
        'approvals',
        'circuit_breaker',
        'data_dir',
        'directories',
        'embeddings',
        'events',
        'hooks',
        'human_log',
        'integration_dirs',
        'integration_packages',
        'integrations',
        'llm_cache',
        'llms',
        'mcp_servers',
        'memory',
        'owner',
        'queue',
        'scripts',
        'server',
        'tools',
        'worker',
      ].sort(),
    );
  });

  it('accepts what the loader accepts', async () => {
    for (const name of ['full.yaml', 'empty.yaml']) {
      const data = asEditorSees(await readFile(new URL(`good/${name}`, fixturesDir), 'utf8')) ?? {};
      expect(validate(data) ? [] : validate.errors, name).toEqual([]);
    }
    const repositoryDefault = asEditorSees(
      await readFile(new URL('../../../config.yaml', import.meta.url), 'utf8'),
    ) as { integrations?: { type: string }[] };
    // This schema knows the email type only (the manifests are another package's); the repository's other example
    // instances (github) are checked against their manifests by `config check` (tests/cli.test.ts, "defaults").
    const emailOnly = {
      ...repositoryDefault,
      integrations: (repositoryDefault.integrations ?? []).filter((instance) => instance.type === 'email'),
    };
    expect(emailOnly.integrations).toHaveLength(1);
    expect(validate(emailOnly) ? [] : validate.errors).toEqual([]);
  });

  it('flags what an editor should underline', () => {
    expect(validate({ sever: {} })).toBe(false);
    expect(validate({ worker: { concurrency: 'two' } })).toBe(false);
    expect(validate({ integrations: [{ type: 'email', name: 'x', imap_server: 'h', imap_sever: 'h' }] })).toBe(false);
  });
});
