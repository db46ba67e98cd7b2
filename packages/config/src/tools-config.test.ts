import { describe, expect, it } from 'vitest';
import { parseConfig } from './load-config.ts';
import { serializeConfig } from './serialize-config.ts';

describe('config.yaml tools:', () => {
  it('defaults to no patterns and a 30-minute approval timeout', () => {
    const { config } = parseConfig({ text: 'data_dir: ./data\n' });
    expect(config?.tools).toEqual({ allow: [], deny: [], approve: [], approvalTimeoutMs: 1_800_000 });
  });

  it('reads patterns and the timeout, and writes them back the same', () => {
    const text =
      'tools:\n  allow: [notes_*, everything__echo]\n  deny: [filesystem__write_file]\n  approve: [trigger]\n  approval_timeout: 10m\n';
    const { config } = parseConfig({ text });
    expect(config?.tools).toEqual({
      allow: ['notes_*', 'everything__echo'],
      deny: ['filesystem__write_file'],
      approve: ['trigger'],
      approvalTimeoutMs: 600_000,
    });
    if (config === undefined) throw new Error('expected a config');
    const again = parseConfig({ text: serializeConfig(config) });
    expect(again.config?.tools).toEqual(config.tools);
  });

  it('refuses a pattern with characters a tool name cannot have', () => {
    const result = parseConfig({ text: 'tools:\n  deny: ["fs/write", "a b"]\n' });
    expect(result.config).toBeUndefined();
    expect(JSON.stringify(result.errors)).toContain('letters, digits, _, - and *');
  });
});
