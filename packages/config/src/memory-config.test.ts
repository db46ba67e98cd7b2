import { describe, expect, it } from 'vitest';
import { parseConfig } from './load-config.ts';
import { formatProblem } from './problems.ts';
import { serializeConfig } from './serialize-config.ts';

const llms = 'llms:\n  default:\n    base_url: http://127.0.0.1:11434/v1\n    model: llama3.2\n';

describe('embeddings', () => {
  it('is absent by default (the offline hashing embedder)', () => {
    const result = parseConfig({ text: llms });
    expect(result.errors.map(formatProblem)).toEqual([]);
    expect(result.config?.embeddings).toBeUndefined();
  });

  it('reads an endpoint with its key from secrets.yaml and a timeout', () => {
    const result = parseConfig({
      text: `${llms}embeddings:\n  base_url: http://127.0.0.1:11434/v1\n  model: nomic-embed-text\n  api_key: !secret embed_key\n  timeout: 10s\n`,
      secretsText: 'embed_key: sk-embed-123\n',
    });
    expect(result.errors.map(formatProblem)).toEqual([]);
    expect(result.config?.embeddings).toMatchObject({
      baseUrl: 'http://127.0.0.1:11434/v1',
      model: 'nomic-embed-text',
      timeoutMs: 10_000,
    });
    expect(result.config?.embeddings?.apiKey?.reveal()).toBe('sk-embed-123');
    // The key goes back out as a reference, never as its value.
    if (!result.config) throw new Error('no config');
    const text = serializeConfig(result.config);
    expect(text).toContain('!secret embed_key');
    expect(text).not.toContain('sk-embed-123');
  });

  it('refuses credentials in the URL, naming the file, line and key', () => {
    const result = parseConfig({
      text: `${llms}embeddings:\n  base_url: http://user:pw@127.0.0.1:11434/v1\n  model: nomic-embed-text\n`,
    });
    const problems = result.errors.map(formatProblem).join('\n');
    expect(problems).toContain('config.yaml:6');
    expect(problems).toContain('embeddings.base_url');
    expect(problems).toContain('api_key: !secret');
  });

  it('refuses a missing model and an unknown key', () => {
    const result = parseConfig({ text: `${llms}embeddings:\n  base_url: http://127.0.0.1:11434/v1\n  modle: x\n` });
    const problems = result.errors.map(formatProblem).join('\n');
    expect(problems).toContain('embeddings.modle');
    expect(problems).toContain('`model`? (it is required, and missing)');
  });
});

describe('memory', () => {
  it('defaults to consolidating email, github and chat with the default profile, 5 facts and 2 guidance', () => {
    const result = parseConfig({ text: llms });
    expect(result.config?.memory).toEqual({
      consolidate: ['email', 'github', 'chat'],
      llm: 'default',
      ownerIdentities: [],
      context: { facts: 5, guidance: 2 },
    });
  });

  it('turns consolidation off with [] or an empty key', () => {
    for (const written of ['[]', '']) {
      const result = parseConfig({ text: `${llms}memory:\n  consolidate: ${written}\n` });
      expect(result.errors.map(formatProblem)).toEqual([]);
      expect(result.config?.memory.consolidate).toEqual([]);
    }
  });

  it('reads a subset, a profile and context sizes', () => {
    const result = parseConfig({
      text: `${llms}  small:\n    base_url: http://127.0.0.1:11434/v1\n    model: qwen2.5\nmemory:\n  consolidate: [email]\n  llm: small\n  context: {facts: 8, guidance: 0}\n`,
    });
    expect(result.errors.map(formatProblem)).toEqual([]);
    expect(result.config?.memory).toEqual({
      consolidate: ['email'],
      llm: 'small',
      ownerIdentities: [],
      context: { facts: 8, guidance: 0 },
    });
  });

  it("reads the owner's identities, lower-cased, and names the line of one that is neither address nor handle", () => {
    const good = parseConfig({ text: `${llms}memory:\n  owner_identities: [Me@Example.org, github:JReyes]\n` });
    expect(good.errors.map(formatProblem)).toEqual([]);
    expect(good.config?.memory.ownerIdentities).toEqual(['me@example.org', 'github:jreyes']);
    const bad = parseConfig({ text: `${llms}memory:\n  owner_identities: [me@example.org, jreyes]\n` });
    const problems = bad.errors.map(formatProblem).join('\n');
    expect(problems).toContain('config.yaml:6:');
    expect(problems).toContain('memory.owner_identities');
    expect(problems).toContain('platform:handle');
  });

  it('names the line and the valid domains for one it does not know', () => {
    const result = parseConfig({ text: `${llms}memory:\n  consolidate: [email, telegram]\n` });
    const problems = result.errors.map(formatProblem).join('\n');
    expect(problems).toContain('config.yaml:6:24');
    expect(problems).toContain('memory.consolidate');
    expect(problems).toContain('telegram');
    expect(problems).toContain('github');
  });

  it('refuses a profile that is not under llms:, naming the defined ones', () => {
    const result = parseConfig({ text: `${llms}memory:\n  llm: smal\n` });
    const problems = result.errors.map(formatProblem).join('\n');
    expect(problems).toContain('memory.llm');
    expect(problems).toContain('`smal`');
    expect(problems).toContain('defined profiles: default');
  });

  it('accepts a config without any LLM (nothing is consolidated then) and a bad context size is an error', () => {
    expect(parseConfig({ text: 'data_dir: ./data\n' }).errors).toEqual([]);
    const result = parseConfig({ text: `${llms}memory:\n  context: {facts: -1}\n` });
    expect(result.errors.map(formatProblem).join('\n')).toContain('memory.context.facts');
  });

  it('survives a round trip through the serializer', () => {
    const result = parseConfig({
      text: `${llms}embeddings: {base_url: http://127.0.0.1:11434/v1, model: nomic-embed-text}\nmemory: {consolidate: [chat], owner_identities: [github:jreyes], context: {facts: 3}}\n`,
    });
    if (!result.config) throw new Error('no config');
    const again = parseConfig({ text: serializeConfig(result.config) });
    expect(again.errors.map(formatProblem)).toEqual([]);
    expect(again.config?.memory).toEqual(result.config?.memory);
    expect(again.config?.embeddings).toEqual(result.config?.embeddings);
  });

  it('leaves the implied default profile implied when it serializes, so a config without LLMs loads again', () => {
    const result = parseConfig({ text: 'data_dir: ./data\n' });
    if (!result.config) throw new Error('no config');
    const text = serializeConfig(result.config);
    expect(text).not.toMatch(/llm: default/);
    expect(parseConfig({ text }).errors.map(formatProblem)).toEqual([]);
  });
});
