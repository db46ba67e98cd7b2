import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { loadConfig } from '@assistant/config';
import { llmUsageFile, UsageRecorder, usageEvent } from '@assistant/metrics';
import { FileHumanLog } from '@assistant/notes';
import { openFileTaskQueue } from '@assistant/queue';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createServer } from '../../create-server.ts';

const token = 'dashboard-test-token-0123456789abcdefghij';
const authorization = `Bearer ${token}`;

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'assistant-overview-page-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('the Overview page', () => {
  it('shows counts with links, the hour’s throughput, workers, breakers and the end of today’s log', async () => {
    await writeFile(path.join(dir, 'config.yaml'), 'data_dir: ./data\nserver:\n  port: 0\n');
    const { config } = await loadConfig({ configPath: path.join(dir, 'config.yaml') });
    const queue = await openFileTaskQueue({ directory: config.paths.queue, dataDirectory: config.paths.dataDir });
    for (const type of ['test.one', 'test.two', 'test.three']) await queue.enqueue({ type });
    const consumer = queue.consumer();
    await consumer.start();
    const claimed = await consumer.claim();
    if (!claimed) throw new Error('expected a task to claim');
    await consumer.complete(claimed, null);
    const held = await consumer.claim();
    await queue.workers.publishMetrics(consumer.owner.id, {
      version: 1,
      updated_at: new Date().toISOString(),
      tasks: {},
      rejections: {},
      worker: consumer.owner.id,
      memory: { rss_bytes: 123 * 1024 * 1024, heap_used_bytes: 1 },
    });
    await new FileHumanLog({ directory: config.paths.logs }).write({
      source: 'x',
      message: '<script>alert(1)</script>',
    });
    const app = createServer({
      config,
      token,
      status: {
        breakers: async () => [
          { taskType: 'email.send', state: 'open', consecutiveFailures: 5, lastError: '<img src=x onerror=alert(1)>' },
        ],
        schedules: () => [{ id: 'daily', description: 'Daily digest', nextRunAt: '2026-11-24T07:00:00.000Z' }],
      },
    });
    await app.ready();
    try {
      const page = await app.inject({ method: 'GET', url: '/', headers: { authorization } });
      expect(page.statusCode).toBe(200);
      const body = page.body;
      expect(body).toContain('href="/tasks?state=pending"');
      expect(body).toMatch(/<a href="\/tasks\?state=done">done<\/a><\/dt><dd>1<\/dd>/);
      expect(body).toContain('1 done, 0 failed in the last hour');
      expect(body).toContain(`<code>${consumer.owner.id}</code>`);
      expect(body).toContain('123 MiB');
      expect(body).toMatch(/<td>1<\/td>\s*<td>123 MiB/);
      expect(body).toContain('Daily digest');
      expect(body).toContain('email.send');
      expect(body).not.toContain('<img src=x');
      expect(body).not.toContain('<script>alert');
      expect(body).toContain('&lt;script&gt;alert(1)&lt;/script&gt;');
      expect(body).toContain('hx-trigger="live-refresh" data-live-events="queue"');
      expect(body).toContain('No LLM profiles');
      expect(body.length).toBeLessThan(100_000);
      const fragment = await app.inject({
        method: 'GET',
        url: '/overview/queue',
        headers: { authorization, 'hx-request': 'true' },
      });
      expect(fragment.body).toMatch(/^<section class="card overview-queue"/);
      const direct = await app.inject({ method: 'GET', url: '/overview/workers', headers: { authorization } });
      expect(direct.statusCode).toBe(303);
      // /health still answers exactly what it did.
      const health = await app.inject({ method: 'GET', url: '/health', headers: { authorization } });
      expect(health.json()).toMatchObject({
        worker: { alive: true, workers: 1 },
        circuit_breakers: [{ task_type: 'email.send', state: 'open', consecutive_failures: 5 }],
        schedules: [{ id: 'daily', next_run_at: '2026-11-24T07:00:00.000Z' }],
        listeners: [],
      });
    } finally {
      if (held) await consumer.release(held);
      await consumer.close();
      await app.close();
    }
  });

  it('says which child of `assistant start` restarted, how many times, and the last time why (escaped)', async () => {
    await writeFile(path.join(dir, 'config.yaml'), 'data_dir: ./data\nserver:\n  port: 0\n');
    const { config } = await loadConfig({ configPath: path.join(dir, 'config.yaml') });
    const app = createServer({
      config,
      token,
      status: {
        processes: async () => [
          { name: 'server', running: true, restarts: 0 },
          {
            name: 'worker',
            running: true,
            restarts: 2,
            last_restart: {
              at: '2026-11-27T10:00:00.000Z',
              reason: 'exited with code 1: Error: <b>boom</b>',
              code: 1,
              signal: null,
            },
          },
        ],
      },
    });
    await app.ready();
    try {
      const page = await app.inject({ method: 'GET', url: '/', headers: { authorization } });
      expect(page.body).toContain(
        'The worker restarted 2 times, last: exited with code 1: Error: &lt;b&gt;boom&lt;/b&gt; at',
      );
      expect(page.body).not.toContain('The server restarted');
      const health = await app.inject({ method: 'GET', url: '/health', headers: { authorization } });
      expect(health.json()).toMatchObject({
        processes: [
          { name: 'server', restarts: 0 },
          { name: 'worker', restarts: 2, last_restart: { reason: 'exited with code 1: Error: <b>boom</b>', code: 1 } },
        ],
      });
    } finally {
      await app.close();
    }
  });

  it('shows each LLM profile: state, until when and why, in flight, waiting, backlog, latency, tokens, time to drain', async () => {
    await writeFile(
      path.join(dir, 'config.yaml'),
      'data_dir: ./data\nserver:\n  port: 0\nllms:\n  local: {base_url: "http://127.0.0.1:9/v1", model: "<b>qwen</b>"}\n',
    );
    const { config } = await loadConfig({ configPath: path.join(dir, 'config.yaml') });
    const queue = await openFileTaskQueue({ directory: config.paths.queue, dataDirectory: config.paths.dataDir });
    for (let index = 0; index < 3; index++) await queue.enqueue({ type: 'mail.inbox.classify' });
    const consumer = queue.consumer();
    await consumer.start();
    await queue.workers.publishMetrics(consumer.owner.id, {
      worker: consumer.owner.id,
      models: [
        {
          profile: 'local',
          model: '<b>qwen</b>',
          maxInFlight: 2,
          adaptive: { ceiling: 64 },
          inFlight: 1,
          waiting: 4,
          requests: 10,
          failures: 2,
          requestsLastMinute: 10,
          tokensLastMinute: 4_321,
          latencyMs: 90_000,
          breaker: {
            state: 'open',
            consecutiveFailures: 2,
            retryAt: '2026-11-26T10:00:00.000Z',
            lastError: '<script>alert("model")</script>',
          },
        },
      ],
      lanes: [
        {
          type: 'mail.inbox.collect',
          profiles: [],
          running: 0,
          capacity: 2,
          pending: 0,
          held: '<img src=x onerror=alert(2)>',
        },
      ],
    });
    const app = createServer({
      config,
      token,
      catalog: {
        taskTypes: () => [],
        hasTaskType: () => false,
        entryTask: () => ({ ok: false, status: 404, message: 'none' }),
        llmStages: () => [{ type: 'mail.inbox.classify', profiles: ['local'] }],
      },
    });
    await app.ready();
    try {
      const page = await app.inject({ method: 'GET', url: '/', headers: { authorization } });
      const body = page.body;
      const panel = body.slice(body.indexOf('<section class="card overview-models"'));
      expect(panel).toContain('data-live-events="queue models"');
      expect(panel).toContain('&lt;b&gt;qwen&lt;/b&gt;');
      expect(panel).toMatch(
        /<span class="badge bad">unavailable<\/span> until <time datetime="2026-11-26T10:00:00.000Z"/,
      );
      expect(panel).toContain('&lt;script&gt;alert(&quot;model&quot;)&lt;/script&gt;');
      // In flight / the limit (found by the gate: adaptive), waiting, backlog, latency, tokens per minute, time to
      // drain (3 × 90 s ÷ 2 = 135 s).
      expect(panel).toMatch(
        /<td>1 \/ 2 <span class="muted" title="[^"]*">adaptive<\/span><\/td>\s*<td>4<\/td>\s*<td>3<\/td>\s*<td>90\.0 s<\/td>\s*<td class="hide-narrow">4321<\/td>\s*<td>3 min<\/td>/,
      );
      expect(panel).toContain('href="/tasks?type=mail.inbox.collect"');
      expect(body).not.toContain('<script>alert');
      expect(body).not.toContain('<img src=x');
      expect(body).not.toContain('<b>qwen');
      expect(body).toContain('/live?topics=queue,log,models');
      const fragment = await app.inject({
        method: 'GET',
        url: '/overview/models',
        headers: { authorization, 'hx-request': 'true' },
      });
      expect(fragment.body).toMatch(/^<section class="card overview-models"/);
    } finally {
      await consumer.close();
      await app.close();
    }
  });

  it('shows today’s tokens (cached shown) and estimated cost per profile, "no prices set" without prices, and /metrics counts them', async () => {
    await writeFile(
      path.join(dir, 'config.yaml'),
      [
        'data_dir: ./data',
        'server:',
        '  port: 0',
        'owner: {timezone: Pacific/Kiritimati, currency: EUR}',
        'llms:',
        '  claude: {provider: anthropic, base_url: "http://127.0.0.1:9/v1", model: m, api_key: sk-inline, prices: {input: 3, output: 15, cached_input: 0.3}}',
        '  local: {base_url: "http://127.0.0.1:9/v1", model: qwen}',
        '',
      ].join('\n'),
    );
    const { config } = await loadConfig({ configPath: path.join(dir, 'config.yaml') });
    // What a worker records: today (in the owner's zone, UTC+14, so "today" is not UTC's) and yesterday.
    const recorder = new UsageRecorder({ file: llmUsageFile(config.paths.dataDir) });
    const now = new Date();
    const usage = { promptTokens: 12_000, cachedPromptTokens: 8_000, completionTokens: 1_000, totalTokens: 13_000 };
    const timeZone = config.owner.timeZone;
    recorder.record(usageEvent({ profile: 'claude', usage, prices: config.llms.claude?.prices, timeZone, at: now }));
    recorder.record(
      usageEvent({
        profile: 'claude',
        usage,
        prices: config.llms.claude?.prices,
        timeZone,
        at: new Date(now.getTime() - 86_400_000),
      }),
    );
    recorder.record(usageEvent({ profile: 'local', usage, timeZone, at: now }));
    await recorder.flush();
    const app = createServer({ config, token });
    await app.ready();
    try {
      const page = await app.inject({
        method: 'GET',
        url: '/overview/models',
        headers: { authorization, 'hx-request': 'true' },
      });
      const rows = page.body.split('<tr>');
      const claude = rows.find((row) => row.includes('<th scope="row">claude'));
      const local = rows.find((row) => row.includes('<th scope="row">local'));
      // Today only: 4,000 plain × 3 + 8,000 cached × 0.3 + 1,000 out × 15, per million = 0.0294 EUR.
      expect(claude).toContain('12,000 in <span class="muted">(8,000 cached)</span> / 1,000 out');
      expect(claude).toContain('0.0294 EUR');
      expect(local).toContain('12,000 in');
      expect(local).toContain('no prices set');
      expect(page.body).toContain('since midnight in Pacific/Kiritimati');
      const metrics = await app.inject({ method: 'GET', url: '/metrics', headers: { authorization } });
      expect(metrics.body).toContain('assistant_llm_tokens_total{profile="claude",kind="prompt"} 24000');
      expect(metrics.body).toContain('assistant_llm_tokens_total{profile="claude",kind="cached_prompt"} 16000');
      expect(metrics.body).toContain('assistant_llm_tokens_total{profile="local",kind="completion"} 1000');
      expect(metrics.body).toMatch(/assistant_llm_cost_total\{profile="claude",currency="EUR"\} 0\.0588\d*\n/);
      expect(metrics.body).toContain('assistant_llm_unpriced_calls_total{profile="local"} 1');
    } finally {
      await app.close();
    }
  });
});
