import { describe, expect, it } from 'vitest';
import { parseConfig } from './load-config.ts';
import { formatProblem } from './problems.ts';

describe('llm_cache', () => {
  it.each(['live', 'off', 'record', 'replay', 'auto'])('accepts mode %s (off is the older name of live)', (mode) => {
    const result = parseConfig({ text: `llm_cache:\n  mode: ${mode}\n  directory: ./tests/fixtures/llm\n` });
    expect(result.errors.map(formatProblem)).toEqual([]);
    expect(result.config?.llmCache).toEqual({ mode, directory: './tests/fixtures/llm' });
  });

  it('names the valid modes for one it does not know', () => {
    const result = parseConfig({ text: 'llm_cache:\n  mode: replay-all\n' });
    const problems = result.errors.map(formatProblem).join('\n');
    expect(problems).toContain('llm_cache.mode');
    expect(problems).toContain('live');
  });
});
