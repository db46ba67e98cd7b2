import { chmod, mkdir, mkdtemp, readdir, rename, rm, utimes, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { type LoadedConfig, loadConfig } from '@assistant/config';
import { TaskMetrics } from '@assistant/metrics';
import { openFileTaskQueue, type TaskQueue } from '@assistant/queue';
import type { InjectOptions } from 'fastify';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import * as z from 'zod';
import { createServer } from '../create-server.ts';
import type { ServerCatalog } from '../server-catalog.ts';
import type { AssistantServer } from '../server-type.ts';

const token = 'test-token-for-the-routes-0123456789abcdef';
const authorization = `Bearer ${token}`;

/** `app.inject` with the API token, and JSON bodies sent as JSON. */
function inject(app: AssistantServer, options: InjectOptions) {
  return app.inject({ ...options, headers: { authorization, ...options.headers } });
}

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
  const app = createServer({ config: config ?? (await configWith()), catalog, token });
  await app.ready();
  return app;
}

const created = z.object({ id: z.string(), state: z.literal('pending'), path: z.string() });

describe('/api/tasks', () => {
  it('adds a task that bypasses the policies and reads it back with its state and path', async () => {
    await using app = await server();
    const first = await inject(app, {
      method: 'POST',
      url: '/api/tasks',
      payload: { type: 'system.echo', payload: { a: 1 } },
    });
    expect(first.statusCode).toBe(201);
    const body = created.parse(first.json());
    expect(body.path).toMatch(/^queue\/pending\/5_\d{8}T\d{9}Z_[0-9a-z]{26}--[0-9a-f]{16}--system\.echo\.yaml$/);
    // The same type and payload again: a person asked twice, so there are two tasks (no dedup).
    const second = await inject(app, {
      method: 'POST',
      url: '/api/tasks',
      payload: { type: 'system.echo', payload: { a: 1 } },
    });
    expect(second.statusCode).toBe(201);

    const one = await inject(app, { method: 'GET', url: `/api/tasks/${body.id}` });
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
    const listed = await inject(app, { method: 'GET', url: '/api/tasks?state=pending&type=system.*&limit=1' });
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
      const response = await inject(app, {
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
      const response = await inject(app, { method: 'GET', url });
      expect(response.statusCode, url).toBe(404);
      expect(response.json().error.message, url).toMatch(/^no route for GET /);
    }
  });

  it('refuses a 10 MB body with 413 before reading it all', async () => {
    await using app = await server();
    const response = await inject(app, {
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
    const queue = await openFileTaskQueue({
      directory: config.paths.queue,
      dataDirectory: config.paths.dataDir,
      settings: config.queue,
    });
    const outcome = await queue.enqueue({ type: 'system.echo', source: 'cli' });
    if (outcome.status !== 'enqueued') throw new Error('not enqueued');
    await using app = await server(config);
    const notFailed = await inject(app, { method: 'POST', url: `/api/tasks/${outcome.task.id}/retry` });
    expect(notFailed.statusCode).toBe(409);
    expect(notFailed.json()).toEqual({
      error: { code: 'CONFLICT', message: `task ${outcome.task.id} is pending; only failed tasks can be retried` },
    });
    await rm(path.join(config.paths.dataDir, outcome.location));
    await mkdir(path.join(config.paths.queue, 'failed'), { recursive: true });
    await writeFile(
      path.join(path.join(config.paths.queue, 'failed'), path.basename(outcome.location)),
      `type: system.echo\nerror: {type: Error, message: boom}\n`,
    );
    const retried = await inject(app, { method: 'POST', url: `/api/tasks/${outcome.task.id}/retry` });
    expect(retried.statusCode).toBe(200);
    expect(retried.json()).toMatchObject({ id: outcome.task.id, state: 'pending', attempts: 0 });
  });
});

describe('/api/tasks reading and retrying', () => {
  /** Enqueues a task and moves its file into `state`, last modified at `modifiedAtMs`. */
  async function placed(
    queue: TaskQueue,
    config: LoadedConfig,
    state: 'active' | 'done' | 'failed',
    modifiedAtMs: number,
  ) {
    const outcome = await queue.enqueue({ type: 'system.echo', source: 'cli', payload: { state, modifiedAtMs } });
    if (outcome.status !== 'enqueued') throw new Error('not enqueued');
    await mkdir(path.join(config.paths.queue, state), { recursive: true });
    const target = path.join(path.join(config.paths.queue, state), path.basename(outcome.location));
    await rename(path.join(config.paths.dataDir, outcome.location), target);
    await utimes(target, modifiedAtMs / 1_000, modifiedAtMs / 1_000);
    return outcome.task.id;
  }

  it('lists every state without `state`: pending and active in run order, then done and failed newest first', async () => {
    const config = await configWith();
    const queue = await openFileTaskQueue({
      directory: config.paths.queue,
      dataDirectory: config.paths.dataDir,
      settings: config.queue,
    });
    const low = await queue.enqueue({ type: 'system.echo', source: 'cli', priority: 7 });
    const high = await queue.enqueue({ type: 'system.sleep', source: 'cli', priority: 1, payload: { ms: 1 } });
    if (low.status !== 'enqueued' || high.status !== 'enqueued') throw new Error('not enqueued');
    const active = await placed(queue, config, 'active', Date.UTC(2026, 0, 1));
    const olderDone = await placed(queue, config, 'done', Date.UTC(2026, 0, 2));
    const newerDone = await placed(queue, config, 'done', Date.UTC(2026, 0, 3));
    const failed = await placed(queue, config, 'failed', Date.UTC(2026, 0, 4));
    await using app = await server(config);
    const response = await inject(app, { method: 'GET', url: '/api/tasks' });
    expect(response.statusCode).toBe(200);
    const listed = z.object({ tasks: z.array(z.object({ id: z.string(), state: z.string() })) }).parse(response.json());
    expect(listed.tasks.map((task) => [task.state, task.id])).toEqual([
      ['pending', high.task.id],
      ['pending', low.task.id],
      ['active', active],
      ['done', newerDone],
      ['done', olderDone],
      ['failed', failed],
    ]);
    const onlyDone = await inject(app, { method: 'GET', url: '/api/tasks?state=done' });
    expect(onlyDone.json().tasks.map((task: { id: string }) => task.id)).toEqual([newerDone, olderDone]);
    const bySleep = await inject(app, { method: 'GET', url: '/api/tasks?type=system.sleep' });
    expect(bySleep.json().tasks.map((task: { id: string }) => task.id)).toEqual([high.task.id]);
  });

  it('answers 200 with `problem` for a task file that cannot be read as a task', async () => {
    const config = await configWith();
    const queue = await openFileTaskQueue({
      directory: config.paths.queue,
      dataDirectory: config.paths.dataDir,
      settings: config.queue,
    });
    const outcome = await queue.enqueue({ type: 'system.echo', source: 'cli' });
    if (outcome.status !== 'enqueued') throw new Error('not enqueued');
    await writeFile(path.join(config.paths.dataDir, outcome.location), 'priority: [unclosed\n');
    await using app = await server(config);
    const response = await inject(app, { method: 'GET', url: `/api/tasks/${outcome.task.id}` });
    expect(response.statusCode).toBe(200);
    expect(response.json()).toEqual({
      id: outcome.task.id,
      type: 'system.echo',
      state: 'pending',
      path: `queue/pending/${path.basename(outcome.location)}`,
      problem: expect.any(String),
    });
  });

  it('answers 404 to retrying an unknown task and 400 to retrying a failed file that is not a task', async () => {
    const config = await configWith();
    const queue = await openFileTaskQueue({
      directory: config.paths.queue,
      dataDirectory: config.paths.dataDir,
      settings: config.queue,
    });
    const id = await placed(queue, config, 'failed', Date.UTC(2026, 0, 1));
    const [entry] = await queue.list({ state: 'failed' });
    if (!entry) throw new Error('no failed task');
    await writeFile(path.join(config.paths.dataDir, entry.location), 'attempts: -1\n');
    await using app = await server(config);
    const unknown = await inject(app, { method: 'POST', url: '/api/tasks/01m81zbz7e0rvw1d46qzvhsks1/retry' });
    expect(unknown.statusCode).toBe(404);
    expect(unknown.json()).toEqual({
      error: { code: 'NOT_FOUND', message: 'no task with id 01m81zbz7e0rvw1d46qzvhsks1' },
    });
    const unreadable = await inject(app, { method: 'POST', url: `/api/tasks/${id}/retry` });
    expect(unreadable.statusCode).toBe(400);
    expect(unreadable.json().error.message).toMatch(new RegExp(`^task ${id} cannot be read: `));
    // Still where it was: a refused retry moves nothing.
    expect(await readdir(path.join(config.paths.queue, 'failed'))).toContain(path.basename(entry.location));
  });
});

describe('POST /api/integrations/:name/:platform/trigger', () => {
  it("enqueues the platform's entry task for the instance", async () => {
    const config = await configWith();
    await using app = await server(config);
    const response = await inject(app, { method: 'POST', url: '/api/integrations/friendly/people/trigger' });
    expect(response.statusCode).toBe(201);
    const { id } = z.object({ id: z.string() }).parse(response.json());
    const queue = await openFileTaskQueue({
      directory: config.paths.queue,
      dataDirectory: config.paths.dataDir,
      settings: config.queue,
    });
    expect((await queue.get(id))?.task).toMatchObject({
      type: 'greeter.people.check',
      priority: 3,
      integration: 'friendly',
      source: 'api',
    });
  });

  it('answers 404 for unknown instances and 409 for disabled ones', async () => {
    await using app = await server();
    const unknown = await inject(app, { method: 'POST', url: '/api/integrations/nobody/people/trigger' });
    expect(unknown.statusCode).toBe(404);
    expect(unknown.json()).toEqual({ error: { code: 'NOT_FOUND', message: 'no integration instance `nobody`' } });
    const disabled = await inject(app, { method: 'POST', url: '/api/integrations/quiet/people/trigger' });
    expect(disabled.statusCode).toBe(409);
    expect(disabled.json()).toMatchObject({ error: { code: 'CONFLICT' } });
    const bad = await inject(app, { method: 'POST', url: '/api/integrations/..%2F/people/trigger' });
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
    const listed = await inject(app, { method: 'GET', url: '/api/notes?path=email' });
    expect(listed.json()).toEqual({
      notes: [
        { path: 'email/personal/1.md', title: 'Lunch on Friday?' },
        { path: 'email/personal/2.md', title: 'Invoice 42' },
      ],
      broken: [
        { path: 'email/personal/broken.md', message: expect.stringMatching(/^email\/personal\/broken\.md:\d+:\d+: /) },
      ],
    });
    const searched = await inject(app, { method: 'GET', url: '/api/notes?q=LUNCH' });
    expect(searched.json().notes).toEqual([{ path: 'email/personal/1.md', title: 'Lunch on Friday?' }]);
    const one = await inject(app, { method: 'GET', url: '/api/notes/email/personal/1.md' });
    expect(one.json()).toEqual({
      path: 'email/personal/1.md',
      data: { subject: 'Lunch on Friday?', from: 'ada@example.com' },
      body: 'See you there.\n',
    });
    expect((await inject(app, { method: 'GET', url: '/api/notes/email/personal/3.md' })).statusCode).toBe(404);
    const inFolder = await inject(app, { method: 'GET', url: '/api/notes?path=email/personal&q=invoice' });
    expect(inFolder.json().notes).toEqual([{ path: 'email/personal/2.md', title: 'Invoice 42' }]);
    const elsewhere = await inject(app, { method: 'GET', url: '/api/notes?path=calendar' });
    expect(elsewhere.json()).toEqual({ notes: [], broken: [] });
    const folder = await inject(app, { method: 'GET', url: '/api/notes/email/personal' });
    expect(folder.statusCode).toBe(404);
    expect(folder.json().error.message).toMatch(/is a folder/);
    const broken = await inject(app, { method: 'GET', url: '/api/notes/email/personal/broken.md' });
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
      '/api/notes/..%5Csecret.txt',
      '/api/notes/email/%2e%2e/%2e%2e/secret.txt',
      '/api/notes/%00',
      '/api/notes/',
      '/api/notes?path=..',
      '/api/notes?path=email%2F..%2F..',
      '/api/notes?path=/etc',
    ]) {
      const response = await inject(app, { method: 'GET', url });
      expect([400, 404], url).toContain(response.statusCode);
      expect(response.body, url).not.toContain('do not show');
    }
  });
});

describe('/metrics', () => {
  it('reports queue depth by state and type, worker counters and the server own rejections', async () => {
    const config = await configWith();
    const queue = await openFileTaskQueue({
      directory: config.paths.queue,
      dataDirectory: config.paths.dataDir,
      settings: config.queue,
    });
    await queue.enqueue({ type: 'system.echo', source: 'cli' });
    await queue.enqueue({ type: 'system.sleep', source: 'cli', payload: { ms: 1 } });
    const worker = new TaskMetrics();
    worker.recordOutcome('system.echo', 'done', 30);
    worker.recordOutcome('system.echo', 'failed', 2_000);
    await queue.workers.publishMetrics('host-1-abc', worker.snapshot());
    const own = new TaskMetrics();
    own.recordRejection('system.housekeeping.run', 'duplicate');
    await using app = createServer({ config, catalog, metrics: own, token });
    await app.ready();
    const response = await inject(app, { method: 'GET', url: '/metrics' });
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

/** The parts of an OpenAPI operation the document test looks at. */
interface Operation {
  parameters?: { name: string; in: string }[];
  requestBody?: unknown;
  responses: Record<string, unknown>;
}

describe('/docs/openapi.json', () => {
  it('describes every route the server serves', async () => {
    await using app = await server();
    const document = (await inject(app, { method: 'GET', url: '/docs/openapi.json' })).json();
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
        'POST /api/tasks/bulk',
        'POST /api/tasks/{id}/reroute',
        'POST /api/tasks/{id}/steer',
        'GET /api/tasks/{id}/events',
        'GET /api/store/steering/{id}',
        'GET /api/store/steering/{id}/requests',
        'POST /api/store/steering/{id}/requests',
        'POST /api/store/steering/{id}/requests/{request}/outcome',
        'GET /api/store/steering/{id}/outcomes/{request}',
        'POST /api/store/steering/{id}/events',
        'POST /api/integrations/{name}/{platform}/trigger',
        'POST /api/integrations/{instance}/hooks/{name}',
        'GET /api/notes',
        'GET /api/notes/{path}',
        'GET /metrics',
        'GET /docs/openapi.json',
        'GET /api/approvals',
        'GET /api/shadow',
        'GET /api/approvals/{id}',
        'POST /api/approvals/{id}',
        'POST /api/approvals/bulk',
        'POST /api/actions',
        'GET /api/pauses',
        'POST /api/pauses',
        'DELETE /api/pauses',
        'POST /api/chats',
        'GET /api/chats',
        'GET /api/chats/{id}',
        'POST /api/chats/{id}/fork',
        'POST /api/chats/{id}/messages',
        'POST /api/chats/{id}/stop',
        'GET /api/chats/{id}/events',
        'POST /mcp',
        'GET /api/events',
        'GET /api/events/stream',
        'GET /api/hooks',
        'GET /api/hooks/{name}',
        'POST /api/hooks/{name}/test',
        'GET /api/personas',
        'GET /api/personas/{name}',
        'GET /api/workflows',
        'GET /api/workflows/runs/{run}',
        'POST /api/workflows/{name}/runs',
        'GET /api/memory/search',
        'GET /api/memory/contacts',
        'GET /api/memory/contacts/{slug}',
        'POST /api/memory/contacts/merge',
        'POST /api/memory/contacts/{slug}/unmerge',
        'GET /api/memory/facts',
        'POST /api/memory/facts',
        'GET /api/memory/tasks',
        'POST /api/memory/tasks',
        'PATCH /api/memory/tasks/{id}',
        'GET /api/store/notes/read',
        'GET /api/store/notes/text',
        'GET /api/store/notes/folder',
        'GET /api/store/notes/list',
        'POST /api/store/notes/query',
        'POST /api/store/notes/create',
        'POST /api/store/notes/update',
        'POST /api/store/notes/replace-text',
        'POST /api/store/notes/delete',
        'POST /api/store/notes/move',
        'POST /api/store/log',
      ].sort(),
    );
    // Each `{name}` of a path template is exactly one path parameter, and there are no others.
    for (const [route, methods] of Object.entries(document.paths as Record<string, Record<string, Operation>>)) {
      const inTemplate = [...route.matchAll(/\{([^}]+)\}/g)].map((match) => match[1]).sort();
      for (const [method, operation] of Object.entries(methods)) {
        const inPath = (operation.parameters ?? [])
          .filter((parameter) => parameter.in === 'path')
          .map((parameter) => parameter.name)
          .sort();
        expect(inPath, `${method} ${route}`).toEqual(inTemplate);
        expect(Object.keys(operation.responses).length, `${method} ${route}`).toBeGreaterThan(0);
        // Whatever takes input can refuse it.
        if (inPath.length > 0 || operation.requestBody)
          expect(operation.responses, `${method} ${route}`).toHaveProperty('400');
      }
    }
    expect(document.paths['/api/tasks'].post.requestBody.content['application/json'].schema).toMatchObject({
      type: 'object',
      required: ['type'],
      properties: { type: { type: 'string' }, priority: { type: 'integer', minimum: 0, maximum: 9 } },
    });
  });
});

describe('a server bound beyond loopback', () => {
  it('answers 401 to a request without server.token, and serves the Host names in server.allowed_hosts', async () => {
    await writeFile(path.join(dir, 'secrets.yaml'), 'server_token: "t0ken-from-secrets"\n');
    await chmod(path.join(dir, 'secrets.yaml'), 0o600);
    const config = await configWith(
      '  host: 0.0.0.0\n  token: !secret server_token\n  allowed_hosts: [assistant.lan, 192.168.1.20]\n',
    );
    await using app = createServer({ config, catalog });
    await app.ready();
    const without = await app.inject({ method: 'POST', url: '/api/tasks', payload: { type: 'system.echo' } });
    expect(without.statusCode).toBe(401);
    for (const host of ['assistant.lan:6767', '192.168.1.20', 'localhost']) {
      const withToken = await app.inject({
        method: 'POST',
        url: '/api/tasks',
        payload: { type: 'system.echo' },
        headers: { authorization: 'Bearer t0ken-from-secrets', host },
      });
      expect({ host, status: withToken.statusCode }).toEqual({ host, status: 201 });
    }
    // The wildcard address is no name a client reaches the server by.
    const wildcard = await app.inject({
      method: 'GET',
      url: '/api/tasks',
      headers: { authorization: 'Bearer t0ken-from-secrets', host: '0.0.0.0:6767' },
    });
    expect(wildcard.statusCode).toBe(421);
  });
});
