import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { ChatRequest } from './chat-types.ts';
import { LlmAbortedError } from './llm-errors.ts';
import {
  estimateTokens,
  type GatePermit,
  ModelGate,
  type ModelGateOptions,
  ModelUnavailableError,
} from './model-gate.ts';

/** Waits for a condition; generous, for a loaded machine (vi.waitFor's default is 1 s). */
const until = (check: () => void) => vi.waitFor(check, { timeout: 15_000, interval: 5 });

const gateWith = (options: Partial<ModelGateOptions> = {}) =>
  new ModelGate({
    profile: 'local',
    model: 'fake-model',
    baseUrl: 'http://127.0.0.1:1/v1',
    maxInFlight: 2,
    ...options,
  });

const ask = (content: string): { request: ChatRequest } => ({
  request: { messages: [{ role: 'user', content }] },
});

/** Tracks which of several acquisitions have been admitted, in the order they were. */
function admissions(gate: ModelGate, requests: { request: ChatRequest; signal?: AbortSignal }[]) {
  const order: number[] = [];
  const permits: GatePermit[] = [];
  const settled = requests.map((request, index) =>
    gate.acquire(request).then((permit) => {
      order.push(index);
      permits[index] = permit;
      return permit;
    }),
  );
  return { order, permits, settled };
}

describe('estimateTokens', () => {
  it('counts a quarter of the characters of the messages, tools and schema', () => {
    const messages: ChatRequest['messages'] = [{ role: 'user', content: 'x'.repeat(400) }];
    const plain = estimateTokens({ messages });
    expect(plain).toBe(Math.ceil(JSON.stringify(messages).length / 4));
    const withSchema = estimateTokens({ messages, responseFormat: { name: 'answer', schema: { type: 'object' } } });
    expect(withSchema).toBeGreaterThan(plain);
  });
});

describe('ModelGate', () => {
  it('admits at most maxInFlight at once, first come first served, and the next when a slot frees', async () => {
    const gate = gateWith({ maxInFlight: 2 });
    const { order, permits, settled } = admissions(
      gate,
      [0, 1, 2, 3, 4].map((index) => ask(`call ${index}`)),
    );
    await until(() => expect(order).toEqual([0, 1]));
    expect(gate.status()).toMatchObject({ inFlight: 2, waiting: 3 });
    permits[1]?.succeeded();
    await until(() => expect(order).toEqual([0, 1, 2]));
    permits[0]?.succeeded();
    permits[2]?.failed({ error: new Error('400 bad request'), unavailable: false });
    await until(() => expect(order).toEqual([0, 1, 2, 3, 4]));
    permits[3]?.succeeded();
    permits[4]?.succeeded();
    await Promise.all(settled);
    expect(gate.status()).toMatchObject({ inFlight: 0, waiting: 0, requests: 5, failures: 0 });
  });

  it('lets a waiting caller abort: it leaves the queue with LlmAbortedError and the next moves up', async () => {
    const gate = gateWith({ maxInFlight: 1 });
    const first = await gate.acquire(ask('first'));
    const controller = new AbortController();
    const second = gate.acquire({ ...ask('second'), signal: controller.signal });
    const third = gate.acquire(ask('third'));
    expect(gate.status().waiting).toBe(2);
    controller.abort(new Error('the task was stopped'));
    await expect(second).rejects.toBeInstanceOf(LlmAbortedError);
    expect(gate.status().waiting).toBe(1);
    first.succeeded();
    (await third).succeeded();
    expect(gate.status()).toMatchObject({ inFlight: 0, waiting: 0, requests: 2 });
  });

  describe('with a fake clock', () => {
    beforeEach(() => {
      vi.useFakeTimers();
    });
    afterEach(() => {
      vi.useRealTimers();
    });

    it('holds a request back until the last minute has fewer than requests_per_minute', async () => {
      const gate = gateWith({ maxInFlight: 10, requestsPerMinute: 2 });
      const { order, permits, settled } = admissions(gate, [ask('a'), ask('b'), ask('c')]);
      await vi.advanceTimersByTimeAsync(0);
      expect(order).toEqual([0, 1]);
      permits[0]?.succeeded();
      permits[1]?.succeeded();
      // A free slot is not enough: the budget is spent until the first request leaves the window.
      expect(gate.status()).toMatchObject({ inFlight: 0, waiting: 1, requestsLastMinute: 2 });
      expect(gate.availability()).toEqual({ available: true });
      await vi.advanceTimersByTimeAsync(59_000);
      expect(order).toEqual([0, 1]);
      await vi.advanceTimersByTimeAsync(1_000);
      expect(order).toEqual([0, 1, 2]);
      expect(gate.status()).toMatchObject({ waiting: 0, requestsLastMinute: 1 });
      permits[2]?.succeeded();
      await Promise.all(settled);
    });

    it('keeps the tokens of the last minute within tokens_per_minute, corrected by the usage', async () => {
      const gate = gateWith({ maxInFlight: 10, tokensPerMinute: 100 });
      const small = ask('x'.repeat(40));
      const estimate = estimateTokens(small.request);
      expect(estimate).toBeLessThan(50);
      const first = await gate.acquire(small);
      expect(gate.status().tokensLastMinute).toBe(estimate);
      first.succeeded({ promptTokens: 80, completionTokens: 10, totalTokens: 90 });
      expect(gate.status().tokensLastMinute).toBe(90);
      await vi.advanceTimersByTimeAsync(30_000);
      // 90 + this estimate is over 100: it waits for the first to leave the window, and the large one behind it.
      const { order, permits, settled } = admissions(gate, [small, ask('y'.repeat(2_000))]);
      await vi.advanceTimersByTimeAsync(29_000);
      expect(order).toEqual([]);
      expect(gate.status().waiting).toBe(2);
      await vi.advanceTimersByTimeAsync(1_000);
      expect(order).toEqual([0]);
      // The large one is larger than the whole budget: it goes once the window is empty, rather than never.
      permits[0]?.succeeded({ promptTokens: 10, completionTokens: 0, totalTokens: 10 });
      await vi.advanceTimersByTimeAsync(59_000);
      expect(order).toEqual([0]);
      await vi.advanceTimersByTimeAsync(1_000);
      expect(order).toEqual([0, 1]);
      permits[1]?.succeeded();
      await Promise.all(settled);
    });

    it('tells subscribers when an open breaker reaches its retry time, with nobody waiting', async () => {
      let changes = 0;
      const gate = gateWith({ backoffBaseMs: 10_000, inlineWaitMs: 0, onChange: () => changes++ });
      (await gate.acquire(ask('a'))).failed({ error: new Error('503'), unavailable: true });
      expect(gate.availability()).toMatchObject({ available: false });
      const before = changes;
      await vi.advanceTimersByTimeAsync(9_999);
      expect(changes).toBe(before);
      await vi.advanceTimersByTimeAsync(1);
      expect(changes).toBeGreaterThan(before);
      expect(gate.availability()).toEqual({ available: true });
      expect(gate.status().breaker.state).toBe('open');
    });
  });

  it('opens once for failures of requests already out, and refuses callers when the trial is far off', async () => {
    const gate = gateWith({ maxInFlight: 3, backoffBaseMs: 600_000, inlineWaitMs: 1_000 });
    const out = await Promise.all([gate.acquire(ask('a')), gate.acquire(ask('b')), gate.acquire(ask('c'))]);
    const waiting = gate.acquire(ask('d'));
    const refused = new Error('connect ECONNREFUSED 127.0.0.1:1');
    for (const permit of out)
      permit.failed({ error: new Error('Connection error.', { cause: refused }), unavailable: true });
    const error = await waiting.catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(ModelUnavailableError);
    const status = gate.status();
    expect(status).toMatchObject({ inFlight: 0, waiting: 0, failures: 3, requests: 3 });
    expect(status.breaker).toMatchObject({ state: 'open', consecutiveFailures: 1, retryAt: expect.any(String) });
    expect(status.breaker.lastError).toBe('Connection error. (connect ECONNREFUSED 127.0.0.1:1)');
    expect(gate.availability()).toEqual({ available: false, retryAtMs: (error as ModelUnavailableError).retryAtMs });
    await expect(gate.acquire(ask('e'))).rejects.toBeInstanceOf(ModelUnavailableError);
  });

  it('sends one trial at the retry time; the others wait for its outcome; success closes the breaker', async () => {
    const changes: number[] = [];
    const gate = gateWith({
      maxInFlight: 4,
      backoffBaseMs: 50,
      inlineWaitMs: 60_000,
      onChange: () => changes.push(1),
    });
    const first = await gate.acquire(ask('a'));
    first.failed({ error: new Error('503 Service Unavailable'), unavailable: true, retryAfterMs: undefined });
    expect(gate.status().breaker.state).toBe('open');
    const { order, permits, settled } = admissions(gate, [ask('b'), ask('c'), ask('d')]);
    await until(() => expect(order).toEqual([0]));
    expect(permits[0]?.trial).toBe(true);
    expect(gate.status()).toMatchObject({ inFlight: 1, waiting: 2, breaker: { state: 'half_open' } });
    expect(gate.availability()).toMatchObject({ available: false });
    permits[0]?.succeeded();
    await until(() => expect(order).toEqual([0, 1, 2]));
    expect(permits[1]?.trial).toBe(false);
    expect(gate.status().breaker).toMatchObject({ state: 'closed', consecutiveFailures: 0 });
    expect(gate.availability()).toEqual({ available: true });
    permits[1]?.succeeded();
    permits[2]?.succeeded();
    await Promise.all(settled);
    expect(changes.length).toBeGreaterThan(0);
  });

  it('reopens with twice the backoff when the trial fails, and a retry-after longer than the backoff wins', async () => {
    let nowMs = 1_000_000;
    const gate = gateWith({ backoffBaseMs: 1_000, inlineWaitMs: 0, now: () => nowMs });
    (await gate.acquire(ask('a'))).failed({ error: new Error('500'), unavailable: true });
    expect(gate.availability()).toEqual({ available: false, retryAtMs: 1_001_000 });
    nowMs = 1_001_000;
    const trial = await gate.acquire(ask('b'));
    expect(trial.trial).toBe(true);
    trial.failed({ error: new Error('500'), unavailable: true });
    expect(gate.availability()).toEqual({ available: false, retryAtMs: 1_003_000 });
    nowMs = 1_003_000;
    (await gate.acquire(ask('c'))).failed({ error: new Error('429'), unavailable: true, retryAfterMs: 30_000 });
    expect(gate.availability()).toEqual({ available: false, retryAtMs: 1_033_000 });
    expect(gate.status().breaker.consecutiveFailures).toBe(3);
    // A retry-after of a day is capped at ten minutes.
    nowMs = 1_033_000;
    (await gate.acquire(ask('d'))).failed({ error: new Error('429'), unavailable: true, retryAfterMs: 86_400_000 });
    expect(gate.availability()).toEqual({ available: false, retryAtMs: 1_033_000 + 600_000 });
  });

  it('closes after a trial the server answered with an error retrying cannot fix, and hands on an abandoned trial', async () => {
    let nowMs = 0;
    const gate = gateWith({ backoffBaseMs: 1_000, inlineWaitMs: 0, now: () => nowMs });
    (await gate.acquire(ask('a'))).failed({ error: new Error('500'), unavailable: true });
    nowMs = 1_000;
    (await gate.acquire(ask('b'))).cancelled();
    expect(gate.status().breaker.state).toBe('open');
    const trial = await gate.acquire(ask('c'));
    expect(trial.trial).toBe(true);
    trial.failed({ error: new Error('400 bad request'), unavailable: false });
    expect(gate.status()).toMatchObject({ failures: 1, breaker: { state: 'closed', consecutiveFailures: 0 } });
  });
});
