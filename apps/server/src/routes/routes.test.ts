import { chmod, mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { type LoadedConfig, loadConfig } from '@assistant/config';
import { TaskQueue } from '@assistant/queue';
import { TaskMetrics, writeMetricsFile } from '@assistant/runtime';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import * as z from 'zod';
import { createServer } from '../create-server.ts';
import type { ServerCatalog } from '../server-catalog.ts';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'assistant-routes-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function configWith(extra = ''): Promise<LoadedConfig> {
  await writeFile(path.join(dir, 'config.yaml'), `data_dir: ./data\nserver:\n  port: 0\n${extra}`);
  return (await loadConfig({ configPath: path.join(dir, 'config.yaml') })).config;
}

/** A catalog with one instance per answer a trigger can get. */
const catalog: ServerCatalog = {
  taskTypes: () => ['system.echo', 'system.sleep', 'greeter.people.check'],
  hasTaskType: (type) => ['system.echo', 'system.sleep', 'greeter.people.check'].includes(type),
  entryTask: (instance, platform) => {
    if (instance === 'quiet') return { ok: false, status: 409, message: 'instance `quiet` is disabled in config.yaml' };
    if (instance !== 'friendly' || platform !== 'people') {
      return { ok: false, status: 404, message: `no integration instance \`${instance}\`` };
    }
    return { ok: true, type: 'greeter.people.check', priority: 3, integration: 'friendly', payload: null };
  },
};

async function server(config?: LoadedConfig) {
  const app = createServer({ config: config ?? (await configWith()), catalog });
  await app.ready();
  return app;
}

const created = z.object({ id: z.string(), state: z.literal('pending'), path: z.string() });

describe('/api/tasks', () => {
  it('adds a task that bypasses the policies and reads it back with its state and path', async () => {
    await using app = await server();
    const first = await app.inject({
      method: 'POST',
      url: '/api/tasks',
      payload: { type: 'system.echo', payload: { a: 1 } },
    });
    expect(first.statusCode).toBe(201);
    const body = created.parse(first.json());
    expect(body.path).toMatch(/\/queue\/pending\/5_\d{8}T\d{9}Z_[0-9a-z]{26}--[0-9a-f]{16}--system\.echo\.yaml$/);
    // The same type and payload again: a person asked twice, so there are two tasks (no dedup).
    const second = await app.inject({
      method: 'POST',
      url: '/api/tasks',
      payload: { type: 'system.echo', payload: { a: 1 } },
    });
    expect(second.statusCode).toBe(201);

    const one = await app.inject({ method: 'GET', url: `/api/tasks/${body.id}` });
    expect(one.statusCode).toBe(200);
    expect(one.json()).toMatchObject({
      id: body.id,
      type: 'system.echo',
      state: 'pending',
      path: body.path,
      source: 'api',
      payload: { a: 1 },
      attempts: 0,
      max_attempts: 3,
    });
    const listed = await app.inject({ method: 'GET', url: '/api/tasks?state=pending&type=system.*&limit=1' });
    expect(listed.json()).toEqual({
      tasks: [
        {
          id: body.id,
          type: 'system.echo',
          state: 'pending',
          priority: 5,
          ready_at: expect.any(String),
          path: body.path,
        },
      ],
    });
  });

  it('refuses bad bodies, unknown types and task ids that are not ids', async () => {
    await using app = await server();
    const cases: [string, string, unknown, number, RegExp][] = [
      [
        'POST',
        '/api/tasks',
        { type: 'no.such.type' },
        400,
        /^no integration handles task type `no\.such\.type`; known: system\.echo/,
      ],
      ['POST', '/api/tasks', { type: 'system.echo', priority: 12 }, 400, /^body\.priority: /],
      ['POST', '/api/tasks', { type: 'system.echo', extra: true }, 400, /^body: .*extra/],
      ['POST', '/api/tasks', { payload: 1 }, 400, /^body\.type: /],
      ['GET', '/api/tasks?state=lost', undefined, 400, /^query\.state: /],
      ['GET', '/api/tasks?limit=0', undefined, 400, /^query\.limit: /],
      ['GET', '/api/tasks/x..y', undefined, 400, /^path\.id: expected a task id/],
      ['GET', '/api/tasks/..%2F..%2Fsecrets.yaml', undefined, 400, /^path\.id: expected a task id/],
      ['GET', '/api/tasks/01m81zbz7e0rvw1d46qzvhsks1', undefined, 404, /^no task with id 01m81zbz7e0rvw1d46qzvhsks1$/],
      ['POST', '/api/tasks/..%2Fx/retry', undefined, 400, /^path\.id: /],
    ];
    for (const [method, url, payload, status, message] of cases) {
      const response = await app.inject({
        method: method as 'GET' | 'POST',
        url,
        ...(payload === undefined ? {} : { payload: payload as object }),
      });
      expect({ url, status: response.statusCode }).toEqual({ url, status });
      expect(response.json().error.message).toMatch(message);
      expect(response.json().error.code).toBe(status === 404 ? 'NOT_FOUND' : 'BAD_REQUEST');
    }
    // Dot segments are resolved before routing, so they never reach a handler at all.
    for (const url of ['/api/tasks/..', '/api/tasks/%2e%2e']) {
      const response = await app.inject({ method: 'GET', url });
      expect(response.statusCode, url).toBe(404);
      expect(response.json().error.message, url).toMatch(/^no route for GET /);
    }
  });

  it('refuses a 10 MB body with 413 before reading it all', async () => {
    await using app = await server();
    const response = await app.inject({
      method: 'POST',
      url: '/api/tasks',
      headers: { 'content-type': 'application/json' },
      payload: JSON.stringify({ type: 'system.echo', payload: 'x'.repeat(10 * 1024 * 1024) }),
    });
    expect(response.statusCode).toBe(413);
    expect(response.json()).toMatchObject({ error: { code: 'PAYLOAD_TOO_LARGE' } });
    expect(await readdir(path.join(dir, 'data/queue/pending')).catch(() => [])).toEqual([]);
  });

  it('retries a failed task and answers 409 for one that is not failed', async () => {
    const config = await configWith();
    const queue = await TaskQueue.open({ directory: config.paths.queue, settings: config.queue });
    const outcome = await queue.enqueue({ type: 'system.echo', source: 'cli' });
    if (outcome.status !== 'enqueued') throw new Error('not enqueued');
    await using app = await server(config);
    const notFailed = await app.inject({ method: 'POST', url: `/api/tasks/${outcome.task.id}/retry` });
    expect(notFailed.statusCode).toBe(409);
    expect(notFailed.json()).toEqual({
      error: { code: 'CONFLICT', message: `task ${outcome.task.id} is pending; only failed tasks can be retried` },
    });
    await rm(outcome.path);
    await mkdir(queue.paths.failed, { recursive: true });
    await writeFile(
      path.join(queue.paths.failed, outcome.fileName),
      `type: system.echo\nerror: {type: Error, message: boom}\n`,
    );
    const retried = await app.inject({ method: 'POST', url: `/api/tasks/${outcome.task.id}/retry` });
    expect(retried.statusCode).toBe(200);
    expect(retried.json()).toMatchObject({ id: outcome.task.id, state: 'pending', attempts: 0 });
  });
});

describe('POST /api/integrations/:name/:platform/trigger', () => {
  it("enqueues the platform's entry task for the instance", async () => {
    const config = await configWith();
    await using app = await server(config);
    const response = await app.inject({ method: 'POST', url: '/api/integrations/friendly/people/trigger' });
    expect(response.statusCode).toBe(201);
    const { id } = z.object({ id: z.string() }).parse(response.json());
    const queue = await TaskQueue.open({ directory: config.paths.queue, settings: config.queue });
    expect((await queue.get(id))?.task).toMatchObject({
      type: 'greeter.people.check',
      priority: 3,
      integration: 'friendly',
      source: 'api',
    });
  });

  it('answers 404 for unknown instances and 409 for disabled ones', async () => {
    await using app = await server();
    const unknown = await app.inject({ method: 'POST', url: '/api/integrations/nobody/people/trigger' });
    expect(unknown.statusCode).toBe(404);
    expect(unknown.json()).toEqual({ error: { code: 'NOT_FOUND', message: 'no integration instance `nobody`' } });
    const disabled = await app.inject({ method: 'POST', url: '/api/integrations/quiet/people/trigger' });
    expect(disabled.statusCode).toBe(409);
    expect(disabled.json()).toMatchObject({ error: { code: 'CONFLICT' } });
    const bad = await app.inject({ method: 'POST', url: '/api/integrations/..%2F/people/trigger' });
    expect(bad.statusCode).toBe(400);
  });
});

describe('/api/notes', () => {
  async function withNotes() {
    const config = await configWith();
    const notes = path.join(config.paths.notes);
    await mkdir(path.join(notes, 'email/personal'), { recursive: true });
    await writeFile(
      path.join(notes, 'email/personal/1.md'),
      '---\nsubject: Lunch on Friday?\nfrom: ada@example.com\n---\nSee you there.\n',
    );
    await writeFile(path.join(notes, 'email/personal/2.md'), '---\nsubject: Invoice 42\n---\nPlease pay.\n');
    await writeFile(path.join(notes, 'email/personal/broken.md'), '---\nsubject: [unclosed\n---\n');
    await writeFile(path.join(dir, 'data/secret.txt'), 'do not show');
    return config;
  }

  it('lists, searches and reads notes, reporting broken ones without failing', async () => {
    await using app = await server(await withNotes());
    const listed = await app.inject({ method: 'GET', url: '/api/notes?path=email' });
    expect(listed.json()).toEqual({
      notes: [
        { path: 'email/personal/1.md', title: 'Lunch on Friday?' },
        { path: 'email/personal/2.md', title: 'Invoice 42' },
      ],
      broken: [
        { path: 'email/personal/broken.md', message: expect.stringMatching(/^email\/personal\/broken\.md:\d+:\d+: /) },
      ],
    });
    const searched = await app.inject({ method: 'GET', url: '/api/notes?q=LUNCH' });
    expect(searched.json().notes).toEqual([{ path: 'email/personal/1.md', title: 'Lunch on Friday?' }]);
    const one = await app.inject({ method: 'GET', url: '/api/notes/email/personal/1.md' });
    expect(one.json()).toEqual({
      path: 'email/personal/1.md',
      data: { subject: 'Lunch on Friday?', from: 'ada@example.com' },
      body: 'See you there.\n',
    });
    expect((await app.inject({ method: 'GET', url: '/api/notes/email/personal/3.md' })).statusCode).toBe(404);
    const broken = await app.inject({ method: 'GET', url: '/api/notes/email/personal/broken.md' });
    expect(broken.statusCode).toBe(400);
    expect(broken.json().error.message).toMatch(/^broken note: email\/personal\/broken\.md:\d+:\d+: /);
  });

  it('never reads outside the notes folder', async () => {
    await using app = await server(await withNotes());
    for (const url of [
      '/api/notes/../secret.txt',
      '/api/notes/..%2Fsecret.txt',
      '/api/notes/%2e%2e/secret.txt',
      '/api/notes/email/../../secret.txt',
      '/api/notes?path=..',
      '/api/notes?path=/etc',
    ]) {
      const response = await app.inject({ method: 'GET', url });
      expect([400, 404], url).toContain(response.statusCode);
      expect(response.body, url).not.toContain('do not show');
    }
  });
});

describe('/metrics', () => {
  it('reports queue depth by state and type, worker counters and the server own rejections', async () => {
    const config = await configWith();
    const queue = await TaskQueue.open({ directory: config.paths.queue, settings: config.queue });
    await queue.enqueue({ type: 'system.echo', source: 'cli' });
    await queue.enqueue({ type: 'system.sleep', source: 'cli', payload: { ms: 1 } });
    const worker = new TaskMetrics();
    worker.recordOutcome('system.echo', 'done', 30);
    worker.recordOutcome('system.echo', 'failed', 2_000);
    await mkdir(queue.paths.workers, { recursive: true });
    await writeMetricsFile(path.join(queue.paths.workers, 'host-1-abc.metrics.json'), worker.snapshot());
    const own = new TaskMetrics();
    own.recordRejection('system.housekeeping.run', 'duplicate');
    await using app = createServer({ config, catalog, metrics: own });
    await app.ready();
    const response = await app.inject({ method: 'GET', url: '/metrics' });
    expect(response.headers['content-type']).toBe('text/plain; version=0.0.4; charset=utf-8');
    const lines = response.body.split('\n');
    expect(lines).toContain('assistant_queue_tasks{state="pending",type="system.echo"} 1');
    expect(lines).toContain('assistant_queue_tasks{state="pending",type="system.sleep"} 1');
    expect(lines).toContain('assistant_task_outcomes_total{type="system.echo",outcome="failed"} 1');
    expect(lines).toContain('assistant_task_duration_seconds_bucket{type="system.echo",le="0.05"} 1');
    expect(lines).toContain('assistant_task_duration_seconds_bucket{type="system.echo",le="+Inf"} 2');
    expect(lines).toContain('assistant_task_duration_seconds_count{type="system.echo"} 2');
    expect(lines).toContain('assistant_policy_rejections_total{type="system.housekeeping.run",reason="duplicate"} 1');
    expect(lines).toContain('assistant_workers_alive 0');
  });
});

describe('/docs/openapi.json', () => {
  it('describes every route the server serves', async () => {
    await using app = await server();
    const document = (await app.inject({ method: 'GET', url: '/docs/openapi.json' })).json();
    expect(document.openapi).toBe('3.1.0');
    const operations = Object.entries(document.paths as Record<string, Record<string, unknown>>).flatMap(
      ([route, methods]) => Object.keys(methods).map((method) => `${method.toUpperCase()} ${route}`),
    );
    expect(operations.sort()).toEqual(
      [
        'GET /health',
        'GET /api/tasks',
        'GET /api/tasks/{id}',
        'POST /api/tasks',
        'POST /api/tasks/{id}/retry',
        'POST /api/integrations/{name}/{platform}/trigger',
        'GET /api/notes',
        'GET /api/notes/{path}',
        'GET /metrics',
        'GET /docs/openapi.json',
      ].sort(),
    );
    expect(document.paths['/api/tasks'].post.requestBody.content['application/json'].schema).toMatchObject({
      type: 'object',
      required: ['type'],
      properties: { type: { type: 'string' }, priority: { type: 'integer', minimum: 0, maximum: 9 } },
    });
  });
});

describe('a server bound beyond loopback', () => {
  it('answers 401 to a request without the token', async () => {
    await writeFile(path.join(dir, 'secrets.yaml'), 'server_token: "t0ken"\n');
    await chmod(path.join(dir, 'secrets.yaml'), 0o600);
    const config = await configWith('  host: 0.0.0.0\n  token: !secret server_token\n');
    await using app = await server(config);
    const without = await app.inject({ method: 'POST', url: '/api/tasks', payload: { type: 'system.echo' } });
    expect(without.statusCode).toBe(401);
    const withToken = await app.inject({
      method: 'POST',
      url: '/api/tasks',
      payload: { type: 'system.echo' },
      headers: { authorization: 'Bearer t0ken' },
    });
    expect(withToken.statusCode).toBe(201);
  });
});
