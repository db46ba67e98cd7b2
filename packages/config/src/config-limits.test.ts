import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig, parseConfig, readConfigFile } from './load-config.ts';
import { formatProblem } from './problems.ts';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'assistant-config-limits-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** Loads `config` (and `secrets`) from files and returns the refusal's message; fails when it loads. */
async function refusal(config: string, secrets?: string): Promise<string> {
  await writeFile(path.join(dir, 'config.yaml'), config);
  if (secrets !== undefined) {
    await writeFile(path.join(dir, 'secrets.yaml'), secrets);
    await chmod(path.join(dir, 'secrets.yaml'), 0o600);
  }
  const error = await loadConfig({ configPath: path.join(dir, 'config.yaml'), cwd: dir }).then(
    () => undefined,
    (thrown: unknown) => thrown,
  );
  expect(error).toBeInstanceOf(ConfigError);
  expect((error as ConfigError).code).toBe('CONFIG_INVALID');
  return (error as ConfigError).message;
}

const mebibyte = 1024 * 1024;

describe('readConfigFile', () => {
  it('reads a file up to the limit whole, and one byte more is refused', async () => {
    await writeFile(path.join(dir, 'at.yaml'), 'z'.repeat(mebibyte));
    expect((await readConfigFile(path.join(dir, 'at.yaml'))).length).toBe(mebibyte);
    await writeFile(path.join(dir, 'past.yaml'), 'z'.repeat(mebibyte + 1));
    await expect(readConfigFile(path.join(dir, 'past.yaml'), 'past.yaml')).rejects.toThrow(
      /past\.yaml.*limit is 1048576 bytes/,
    );
  });

  it('reads what comes past the size it had when opened, and stops one byte past the limit of an endless file', async () => {
    // Both say they are empty when opened: the reading goes on past that, as for a file that grows meanwhile.
    expect(await readConfigFile('/proc/self/status')).toMatch(/^Name:.*\n[\s\S]*VmRSS:/);
    await expect(readConfigFile('/dev/zero', 'zero.yaml')).rejects.toThrow(/zero\.yaml.*limit is 1048576 bytes/);
  });
});

describe('config size limits', () => {
  it('hole 19: a 20 MB config.yaml is refused before it is parsed, naming the file and the limit', async () => {
    const message = await refusal(`data_dir: ./data\ntitle: "${'x'.repeat(20 * mebibyte)}"\n`);
    expect(message).toMatch(/config\.yaml.*20971\d{3} bytes.*limit is 1048576 bytes \(1 MiB\)/);
  });

  it('hole 19: a 20 MB secrets.yaml is refused before it is parsed, naming the file and the limit', async () => {
    const message = await refusal('data_dir: ./data\n', `big: "${'x'.repeat(20 * mebibyte)}"\n`);
    expect(message).toMatch(/secrets\.yaml.*limit is 1048576 bytes \(1 MiB\)/);
    // The secret's value never reaches the message.
    expect(message).not.toContain('xxxx');
  });

  it('hole 19: about a million keys are refused by the size limit, and many small values by the value limit', async () => {
    const million = Array.from({ length: 1_000_000 }, (_, index) => `k${index}: 1`).join('\n');
    expect(await refusal(`data_dir: ./data\nextra:\n${million}\n`)).toMatch(/config\.yaml.*limit is 1048576 bytes/);
    // Under a mebibyte, yet 300,000 values: refused before the YAML parser builds them.
    const values = `[${Array.from({ length: 300_000 }, () => '1').join(',')}]`;
    const result = parseConfig({ text: `data_dir: ./data\nextra: ${values}\n` });
    expect(result.errors.map(formatProblem)).toEqual([
      expect.stringMatching(/^config\.yaml:1:1: the document has more than 100000 values; the limit is 100000/),
    ]);
  });

  it('hole 19: nesting deeper than 64 levels is refused before parsing, block, flow or compact', async () => {
    const block = Array.from({ length: 20_000 }, (_, index) => `${' '.repeat(index)}a:`).join('\n');
    expect(await refusal(`${block} 1\n`)).toMatch(/config\.yaml.*limit is 1048576 bytes/);
    const hostile = {
      'a block mapping 100 deep': `${Array.from({ length: 100 }, (_, index) => `${' '.repeat(index)}a:`).join('\n')} 1\n`,
      'flow sequences 400,000 deep': `x: ${'['.repeat(400_000)}${']'.repeat(400_000)}\n`,
      'flow mappings 100,000 deep': `x: ${'{a: '.repeat(100_000)}1${'}'.repeat(100_000)}\n`,
      'compact sequences 400,000 deep': `x:\n${'- '.repeat(400_000)}1\n`,
    };
    for (const [what, text] of Object.entries(hostile)) {
      const result = parseConfig({ text });
      expect(result.errors.map(formatProblem), what).toEqual([
        expect.stringMatching(/^config\.yaml:\d+:\d+: the document nests deeper than 64 levels; the limit is 64/),
      ]);
    }
    const deepSecrets = `x: ${'['.repeat(100)}${']'.repeat(100)}\n`;
    const result = parseConfig({ text: 'data_dir: ./data\n', secretsText: deepSecrets });
    expect(result.errors.map(formatProblem)).toEqual([
      expect.stringMatching(/^secrets\.yaml:\d+:\d+: the document nests deeper than 64 levels/),
    ]);
  });

  it('does not mistake ordinary nesting, brackets inside scalars or block scalars for depth', () => {
    const text = [
      'data_dir: ./data',
      'scripts:',
      '  tidy:',
      '    command: ["sh", "-c", "echo [[[[ {{{{ ]]"]',
      'queue:',
      '  policies:',
      '    overrides:',
      '      "email.*": {rate_limit: {max: 2, per: 1m}}',
      `extra_title: a [plain {scalar with [brackets ${'['.repeat(100)}`,
      'notes: |',
      `  ${'['.repeat(200)}`,
      `  - - - - ${'- '.repeat(100)}`,
      "quoted: 'it''s [[[[ {{{{'",
    ].join('\n');
    const problems = parseConfig({ text }).errors.map(formatProblem);
    expect(problems.filter((problem) => /nests deeper|values; the limit/.test(problem))).toEqual([]);
  });

  it('hole 19: a mapping with tens of thousands of keys is read once, duplicates still reported', () => {
    const keys = Array.from({ length: 40_000 }, (_, index) => `  k${index}: 1`).join('\n');
    const result = parseConfig({ text: `data_dir: ./data\nextra:\n${keys}\n  k7: 2\n` });
    expect(result.errors.map(formatProblem)).toContainEqual(
      expect.stringMatching(/^config\.yaml:40003:3: extra: YAML syntax: Map keys must be unique/),
    );
  });
});
