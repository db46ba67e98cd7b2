import { chmod, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { type LoadedConfig, loadConfig } from '@assistant/config';
import { assistantVersion } from '@assistant/process';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createServer } from './create-server.ts';

const token = 'test-token-for-create-server-0123456789ab';
const headers = { authorization: `Bearer ${token}` };

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'assistant-server-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function configWith(options: { token?: string } = {}): Promise<LoadedConfig> {
  const token = options.token === undefined ? '' : '  token: !secret server_token\n';
  await writeFile(path.join(dir, 'config.yaml'), `data_dir: ./data\nserver:\n  port: 0\n${token}`);
  if (options.token !== undefined) {
    const secrets = path.join(dir, 'secrets.yaml');
    await writeFile(secrets, `server_token: ${JSON.stringify(options.token)}\n`);
    await chmod(secrets, 0o600);
  }
  return (await loadConfig({ configPath: path.join(dir, 'config.yaml') })).config;
}

async function placeFiles(config: LoadedConfig, state: string, names: string[]): Promise<void> {
  const directory = path.join(config.paths.queue, state);
  await mkdir(directory, { recursive: true });
  for (const name of names) await writeFile(path.join(directory, name), 'id: x\n');
}

/** A task file name; `index` keeps the ids apart. */
function taskName(index: number): string {
  // Written by hand, as a person or another tool could: priority, ready time, id, fingerprint, type.
  return `5_20261122T000000000Z_01m81zbz7e0rvw1d46qzvhsks${index}--0123456789abcdef--system.echo.yaml`;
}

describe('GET /health', () => {
  it('counts the tasks in each queue state from their file names, as the queue lists them', async () => {
    const config = await configWith();
    // Stray files and an editor's swap file in pending/ are not tasks.
    await placeFiles(config, 'pending', [taskName(1), taskName(2), 'notes.txt', `.${taskName(3)}.swp`]);
    await placeFiles(config, 'active', [taskName(4)]);
    await placeFiles(config, 'tmp', [taskName(5)]);
    // failed/: a task, a corrupt task and an unreadable stray set aside, each with its reason beside it.
    await placeFiles(config, 'failed', [
      taskName(6),
      taskName(7),
      `${taskName(7)}.error.txt`,
      'garbage.bin',
      'garbage.bin.error.txt',
    ]);
    await using app = createServer({ config, token });
    const response = await app.inject({ method: 'GET', url: '/health', headers });
    expect(response.statusCode).toBe(200);
    expect(response.json()).toEqual({
      status: 'ok',
      version: assistantVersion,
      queue: { pending: 2, active: 1, done: 0, failed: 3 },
      worker: { alive: false, workers: 0, last_heartbeat_at: null },
      circuit_breakers: [],
      models: [],
      held: [],
      schedules: [],
      pauses: [],
      listeners: [],
      processes: [],
      hook_breakers: [],
    });
  });

  it('reports zeros when the queue directories do not exist yet', async () => {
    await using app = createServer({ config: await configWith(), token });
    const response = await app.inject({ method: 'GET', url: '/health', headers });
    expect(response.json()).toMatchObject({ queue: { pending: 0, active: 0, done: 0, failed: 0 } });
  });
});

describe('GET /health worker and status', () => {
  /** A heartbeat file as the worker registry writes it. */
  function heartbeat(id: string, heartbeatAt: Date): string {
    return `id: ${id}\npid: 4242\nhost: elsewhere\nstarted_at: 2026-01-01T00:00:00.000Z\nheartbeat_at: ${heartbeatAt.toISOString()}\n`;
  }

  it('counts the workers whose heartbeat is within the 60 s lease and ignores every other file', async () => {
    const config = await configWith();
    const workers = path.join(config.paths.queue, 'workers');
    await mkdir(workers, { recursive: true });
    const fresh = new Date(Date.now() - 5_000);
    await writeFile(path.join(workers, 'host-1-aaa.yaml'), heartbeat('host-1-aaa', fresh));
    await writeFile(path.join(workers, 'host-2-bbb.yaml'), heartbeat('host-2-bbb', new Date(Date.now() - 3_600_000)));
    // Files beside the heartbeats: a worker's metrics, a half-written heartbeat, a folder and a stray note.
    await writeFile(path.join(workers, 'host-1-aaa.metrics.json'), '{}');
    await writeFile(path.join(workers, 'host-3-ccc.yaml'), 'id: [unclosed\n');
    await mkdir(path.join(workers, 'host-4-ddd.yaml'));
    await writeFile(path.join(workers, 'readme.txt'), heartbeat('readme', new Date()));
    await using app = createServer({ config, token });
    const response = await app.inject({ method: 'GET', url: '/health', headers });
    expect(response.statusCode).toBe(200);
    expect(response.json().worker).toEqual({ alive: true, workers: 1, last_heartbeat_at: fresh.toISOString() });
  });

  it('reports a stale heartbeat as not alive, with its time', async () => {
    const config = await configWith();
    const workers = path.join(config.paths.queue, 'workers');
    await mkdir(workers, { recursive: true });
    const stale = new Date(Date.now() - 61_000);
    await writeFile(path.join(workers, 'host-1-aaa.yaml'), heartbeat('host-1-aaa', stale));
    await using app = createServer({ config, token });
    const response = await app.inject({ method: 'GET', url: '/health', headers });
    expect(response.json().worker).toEqual({ alive: false, workers: 0, last_heartbeat_at: stale.toISOString() });
  });

  it('lists open and half-open circuit breakers, not closed ones, and every schedule', async () => {
    await using app = createServer({
      config: await configWith(),
      token,
      status: {
        breakers: async () => [
          { taskType: 'system.echo', state: 'closed', consecutiveFailures: 0 },
          {
            taskType: 'email.inbox.check',
            state: 'open',
            consecutiveFailures: 5,
            retryAt: '2026-01-01T01:00:00.000Z',
            lastError: 'ECONNREFUSED',
          },
          { taskType: 'greeter.people.check', state: 'half_open', consecutiveFailures: 3 },
        ],
        schedules: () => [
          {
            id: 'mail',
            description: 'mail (email): inbox',
            lastFiredAt: '2026-01-01T00:00:00.000Z',
            nextRunAt: '2026-01-01T00:30:00.000Z',
          },
          { id: 'quiet', description: 'quiet (greeter): people' },
        ],
      },
    });
    const response = await app.inject({ method: 'GET', url: '/health', headers });
    expect(response.json()).toMatchObject({
      circuit_breakers: [
        {
          task_type: 'email.inbox.check',
          state: 'open',
          consecutive_failures: 5,
          retry_at: '2026-01-01T01:00:00.000Z',
          last_error: 'ECONNREFUSED',
        },
        { task_type: 'greeter.people.check', state: 'half_open', consecutive_failures: 3 },
      ],
      schedules: [
        {
          id: 'mail',
          description: 'mail (email): inbox',
          last_fired_at: '2026-01-01T00:00:00.000Z',
          next_run_at: '2026-01-01T00:30:00.000Z',
        },
        { id: 'quiet', description: 'quiet (greeter): people' },
      ],
    });
  });
});

describe('errors', () => {
  it('answers unknown routes with {error: {code, message}}', async () => {
    await using app = createServer({ config: await configWith(), token });
    const response = await app.inject({ method: 'GET', url: '/nope', headers });
    expect(response.statusCode).toBe(404);
    expect(response.json()).toEqual({ error: { code: 'NOT_FOUND', message: 'no route for GET /nope' } });
  });
});

describe('bearer token', () => {
  it('uses server.token when configured: refuses requests without it and accepts them with it', async () => {
    await using app = createServer({ config: await configWith({ token: 's3cret-token-from-secrets' }) });
    const missing = await app.inject({ method: 'GET', url: '/api/tasks' });
    expect(missing.statusCode).toBe(401);
    expect(missing.headers['www-authenticate']).toBe('Bearer');
    expect(missing.json()).toMatchObject({ error: { code: 'UNAUTHORIZED' } });

    const wrong = await app.inject({ method: 'GET', url: '/api/tasks', headers: { authorization: 'Bearer nope' } });
    expect(wrong.statusCode).toBe(401);
    expect(wrong.json().error.message).toBe('the bearer token is not the one in server.token');
    const unknownRoute = await app.inject({ method: 'GET', url: '/nope' });
    expect(unknownRoute.statusCode).toBe(401);

    const right = await app.inject({
      method: 'GET',
      url: '/health',
      headers: { authorization: 'Bearer s3cret-token-from-secrets' },
    });
    expect(right.statusCode).toBe(200);
    expect(right.json()).toMatchObject({ status: 'ok', worker: { alive: false } });
    // Without the token /health still answers liveness probes, with nothing but status, version and counts.
    const anonymous = await app.inject({ method: 'GET', url: '/health' });
    expect(anonymous.statusCode).toBe(200);
    expect(anonymous.json()).toEqual({
      status: 'ok',
      version: assistantVersion,
      queue: { pending: 0, active: 0, done: 0, failed: 0 },
    });
  });

  it('names where the token passed in comes from in a 401', async () => {
    for (const [source, named] of [
      ['file', 'data/api-token'],
      ['config', 'server.token'],
    ] as const) {
      await using app = createServer({ config: await configWith(), token: { value: token, source } });
      const wrong = await app.inject({ method: 'GET', url: '/api/tasks', headers: { authorization: 'Bearer nope' } });
      expect(wrong.json().error.message).toBe(`the bearer token is not the one in ${named}`);
    }
  });

  it('refuses to start with a blank token rather than run open', async () => {
    const config = await configWith({ token: '  ' });
    expect(() => createServer({ config })).toThrow(
      /server\.token is configured but its secret `server_token` is blank/,
    );
  });
});

describe('listening', () => {
  it('serves /health over real HTTP', async () => {
    await using app = createServer({ config: await configWith(), token });
    const address = await app.listen({ host: '127.0.0.1', port: 0 });
    const response = await fetch(`${address}/health`, { headers });
    expect(response.status).toBe(200);
    expect(await response.json()).toMatchObject({ status: 'ok' });
  });
});

describe('server.dashboard', () => {
  it('serves the dashboard by default and only the REST API with `dashboard: false`', async () => {
    const served = await configWith();
    {
      await using app = createServer({ config: served, token });
      expect((await app.inject({ method: 'GET', url: '/login' })).statusCode).toBe(200);
    }
    await writeFile(path.join(dir, 'config.yaml'), 'data_dir: ./data\nserver:\n  port: 0\n  dashboard: false\n');
    const { config } = await loadConfig({ configPath: path.join(dir, 'config.yaml') });
    await using app = createServer({ config, token });
    // With the token, so the answer is about the route, not the login.
    expect((await app.inject({ method: 'GET', url: '/login', headers })).statusCode).toBe(404);
    expect((await app.inject({ method: 'GET', url: '/', headers })).statusCode).toBe(404);
    expect((await app.inject({ method: 'GET', url: '/api/tasks', headers })).statusCode).toBe(200);
  });
});
