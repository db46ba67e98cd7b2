import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { loadConfig } from '@assistant/config';
import { HumanLog } from '@assistant/notes';
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
    await new HumanLog({ directory: config.paths.logs }).write({ source: 'x', message: '<script>alert(1)</script>' });
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
});
