import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { type LoadedConfig, loadConfig } from '@assistant/config';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createServer } from './create-server.ts';

const token = 'test-token-for-the-request-guard-0123456789';
const authorization = `Bearer ${token}`;

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'assistant-guard-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function config(): Promise<LoadedConfig> {
  await writeFile(path.join(dir, 'config.yaml'), 'data_dir: ./data\nserver:\n  port: 0\n');
  return (await loadConfig({ configPath: path.join(dir, 'config.yaml') })).config;
}

async function server() {
  const app = createServer({ config: await config(), token });
  await app.ready();
  return app;
}

const echo = JSON.stringify({ type: 'system.echo' });
const aTaskId = '01m81zbz7e0rvw1d46qzvhsks1';

describe('the request guard', () => {
  it('hole 2: a foreign Host header is refused on every route, loopback names are not', async () => {
    await using app = await server();
    for (const [method, url] of [
      ['POST', '/api/tasks'],
      ['GET', '/api/tasks'],
      ['GET', '/health'],
      ['GET', `/api/tasks/${aTaskId}/events`],
      ['GET', '/no/such/route'],
    ] as const) {
      for (const host of ['rebind.attacker.example', 'rebind.attacker.example:6767', '10.0.0.7:6767']) {
        const response = await app.inject({
          method,
          url,
          headers: { host, authorization, 'content-type': 'application/json' },
          ...(method === 'POST' ? { payload: echo } : {}),
        });
        expect({ method, url, host, status: response.statusCode }).toEqual({ method, url, host, status: 421 });
        expect(response.json()).toMatchObject({ error: { code: 'MISDIRECTED_REQUEST' } });
      }
    }
    for (const host of ['localhost', 'localhost:6767', '127.0.0.1', '127.0.0.1:6767', '[::1]', '[::1]:6767']) {
      const response = await app.inject({
        method: 'POST',
        url: '/api/tasks',
        headers: { host, authorization, 'content-type': 'application/json' },
        payload: echo,
      });
      expect({ host, status: response.statusCode }).toEqual({ host, status: 201 });
    }
  });

  it('hole 2: a cross-site Origin is refused on writes, steering and the event stream', async () => {
    await using app = await server();
    const requests = [
      ['POST', '/api/tasks', echo],
      ['POST', `/api/tasks/${aTaskId}/steer`, JSON.stringify({ action: 'pause' })],
      ['POST', `/api/tasks/${aTaskId}/retry`, undefined],
      ['POST', '/api/integrations/friendly/people/trigger', undefined],
      ['GET', `/api/tasks/${aTaskId}/events`, undefined],
    ] as const;
    for (const [method, url, payload] of requests) {
      for (const origin of ['https://evil.example', 'http://localhost:3000', 'null', 'http://127.0.0.1.evil.example']) {
        const response = await app.inject({
          method,
          url,
          headers: {
            host: 'localhost:6767',
            origin,
            authorization,
            ...(payload === undefined ? {} : { 'content-type': 'application/json' }),
          },
          ...(payload === undefined ? {} : { payload }),
        });
        expect({ url, origin, status: response.statusCode }).toEqual({ url, origin, status: 403 });
        expect(response.json()).toMatchObject({ error: { code: 'FORBIDDEN' } });
      }
    }
    // The server's own origin is fine.
    const own = await app.inject({
      method: 'POST',
      url: '/api/tasks',
      headers: {
        host: 'localhost:6767',
        origin: 'http://localhost:6767',
        authorization,
        'content-type': 'application/json',
      },
      payload: echo,
    });
    expect(own.statusCode).toBe(201);
  });

  it('hole 2: a body that is not application/json is refused with 415, on body-less POSTs too', async () => {
    await using app = await server();
    const cases = [
      ['/api/tasks', 'text/plain', echo],
      ['/api/tasks', 'text/plain;charset=UTF-8', echo],
      ['/api/tasks', 'application/x-www-form-urlencoded', 'type=system.echo'],
      [
        '/api/tasks',
        'multipart/form-data; boundary=x',
        '--x\r\nContent-Disposition: form-data; name="type"\r\n\r\nsystem.echo\r\n--x--\r\n',
      ],
      ['/api/integrations/friendly/people/trigger', 'text/plain', ''],
      ['/api/integrations/friendly/people/trigger', 'application/x-www-form-urlencoded', 'a=b'],
      [`/api/tasks/${aTaskId}/retry`, 'text/plain', ''],
    ] as const;
    for (const [url, contentType, payload] of cases) {
      const response = await app.inject({
        method: 'POST',
        url,
        headers: { authorization, 'content-type': contentType },
        payload,
      });
      expect({ url, contentType, status: response.statusCode }).toEqual({ url, contentType, status: 415 });
      expect(response.json()).toMatchObject({ error: { code: 'UNSUPPORTED_MEDIA_TYPE' } });
    }
    // A body-less POST may carry no body and no content type at all, or an empty JSON one.
    const bare = await app.inject({ method: 'POST', url: `/api/tasks/${aTaskId}/retry`, headers: { authorization } });
    expect(bare.statusCode).toBe(404);
    const emptyJson = await app.inject({
      method: 'POST',
      url: `/api/tasks/${aTaskId}/retry`,
      headers: { authorization, 'content-type': 'application/json' },
      payload: '',
    });
    expect(emptyJson.statusCode).toBe(404);
    // A body where none is taken is a mistake worth saying.
    const extra = await app.inject({
      method: 'POST',
      url: `/api/tasks/${aTaskId}/retry`,
      headers: { authorization, 'content-type': 'application/json' },
      payload: JSON.stringify({ force: true }),
    });
    expect(extra.statusCode).toBe(400);
    expect(extra.json().error.message).toMatch(/takes no body/);
  });

  it('hole 2: every route but GET /health needs the API token, and /health says only status, version and counts', async () => {
    await using app = await server();
    for (const [method, url] of [
      ['POST', '/api/tasks'],
      ['GET', '/api/tasks'],
      ['GET', `/api/tasks/${aTaskId}`],
      ['GET', `/api/tasks/${aTaskId}/events`],
      ['POST', `/api/tasks/${aTaskId}/steer`],
      ['GET', '/metrics'],
      ['GET', '/docs/openapi.json'],
      ['GET', '/api/notes'],
      ['GET', '/api/store/notes/read?path=a.md'],
      ['POST', '/api/store/notes/update'],
      ['POST', '/api/store/log'],
      ['GET', '/no/such/route'],
    ] as const) {
      for (const header of [undefined, 'Bearer wrong', `Basic ${token}`, `Bearer ${token}x`]) {
        const response = await app.inject({
          method,
          url,
          headers: {
            'content-type': 'application/json',
            ...(header === undefined ? {} : { authorization: header }),
          },
          ...(method === 'POST' ? { payload: echo } : {}),
        });
        expect({ method, url, header, status: response.statusCode }).toEqual({ method, url, header, status: 401 });
        expect(response.headers['www-authenticate']).toBe('Bearer');
      }
    }
    const health = await app.inject({ method: 'GET', url: '/health' });
    expect(health.statusCode).toBe(200);
    expect(Object.keys(health.json()).sort()).toEqual(['queue', 'status', 'version']);
  });

  it('hole 2: createServer without a token refuses to build rather than serve an open API', async () => {
    const loaded = await config();
    expect(() => createServer({ config: loaded })).toThrow(/token/);
  });
});
