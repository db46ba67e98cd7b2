import { describe, expect, it } from 'vitest';
import { backoffDelayMs } from './backoff.ts';
import type { QueueConfig } from './queue-config.ts';
import { patternMatches, resolvePolicy } from './resolve-policy.ts';

const policies: QueueConfig['policies'] = {
  defaults: {
    dedup: true,
    rateLimit: null,
    maxAttempts: 3,
    backoff: { type: 'exponential', delayMs: 1_000, maxMs: 10_000 },
    timeoutMs: 60_000,
  },
  overrides: {
    'service.*': { maxAttempts: 5, dedup: false },
    'service.research.*': { timeoutMs: 120_000 },
    'service.research.search': { maxAttempts: 1 },
    '*.classify': { rateLimit: { max: 10, perMs: 60_000 } },
  },
};

describe('resolvePolicy', () => {
  it('applies matching overrides from the least to the most specific', () => {
    expect(resolvePolicy(policies, 'service.research.search')).toMatchObject({
      dedup: false,
      maxAttempts: 1,
      timeoutMs: 120_000,
    });
    expect(resolvePolicy(policies, 'service.research.fetch')).toMatchObject({ maxAttempts: 5, timeoutMs: 120_000 });
    expect(resolvePolicy(policies, 'email.inbox.classify')).toMatchObject({
      rateLimit: { max: 10, perMs: 60_000 },
      maxAttempts: 3,
    });
    expect(resolvePolicy(policies, 'email.inbox.check')).toBe(policies.defaults);
  });

  it('matches wildcards across dots but not partial words without one', () => {
    expect(patternMatches('service.*', 'service.a.b')).toBe(true);
    expect(patternMatches('service.*', 'service')).toBe(false);
    expect(patternMatches('service', 'service.a')).toBe(false);
    expect(patternMatches('*.classify', 'github.pull_requests.classify')).toBe(true);
  });
});

describe('backoffDelayMs', () => {
  it('doubles exponentially up to the cap', () => {
    const backoff = { type: 'exponential' as const, delayMs: 1_000, maxMs: 10_000 };
    expect([1, 2, 3, 4, 5, 100, 5_000].map((attempt) => backoffDelayMs(backoff, attempt))).toEqual([
      1_000, 2_000, 4_000, 8_000, 10_000, 10_000, 10_000,
    ]);
  });

  it('waits the same delay every time when fixed, still capped', () => {
    expect(backoffDelayMs({ type: 'fixed', delayMs: 5_000, maxMs: 60_000 }, 7)).toBe(5_000);
    expect(backoffDelayMs({ type: 'fixed', delayMs: 5_000, maxMs: 1_000 }, 1)).toBe(1_000);
  });
});
