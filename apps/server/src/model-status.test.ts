import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { LoadedConfig } from '@assistant/config';
import { loadRuntime } from '@assistant/integration-host';
import { installation } from '@assistant/process';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createServer } from './create-server.ts';
import { catalogFromRegistry } from './server-catalog.ts';

const token = 'test-token-for-the-model-status-0123456789';
const headers = { authorization: `Bearer ${token}` };

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'assistant-model-status-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** Two profiles; the email instance classifies with `local`. */
async function runtime() {
  await writeFile(
    path.join(dir, 'config.yaml'),
    `data_dir: ./data
server:
  port: 0
llms:
  default: {base_url: "http://127.0.0.1:9/v1", model: big}
  local: {base_url: "http://127.0.0.1:9/v1", model: qwen3}
integrations:
  - type: email
    name: personal
    maildir: ./Maildir
    llm: local
`,
  );
  return loadRuntime({ installation, configPath: path.join(dir, 'config.yaml'), cwd: dir });
}

/** Task files named as the queue names them (the name carries the type); /health counts names, never reads them. */
async function placeTasks(config: LoadedConfig, state: string, type: string, count: number): Promise<void> {
  const directory = path.join(config.paths.queue, state);
  await mkdir(directory, { recursive: true });
  for (let index = 0; index < count; index++) {
    const id = `01m81zbz7e0rvw1d46qzvhs${state.slice(0, 2)}${index}`;
    await writeFile(path.join(directory, `5_20261122T000000000Z_${id}--0123456789abcdef--${type}.yaml`), 'id: x\n');
  }
}

/** A worker's heartbeat and its published snapshot, written as a worker writes them. */
async function placeWorker(
  config: LoadedConfig,
  id: string,
  options: { heartbeatAt: Date; snapshot: Record<string, unknown> },
): Promise<void> {
  const workers = path.join(config.paths.queue, 'workers');
  await mkdir(workers, { recursive: true });
  await writeFile(
    path.join(workers, `${id}.yaml`),
    `id: ${id}\npid: 4242\nhost: elsewhere\nstarted_at: 2026-01-01T00:00:00.000Z\nheartbeat_at: ${options.heartbeatAt.toISOString()}\n`,
  );
  await writeFile(
    path.join(workers, `${id}.metrics.json`),
    `${JSON.stringify({ version: 1, updated_at: new Date().toISOString(), tasks: {}, rejections: {}, worker: id, memory: { rss_bytes: 1, heap_used_bytes: 1 }, ...options.snapshot })}\n`,
  );
}

/** A ModelProfileStatus of profile `local` as a worker publishes it (@assistant/llm's type, written out here). */
function local(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    profile: 'local',
    model: 'qwen3',
    maxInFlight: 2,
    inFlight: 2,
    waiting: 1,
    requests: 100,
    failures: 0,
    requestsLastMinute: 30,
    tokensLastMinute: 12_000,
    latencyMs: 400,
    breaker: { state: 'closed', consecutiveFailures: 0 },
    ...overrides,
  };
}

describe('the LLM-bound stages of the catalog', () => {
  it('lists the stages the manifests mark llm: true with the profile of their instance', async () => {
    const { registry } = await runtime();
    const stages = catalogFromRegistry(registry).llmStages?.() ?? [];
    expect(stages).toContainEqual({ type: 'email.inbox.classify', profiles: ['local'] });
    expect(stages.map((stage) => stage.type)).not.toContain('email.inbox.collect');
  });
});

describe('the model backlog in /health and /metrics', () => {
  it('sums the live workers per profile, counts the backlog from the queue and skips stale and malformed reports', async () => {
    const { config, registry } = await runtime();
    await placeTasks(config, 'pending', 'email.inbox.classify', 7);
    await placeTasks(config, 'active', 'email.inbox.classify', 1);
    await placeTasks(config, 'pending', 'email.inbox.collect', 3);
    const now = Date.now();
    await placeWorker(config, 'host-1-aaa', {
      heartbeatAt: new Date(now - 2_000),
      snapshot: {
        models: [local(), { profile: 'local', inFlight: 'many' }, 'junk'],
        lanes: [
          { type: 'email.inbox.classify', profiles: ['local'], running: 2, capacity: 2, pending: 7 },
          {
            type: 'email.inbox.collect',
            profiles: [],
            running: 0,
            capacity: 4,
            pending: 3,
            held: 'the classify backlog is full',
          },
        ],
      },
    });
    await placeWorker(config, 'host-2-bbb', {
      heartbeatAt: new Date(now - 1_000),
      snapshot: {
        models: [
          local({
            inFlight: 1,
            waiting: 0,
            latencyMs: 600,
            failures: 3,
            breaker: {
              state: 'open',
              consecutiveFailures: 3,
              retryAt: '2026-11-26T10:00:00.000Z',
              lastError: 'connect ECONNREFUSED <127.0.0.1:9>',
            },
          }),
        ],
        lanes: 'not a list',
      },
    });
    // Stopped an hour ago without removing its file: its calls are long gone.
    await placeWorker(config, 'host-3-ccc', {
      heartbeatAt: new Date(now - 3_600_000),
      snapshot: { models: [local({ inFlight: 50, maxInFlight: 50 })], lanes: [] },
    });
    await using app = createServer({
      config,
      registry,
      catalog: catalogFromRegistry(registry),
      token,
      status: {
        breakers: async () => [
          { taskType: 'email.inbox.check', state: 'half_open', consecutiveFailures: 2 },
          { taskType: 'email.inbox.act', state: 'closed', consecutiveFailures: 0 },
        ],
      },
    });

    const health = await app.inject({ method: 'GET', url: '/health', headers });
    expect(health.statusCode).toBe(200);
    const body = health.json();
    expect(body.models).toEqual([
      {
        profile: 'default',
        model: 'big',
        state: 'unknown',
        in_flight: 0,
        max_in_flight: null,
        adaptive: false,
        waiting: 0,
        latency_ms: null,
        requests_last_minute: 0,
        tokens_last_minute: 0,
        backlog: 0,
        eta_seconds: 0,
      },
      {
        profile: 'local',
        model: 'qwen3',
        state: 'open',
        in_flight: 3,
        max_in_flight: 4,
        adaptive: false,
        waiting: 1,
        latency_ms: 600,
        requests_last_minute: 60,
        tokens_last_minute: 24_000,
        // 7 pending and 1 active classify tasks; collect is not LLM-bound.
        backlog: 8,
        // 8 × 600 ms ÷ 4 = 1.2 s, rounded up.
        eta_seconds: 2,
        retry_at: '2026-11-26T10:00:00.000Z',
        last_error: 'connect ECONNREFUSED <127.0.0.1:9>',
      },
    ]);
    expect(body.held).toEqual([{ task_type: 'email.inbox.collect', reason: 'the classify backlog is full' }]);
    expect(body.circuit_breakers).toEqual([
      { task_type: 'email.inbox.check', state: 'half_open', consecutive_failures: 2 },
    ]);
    // Without the token: liveness and counts only.
    const anonymous = await app.inject({ method: 'GET', url: '/health' });
    expect(Object.keys(anonymous.json()).sort()).toEqual(['queue', 'status', 'version']);

    const metrics = await app.inject({ method: 'GET', url: '/metrics', headers });
    const lines = metrics.body.split('\n');
    for (const line of [
      'assistant_llm_in_flight{profile="local"} 3',
      'assistant_llm_max_in_flight{profile="local"} 4',
      'assistant_llm_waiting{profile="local"} 1',
      'assistant_llm_backlog{profile="local"} 8',
      'assistant_llm_backlog{profile="default"} 0',
      'assistant_llm_latency_seconds{profile="local"} 0.6',
      'assistant_llm_tokens_per_minute{profile="local"} 24000',
      'assistant_llm_requests_per_minute{profile="local"} 60',
      'assistant_llm_drain_eta_seconds{profile="local"} 2',
      'assistant_llm_breaker_open{profile="local"} 1',
      'assistant_llm_unavailable_total{profile="local"} 3',
      'assistant_circuit_breaker_open{task_type="email.inbox.check"} 1',
      'assistant_circuit_breaker_open{task_type="email.inbox.act"} 0',
      'assistant_workers_alive 2',
    ]) {
      expect(lines).toContain(line);
    }
    expect(metrics.body).not.toContain('assistant_llm_max_in_flight{profile="default"}');
  });

  it('reads snapshots of workers that publish no models as empty', async () => {
    const { config, registry } = await runtime();
    await placeTasks(config, 'pending', 'email.inbox.classify', 2);
    await placeWorker(config, 'host-1-aaa', { heartbeatAt: new Date(), snapshot: {} });
    await using app = createServer({ config, registry, catalog: catalogFromRegistry(registry), token });
    const body = (await app.inject({ method: 'GET', url: '/health', headers })).json();
    expect(body.models).toContainEqual(
      expect.objectContaining({
        profile: 'local',
        state: 'unknown',
        backlog: 2,
        max_in_flight: null,
        eta_seconds: null,
      }),
    );
    expect(body.held).toEqual([]);
  });
});
