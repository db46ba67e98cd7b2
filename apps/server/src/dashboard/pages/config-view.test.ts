import { Secret } from '@assistant/config';
import { describe, expect, it } from 'vitest';
import { plainValue, problemsTable, valueTable } from './config-view.ts';

describe('config view', () => {
  it('shows a secret by its name only, wherever it is nested', () => {
    const secret = new Secret('llm_key', 'sk-config-view-test-secret-value');
    const out = valueTable({ llms: { default: { token: secret, list: [secret] } } }, 'c').toString();
    expect(out).toContain('(secret: llm_key)');
    expect(out).not.toContain('sk-config-view-test-secret-value');
    // A loaded secret's value pasted into a plain field is scrubbed too.
    expect(plainValue('prefix sk-config-view-test-secret-value')).not.toContain('sk-config-view-test-secret-value');
  });

  it('escapes markup in keys and values, and shows durations in words', () => {
    const out = valueTable({ '<k>': '<script>alert(1)</script>', pollIntervalMs: 90_000 }, 'c').toString();
    expect(out).not.toContain('<script>');
    expect(out).not.toContain('<k>');
    expect(out).toContain('1m30s');
  });

  it('lists a problem with its file, line, column and key', () => {
    const out = problemsTable([
      {
        severity: 'error',
        file: 'config.yaml',
        position: { line: 12, col: 7 },
        path: ['integrations', 0, 'schedule'],
        message: 'bad <value>',
        hint: 'try `every: 15m`',
      },
    ]).toString();
    expect(out).toContain('12:7');
    expect(out).toContain('integrations[0].schedule');
    expect(out).toContain('bad &lt;value&gt;');
    expect(out).toContain('hint: try `every: 15m`');
  });
});
