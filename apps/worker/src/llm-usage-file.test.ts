// Issue 32: the worker counts each model call's tokens (cached ones apart) and estimated cost per profile into
// data/metrics/llm-usage.json, under the owner's day, where the server's /metrics and Models card read them.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { FakeAnthropicServer } from '@assistant/llm/testing';
import { llmUsageFile, readUsage } from '@assistant/metrics';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { loadTestRuntime } from './testing/load-test-runtime.ts';
import { runUntilIdle } from './testing/run-until-idle.ts';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'assistant-llm-usage-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('the worker’s LLM usage', () => {
  it('counts an Anthropic profile’s tokens, cached ones apart, and its cost from `prices`, under the owner’s day', async () => {
    await using anthropic = await FakeAnthropicServer.start({
      replies: [{ text: 'Done.', usage: { input: 100, output: 10, cacheRead: 900, cacheWrite: 50 } }],
    });
    await writeFile(path.join(dir, 'secrets.yaml'), 'claude: sk-ant-test-key\n', { mode: 0o600 });
    await writeFile(
      path.join(dir, 'config.yaml'),
      [
        'data_dir: ./data',
        'worker: {poll_interval: 50ms}',
        'owner: {timezone: Asia/Tokyo, currency: EUR}',
        'llms:',
        `  default: {provider: anthropic, base_url: "${anthropic.url}", model: claude-sonnet-4-5, api_key: !secret claude, prices: {input: 3, output: 15, cached_input: 0.3, cache_write: 3.75}}`,
        '',
      ].join('\n'),
    );
    const { config, registry, queue } = await loadTestRuntime(dir);
    const enqueued = await queue.enqueue({ type: 'system.agent', source: 'cli', payload: { prompt: 'Say done.' } });
    await runUntilIdle({ config, registry });
    expect((await queue.get(enqueued.status === 'enqueued' ? enqueued.task.id : ''))?.state).toBe('done');
    const usage = await readUsage(llmUsageFile(config.paths.dataDir));
    // One day (the call's, in Tokyo); which day "today" is at the owner's midnight is the unit tests' matter.
    expect(Object.keys(usage.days)).toHaveLength(1);
    const today = Object.values(usage.days)[0] ?? {};
    expect(today.default).toMatchObject({
      calls: 1,
      prompt_tokens: 1050,
      cached_prompt_tokens: 900,
      cache_write_tokens: 50,
      completion_tokens: 10,
      unpriced_calls: 0,
    });
    expect(today.default?.cost).toBeCloseTo((100 * 3 + 900 * 0.3 + 50 * 3.75 + 10 * 15) / 1_000_000, 12);
    expect(usage.totals.default?.calls).toBe(1);
  });
});
