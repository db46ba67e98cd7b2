import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  addToUsage,
  emptyUsage,
  llmUsageFile,
  readUsage,
  UsageRecorder,
  usageCost,
  usageDaysKept,
  usageEvent,
  usageToday,
} from './llm-usage.ts';
import { renderPrometheus } from './task-metrics.ts';

const sonnet = { input: 3, output: 15, cachedInput: 0.3, cacheWrite: 3.75 };

describe('usageCost', () => {
  it('bills plain, cached and cache-write prompt tokens and completion tokens at their prices per million', () => {
    // 1000 prompt tokens of which 600 cached and 100 written: 300 plain.
    const cost = usageCost(
      { promptTokens: 1000, cachedPromptTokens: 600, cacheWriteTokens: 100, completionTokens: 200, totalTokens: 1200 },
      sonnet,
    );
    expect(cost).toBeCloseTo((300 * 3 + 600 * 0.3 + 100 * 3.75 + 200 * 15) / 1_000_000, 12);
    expect(usageCost({ promptTokens: 1_000_000, completionTokens: 0, totalTokens: 1_000_000 }, sonnet)).toBe(3);
  });

  it('never counts negative plain tokens when a provider reports more cached than prompt tokens', () => {
    expect(
      usageCost({ promptTokens: 10, cachedPromptTokens: 50, completionTokens: 0, totalTokens: 10 }, sonnet),
    ).toBeCloseTo((50 * 0.3) / 1_000_000, 12);
  });
});

describe('usage per day', () => {
  const usage = { promptTokens: 1000, cachedPromptTokens: 400, completionTokens: 100, totalTokens: 1100 };

  it('counts a call on the owner’s calendar day, rolling over at their midnight, not UTC’s', () => {
    const beforeMidnight = new Date('2026-11-28T22:59:00Z'); // 23:59 in Berlin
    const afterMidnight = new Date('2026-11-28T23:01:00Z'); // 00:01 on the 29th in Berlin, still the 28th in UTC
    const file = addToUsage(emptyUsage(), [
      usageEvent({ profile: 'claude', usage, prices: sonnet, timeZone: 'Europe/Berlin', at: beforeMidnight }),
      usageEvent({ profile: 'claude', usage, prices: sonnet, timeZone: 'Europe/Berlin', at: afterMidnight }),
      usageEvent({ profile: 'local', usage, timeZone: 'Europe/Berlin', at: afterMidnight }),
    ]);
    expect(Object.keys(file.days).sort()).toEqual(['2026-11-28', '2026-11-29']);
    const today = usageToday(file, { timeZone: 'Europe/Berlin', now: afterMidnight });
    expect(today.claude).toMatchObject({
      calls: 1,
      prompt_tokens: 1000,
      cached_prompt_tokens: 400,
      completion_tokens: 100,
    });
    expect(today.claude?.cost).toBeCloseTo((600 * 3 + 400 * 0.3 + 100 * 15) / 1_000_000, 12);
    expect(today.local).toMatchObject({ calls: 1, cost: 0, unpriced_calls: 1 });
    expect(file.totals.claude?.calls).toBe(2);
  });

  it(`keeps the newest ${usageDaysKept} days and the totals of every day`, () => {
    const events = Array.from({ length: usageDaysKept + 5 }, (_unused, index) =>
      usageEvent({
        profile: 'p',
        usage,
        timeZone: 'UTC',
        at: new Date(Date.UTC(2026, 0, 1 + index, 12)),
      }),
    );
    const file = addToUsage(emptyUsage(), events);
    expect(Object.keys(file.days)).toHaveLength(usageDaysKept);
    expect(Object.keys(file.days).sort()[0]).toBe('2026-01-06');
    expect(file.totals.p?.calls).toBe(usageDaysKept + 5);
  });
});

describe('UsageRecorder', () => {
  let directory: string;
  beforeEach(async () => {
    directory = await mkdtemp(path.join(tmpdir(), 'llm-usage-'));
  });
  afterEach(async () => {
    await rm(directory, { recursive: true, force: true });
  });

  it('keeps today’s figures in the file across a restart (a new recorder adds to them)', async () => {
    const file = llmUsageFile(directory);
    const at = new Date('2026-11-28T10:00:00Z');
    const usage = { promptTokens: 100, completionTokens: 10, totalTokens: 110 };
    const first = new UsageRecorder({ file });
    first.record(usageEvent({ profile: 'claude', usage, prices: sonnet, timeZone: 'UTC', at }));
    await first.flush();
    const second = new UsageRecorder({ file });
    second.record(usageEvent({ profile: 'claude', usage, prices: sonnet, timeZone: 'UTC', at }));
    await second.flush();
    const today = usageToday(await readUsage(file), { timeZone: 'UTC', now: at });
    expect(today.claude).toMatchObject({ calls: 2, prompt_tokens: 200, completion_tokens: 20 });
  });
});

describe('renderPrometheus with usage', () => {
  it('renders tokens by kind and the estimated cost per profile', () => {
    const usage = addToUsage(emptyUsage(), [
      usageEvent({
        profile: 'claude',
        usage: {
          promptTokens: 1000,
          cachedPromptTokens: 600,
          cacheWriteTokens: 100,
          completionTokens: 200,
          totalTokens: 1200,
        },
        prices: sonnet,
        timeZone: 'UTC',
        at: new Date('2026-11-28T10:00:00Z'),
      }),
    ]);
    const text = renderPrometheus({
      queue: {},
      snapshot: { version: 1, updated_at: '2026-11-28T10:00:00Z', tasks: {}, rejections: {} },
      workersAlive: 0,
      llmUsage: { usage, currency: 'EUR' },
    });
    expect(text).toContain('assistant_llm_tokens_total{profile="claude",kind="prompt"} 1000');
    expect(text).toContain('assistant_llm_tokens_total{profile="claude",kind="cached_prompt"} 600');
    expect(text).toContain('assistant_llm_tokens_total{profile="claude",kind="cache_write"} 100');
    expect(text).toContain('assistant_llm_tokens_total{profile="claude",kind="completion"} 200');
    expect(text).toMatch(/assistant_llm_cost_total\{profile="claude",currency="EUR"\} 0\.00445\d*\n/);
  });
});
