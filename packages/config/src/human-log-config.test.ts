import { describe, expect, it } from 'vitest';
import { parseConfig } from './load-config.ts';
import { formatProblem } from './problems.ts';
import { serializeConfig } from './serialize-config.ts';

describe('human_log', () => {
  it('keeps every day by default, and takes a retention in days that round-trips', () => {
    expect(parseConfig({ text: '' }).config?.humanLog).toEqual({ retentionDays: undefined });
    const result = parseConfig({ text: 'human_log:\n  retention_days: 365\n' });
    expect(result.errors.map(formatProblem)).toEqual([]);
    expect(result.config?.humanLog).toEqual({ retentionDays: 365 });
    if (!result.config) throw new Error('no config');
    expect(parseConfig({ text: serializeConfig(result.config) }).config?.humanLog).toEqual({ retentionDays: 365 });
  });

  it('refuses a retention that is not a whole number of days, or an unknown key, naming the line and key', () => {
    const problems = parseConfig({ text: 'human_log:\n  retention_days: 0\n  keep: forever\n' })
      .errors.map(formatProblem)
      .join('\n');
    expect(problems).toContain('config.yaml:2');
    expect(problems).toContain('human_log.retention_days');
    expect(problems).toContain('human_log.keep');
  });
});
