import type { ModelProfileStatus } from '@assistant/llm';
import { describe, expect, it } from 'vitest';
import { laneCapacity } from './lanes.ts';

function status(profile: string, maxInFlight: number, adaptive?: { ceiling: number }): ModelProfileStatus {
  return {
    profile,
    model: 'm',
    maxInFlight,
    ...(adaptive ? { adaptive } : {}),
    inFlight: 0,
    waiting: 0,
    requests: 0,
    failures: 0,
    requestsLastMinute: 0,
    tokensLastMinute: 0,
    latencyMs: null,
    breaker: { state: 'closed', consecutiveFailures: 0 },
  };
}

describe('laneCapacity', () => {
  it('is twice what the profiles send at once, an adaptive profile counting one more than its current limit', () => {
    expect(laneCapacity(['local'], [status('local', 4)])).toBe(8);
    expect(laneCapacity(['local'], [status('local', 1, { ceiling: 64 })])).toBe(4);
    expect(laneCapacity(['local', 'remote'], [status('local', 3, { ceiling: 64 }), status('remote', 2)])).toBe(12);
    // Not configured: its tasks fail at once, one at a time is enough.
    expect(laneCapacity(['missing'], [])).toBe(2);
  });
});
