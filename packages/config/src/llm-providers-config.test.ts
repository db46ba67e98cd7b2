import { describe, expect, it } from 'vitest';
import { parseConfig } from './load-config.ts';
import { machineTimeZone } from './machine-time-zone.ts';
import { formatProblem } from './problems.ts';
import { serializeConfig } from './serialize-config.ts';

const secretsText = 'claude_key: sk-ant-test\ngemini_key: AIza-test\nlocal_token: t0k\n';
const parse = (text: string) => parseConfig({ text, secretsText });
const errorLines = (text: string) => parse(text).errors.map(formatProblem);

describe('llms: provider, api_key, base_url', () => {
  it('reads an existing profile unchanged as openai-compatible', () => {
    const profile = parse(
      'llms:\n  default: {base_url: "http://127.0.0.1:11434/v1", model: m, token: !secret local_token}\n',
    ).config?.llms.default;
    expect(profile).toMatchObject({
      provider: 'openai-compatible',
      baseUrl: 'http://127.0.0.1:11434/v1',
    });
    expect(profile?.apiKey?.reveal()).toBe('t0k');
  });

  it('fills the provider’s own base URL', () => {
    const config = parse(
      [
        'llms:',
        '  claude: {provider: anthropic, model: claude-sonnet-4-5, api_key: !secret claude_key}',
        '  gemini: {provider: google, model: gemini-2.5-flash, api_key: !secret gemini_key}',
        '  gpt: {provider: openai, model: gpt-4.1, api_key: !secret local_token}',
        '  proxy: {provider: anthropic, base_url: "http://127.0.0.1:9000/v1", model: m, api_key: !secret claude_key}',
        '',
      ].join('\n'),
    ).config;
    expect(config?.llms.claude).toMatchObject({ baseUrl: 'https://api.anthropic.com/v1' });
    expect(config?.llms.claude?.apiKey?.reveal()).toBe('sk-ant-test');
    expect(config?.llms.gemini?.baseUrl).toBe('https://generativelanguage.googleapis.com/v1beta');
    expect(config?.llms.gpt?.baseUrl).toBe('https://api.openai.com/v1');
    expect(config?.llms.proxy).toMatchObject({ baseUrl: 'http://127.0.0.1:9000/v1' });
  });

  it('refuses an unknown provider at its line, naming the valid ones', () => {
    expect(
      errorLines('llms:\n  claude:\n    provider: antropic\n    model: m\n    api_key: !secret claude_key\n'),
    ).toEqual([
      'config.yaml:3:15: llms.claude.provider: expected one of `openai-compatible`, `openai`, `anthropic`, `google`, got `"antropic"` (string)\n' +
        '  hint: did you mean `anthropic`?',
    ]);
  });

  it('refuses anthropic, google and openai without an api_key, at the provider line', () => {
    expect(errorLines('llms:\n  claude:\n    provider: anthropic\n    model: m\n')).toEqual([
      'config.yaml:3:15: llms.claude.provider: provider anthropic needs `api_key: !secret …`: its API refuses a request without one\n' +
        '  hint: add `api_key: !secret anthropic_key`, with `anthropic_key: …` in secrets.yaml',
    ]);
    expect(errorLines('llms:\n  g: {provider: google, model: m}\n')).toHaveLength(1);
    expect(errorLines('llms:\n  o: {provider: openai, model: m}\n')).toHaveLength(1);
  });

  it('refuses an openai-compatible profile without base_url, saying so at the profile', () => {
    expect(errorLines('llms:\n  local:\n    model: m\n')).toEqual([
      'config.yaml:2:3: llms.local.base_url: provider `openai-compatible` needs `base_url`: the server to talk to\n' +
        '  hint: e.g. `base_url: http://127.0.0.1:11434/v1` (Ollama); or set `provider: openai | anthropic | google`',
    ]);
  });

  it('refuses api_key and token together, naming both at the api_key line', () => {
    expect(
      errorLines(
        'llms:\n  claude:\n    provider: anthropic\n    model: m\n    api_key: !secret claude_key\n    token: !secret local_token\n',
      ),
    ).toEqual([
      'config.yaml:5:22: llms.claude.api_key: both `api_key` and `token` are given: they are the same setting (`token` is its older name)\n' +
        '  hint: keep `api_key: !secret …` and remove `token:`',
    ]);
  });

  it('warns at `provider:` that a provider’s default URL takes prompts off the machine', () => {
    const warnings = parse(
      'llms:\n  claude:\n    provider: anthropic\n    model: m\n    api_key: !secret claude_key\n',
    ).warnings.map(formatProblem);
    expect(warnings).toEqual([
      expect.stringMatching(
        /^config\.yaml:3:15: llms\.claude\.provider: LLM profile `claude` sends prompts to api\.anthropic\.com/,
      ),
    ]);
  });
});

describe('llms: prices', () => {
  it('reads prices per million tokens, cached input and cache writes defaulting to the input price', () => {
    const config = parse(
      'llms:\n  a: {base_url: "http://127.0.0.1/v1", model: m, prices: {input: 3, output: 15}}\n  b: {base_url: "http://127.0.0.1/v1", model: m, prices: {input: 3, output: 15, cached_input: 0.3, cache_write: 3.75}}\n',
    ).config;
    expect(config?.llms.a?.prices).toEqual({ input: 3, output: 15, cachedInput: 3, cacheWrite: 3 });
    expect(config?.llms.b?.prices).toEqual({ input: 3, output: 15, cachedInput: 0.3, cacheWrite: 3.75 });
    expect(config?.llms.a).toBeDefined();
    expect(parse('llms:\n  a: {base_url: "http://127.0.0.1/v1", model: m}\n').config?.llms.a).not.toHaveProperty(
      'prices',
    );
  });

  it('refuses a negative price and an unknown price key at the line', () => {
    expect(
      errorLines(
        'llms:\n  a:\n    base_url: "http://127.0.0.1/v1"\n    model: m\n    prices: {input: -1, output: 2}\n',
      ),
    ).toEqual(['config.yaml:5:21: llms.a.prices.input: must be at least 0, got `-1` (number)']);
    expect(
      errorLines(
        'llms:\n  a:\n    base_url: "http://127.0.0.1/v1"\n    model: m\n    prices: {input: 1, output: 2, cached: 1}\n',
      )[0],
    ).toMatch(/^config\.yaml:5:35: llms\.a\.prices\.cached: unknown key `cached`/);
    expect(
      errorLines(
        'llms:\n  a:\n    base_url: "http://127.0.0.1/v1"\n    model: m\n    prices: {input: cheap, output: 2}\n',
      ),
    ).toEqual([
      'config.yaml:5:21: llms.a.prices.input: expected a price (a number, per million tokens), got `"cheap"` (string)',
    ]);
  });
});

describe('owner', () => {
  it('defaults the time zone to the machine’s and the currency to USD', () => {
    expect(parse('').config?.owner).toEqual({ timeZone: machineTimeZone(), currency: 'USD' });
    expect(parse('owner: {timezone: Europe/Berlin, currency: eur}\n').config?.owner).toEqual({
      timeZone: 'Europe/Berlin',
      currency: 'EUR',
    });
  });

  it('refuses a zone Intl does not know, at its line', () => {
    expect(errorLines('owner:\n  timezone: Europe/Berlinn\n')).toEqual([
      'config.yaml:2:13: owner.timezone: `Europe/Berlinn` is not a time zone: use an IANA name such as Europe/Berlin, America/New_York or UTC',
    ]);
  });
});

describe('serializing providers, prices and owner', () => {
  it('loads what it writes back to the same config', () => {
    const text = [
      'owner: {timezone: Asia/Tokyo, currency: EUR}',
      'llms:',
      '  claude: {provider: anthropic, model: m, api_key: !secret claude_key, prices: {input: 3, output: 15, cached_input: 0.3}, prompt_cache: false}',
      '  local: {base_url: "http://127.0.0.1/v1", model: m, token: !secret local_token}',
      '',
    ].join('\n');
    const first = parse(text).config;
    expect(first).toBeDefined();
    const second = first ? parse(serializeConfig(first)) : undefined;
    expect(second?.errors.map(formatProblem)).toEqual([]);
    expect(JSON.stringify(second?.config?.llms)).toBe(JSON.stringify(first?.llms));
    expect(second?.config?.llms.local?.apiKey?.reveal()).toBe('t0k');
    expect(second?.config?.llms.claude?.promptCache).toBe(false);
    expect(second?.config?.llms.local?.promptCache).toBe(true);
    expect(second?.config?.owner).toEqual({ timeZone: 'Asia/Tokyo', currency: 'EUR' });
  });
});
