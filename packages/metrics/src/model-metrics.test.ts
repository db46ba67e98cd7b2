import type { ModelProfileStatus } from '@assistant/llm';
import { describe, expect, it } from 'vitest';
import { heldLanes, parsePublishedModels, summarizeModels } from './model-metrics.ts';
import { mergeSnapshots, renderPrometheus } from './task-metrics.ts';

function status(overrides: Partial<ModelProfileStatus> = {}): ModelProfileStatus {
  return {
    profile: 'local',
    model: 'qwen3:8b',
    maxInFlight: 2,
    inFlight: 1,
    waiting: 3,
    requests: 40,
    failures: 1,
    requestsLastMinute: 12,
    tokensLastMinute: 9_000,
    latencyMs: 300,
    breaker: { state: 'closed', consecutiveFailures: 0 },
    ...overrides,
  };
}

const lane = { type: 'email.inbox.classify', profiles: ['local'], running: 2, capacity: 2, pending: 10 };

describe('parsePublishedModels', () => {
  it('keeps the valid entries of each snapshot and skips the malformed ones one by one', () => {
    const published = parsePublishedModels([
      {
        version: 1,
        worker: 'host-1-a',
        models: [
          status(),
          { ...status({ profile: 'broken' }), inFlight: -1 },
          { profile: 'half' },
          'not an entry',
          status({ profile: 'remote', breaker: { state: 'open', consecutiveFailures: 3, retryAt: 'tomorrow' } }),
        ],
        lanes: [lane, { ...lane, type: '' }, { ...lane, type: 'email.inbox.collect', held: 'backlog full' }],
      },
      // Written before workers published models: empty lists, not an error.
      { version: 1, worker: 'host-1-b', tasks: {}, rejections: {} },
      { version: 1, models: 'a string', lanes: { type: 'x' } },
      null,
      ['an', 'array'],
    ]);
    expect(published).toEqual([
      {
        worker: 'host-1-a',
        models: [status()],
        lanes: [lane, { ...lane, type: 'email.inbox.collect', held: 'backlog full' }],
      },
      { worker: 'host-1-b', models: [], lanes: [] },
      { models: [], lanes: [] },
    ]);
  });

  it('keeps the ceiling of an adaptive limit, and a summary says the profile is adaptive when a worker is', () => {
    const adaptive = status({ maxInFlight: 5, adaptive: { ceiling: 64 } });
    const published = parsePublishedModels([
      { worker: 'a', models: [adaptive] },
      { worker: 'b', models: [status()] },
    ]);
    expect(published.map((snapshot) => snapshot.models)).toEqual([[adaptive], [status()]]);
    const [model] = summarizeModels({ published, byType: {}, llmStages: [] });
    expect(model).toMatchObject({ profile: 'local', maxInFlight: 7, adaptive: true });
    const [fixed] = summarizeModels({
      published: [published[1] ?? { models: [], lanes: [] }],
      byType: {},
      llmStages: [],
    });
    expect(fixed).toMatchObject({ maxInFlight: 2, adaptive: false });
  });

  it('cuts a long last error', () => {
    const [published] = parsePublishedModels([
      { models: [status({ breaker: { state: 'open', consecutiveFailures: 1, lastError: 'x'.repeat(10_000) } })] },
    ]);
    expect(published?.models[0]?.breaker.lastError).toHaveLength(500);
  });
});

describe('summarizeModels', () => {
  it('sums the workers, keeps the slowest median and the worst breaker, and adds the queue backlog', () => {
    const models = summarizeModels({
      published: [
        { worker: 'a', models: [status()], lanes: [] },
        {
          worker: 'b',
          models: [
            status({
              inFlight: 2,
              waiting: 0,
              latencyMs: 500,
              breaker: {
                state: 'half_open',
                consecutiveFailures: 2,
                retryAt: '2026-11-26T10:00:00.000Z',
                lastError: 'fetch failed',
              },
            }),
          ],
          lanes: [],
        },
        {
          worker: 'c',
          models: [
            status({
              latencyMs: null,
              breaker: {
                state: 'open',
                consecutiveFailures: 4,
                retryAt: '2026-11-26T10:05:00.000Z',
                lastError: 'HTTP 503',
              },
            }),
          ],
          lanes: [],
        },
      ],
      byType: {
        'email.inbox.classify': { pending: 95, active: 5 },
        'email.inbox.collect': { pending: 7, active: 0 },
        'github.pulls.classify': { pending: 20, active: 0 },
      },
      llmStages: [
        { type: 'email.inbox.classify', profiles: ['local'] },
        { type: 'github.pulls.classify', profiles: ['local', 'remote'] },
      ],
      configured: { local: { model: 'configured-model' }, idle: { model: 'llama' } },
    });
    expect(models).toEqual([
      {
        profile: 'idle',
        model: 'llama',
        state: 'unknown',
        maxInFlight: null,
        adaptive: false,
        inFlight: 0,
        waiting: 0,
        requests: 0,
        failures: 0,
        requestsLastMinute: 0,
        tokensLastMinute: 0,
        latencyMs: null,
        consecutiveFailures: 0,
        backlog: 0,
        etaSeconds: 0,
      },
      {
        profile: 'local',
        model: 'qwen3:8b',
        state: 'open',
        maxInFlight: 6,
        adaptive: false,
        inFlight: 4,
        waiting: 6,
        requests: 120,
        failures: 3,
        requestsLastMinute: 36,
        tokensLastMinute: 27_000,
        latencyMs: 500,
        consecutiveFailures: 4,
        retryAt: '2026-11-26T10:05:00.000Z',
        lastError: 'HTTP 503',
        // 100 email tasks, and the 20 GitHub tasks that may be this profile's.
        backlog: 120,
        etaSeconds: 10,
      },
      {
        profile: 'remote',
        model: null,
        state: 'unknown',
        maxInFlight: null,
        adaptive: false,
        inFlight: 0,
        waiting: 0,
        requests: 0,
        failures: 0,
        requestsLastMinute: 0,
        tokensLastMinute: 0,
        latencyMs: null,
        consecutiveFailures: 0,
        backlog: 20,
        etaSeconds: null,
      },
    ]);
  });

  it('has no estimate until some worker has measured a latency', () => {
    const [model] = summarizeModels({
      published: [{ models: [status({ latencyMs: null })], lanes: [] }],
      byType: { 'email.inbox.classify': { pending: 3, active: 0 } },
      llmStages: [{ type: 'email.inbox.classify', profiles: ['local'] }],
    });
    expect(model).toMatchObject({ profile: 'local', state: 'closed', backlog: 3, maxInFlight: 2, etaSeconds: null });
  });
});

describe('heldLanes', () => {
  it('lists each held task type once, with the first reason', () => {
    expect(
      heldLanes([
        { models: [], lanes: [lane, { ...lane, type: 'github.pulls.collect', held: 'classify backlog full' }] },
        {
          models: [],
          lanes: [
            { ...lane, type: 'github.pulls.collect', held: 'another reason' },
            { ...lane, held: 'breaker of local open' },
          ],
        },
      ]),
    ).toEqual([
      { taskType: 'email.inbox.classify', reason: 'breaker of local open' },
      { taskType: 'github.pulls.collect', reason: 'classify backlog full' },
    ]);
  });
});

describe('renderPrometheus with models', () => {
  it('renders every LLM family and the type breakers, leaving out figures nobody reports', () => {
    const models = summarizeModels({
      published: [
        {
          models: [
            status({ profile: 'we"ird\\name\n', breaker: { state: 'half_open', consecutiveFailures: 1 } }),
            status(),
          ],
          lanes: [],
        },
      ],
      byType: { 'email.inbox.classify': { pending: 10, active: 0 } },
      llmStages: [{ type: 'email.inbox.classify', profiles: ['local', 'idle'] }],
    });
    const text = renderPrometheus({
      queue: {},
      snapshot: mergeSnapshots([]),
      workersAlive: 1,
      models,
      breakers: [
        { taskType: 'email.inbox.check', state: 'open' },
        { taskType: 'email.inbox.act', state: 'closed' },
      ],
    });
    const lines = text.split('\n');
    for (const line of [
      '# TYPE assistant_llm_in_flight gauge',
      'assistant_llm_in_flight{profile="local"} 1',
      'assistant_llm_in_flight{profile="idle"} 0',
      'assistant_llm_max_in_flight{profile="local"} 2',
      'assistant_llm_waiting{profile="local"} 3',
      'assistant_llm_backlog{profile="local"} 10',
      'assistant_llm_backlog{profile="idle"} 10',
      'assistant_llm_latency_seconds{profile="local"} 0.3',
      'assistant_llm_tokens_per_minute{profile="local"} 9000',
      'assistant_llm_requests_per_minute{profile="local"} 12',
      'assistant_llm_drain_eta_seconds{profile="local"} 2',
      'assistant_llm_breaker_open{profile="local"} 0',
      'assistant_llm_breaker_open{profile="we\\"ird\\\\name\\n"} 1',
      '# TYPE assistant_llm_unavailable_total counter',
      'assistant_llm_unavailable_total{profile="local"} 1',
      '# TYPE assistant_circuit_breaker_open gauge',
      'assistant_circuit_breaker_open{task_type="email.inbox.act"} 0',
      'assistant_circuit_breaker_open{task_type="email.inbox.check"} 1',
    ]) {
      expect(lines).toContain(line);
    }
    // No worker reports `idle`: its limit, latency, estimate and breaker are unknown, not zero.
    expect(text).not.toMatch(
      /assistant_llm_(max_in_flight|latency_seconds|drain_eta_seconds|breaker_open)\{profile="idle"\}/,
    );
    // Every sample belongs to a family declared before it.
    const declared = new Set<string>();
    for (const line of lines) {
      const type = /^# TYPE (\S+) /.exec(line);
      if (type?.[1]) declared.add(type[1]);
      else if (line && !line.startsWith('#')) {
        expect(declared.has(line.replace(/(_bucket|_sum|_count)?[{ ].*$/, '')), line).toBe(true);
      }
    }
  });
});
