import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { type LoadedConfig, loadConfig } from '@assistant/config';
import { maxTaskNestingDepth, openFileTaskQueue } from '@assistant/queue';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createServer } from './create-server.ts';

const token = 'test-token-for-input-limits-0123456789abcd';
const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'assistant-limits-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function config(): Promise<LoadedConfig> {
  await writeFile(path.join(dir, 'config.yaml'), 'data_dir: ./data\nserver:\n  port: 0\n');
  return (await loadConfig({ configPath: path.join(dir, 'config.yaml') })).config;
}

/** `{"type":"system.echo","payload":[[…]]}` with a payload nested `depth` arrays deep, as text. */
function nestedBody(depth: number): string {
  return `{"type":"system.echo","payload":${'['.repeat(depth)}${']'.repeat(depth)}}`;
}

describe('JSON nesting at the HTTP edge', () => {
  it('hole 19: a body nested deeper than the task limit is refused with a 400 naming the limit, never a 500', async () => {
    const loaded = await config();
    await using app = createServer({ config: loaded, token });
    await app.ready();
    for (const depth of [maxTaskNestingDepth + 1, 1_000, 3_000, 100_000]) {
      const response = await app.inject({ method: 'POST', url: '/api/tasks', headers, payload: nestedBody(depth) });
      expect({ depth, status: response.statusCode }).toEqual({ depth, status: 400 });
      expect(response.json().error).toMatchObject({ code: 'BAD_REQUEST' });
      expect(response.json().error.message).toContain(`${maxTaskNestingDepth} levels`);
    }
    // The steering body goes through the same parser.
    const steer = await app.inject({
      method: 'POST',
      url: '/api/tasks/01m81zbz7e0rvw1d46qzvhsks1/steer',
      headers,
      payload: `{"action":"interject","message":"x","extra":${'['.repeat(5_000)}${']'.repeat(5_000)}}`,
    });
    expect(steer.statusCode).toBe(400);
    expect(steer.json().error.message).toContain(`${maxTaskNestingDepth} levels`);

    // At the limit it is accepted, and the queue (the worker's reader) can read the task back.
    const accepted = await app.inject({
      method: 'POST',
      url: '/api/tasks',
      headers,
      payload: nestedBody(maxTaskNestingDepth),
    });
    expect(accepted.statusCode).toBe(201);
    const queue = await openFileTaskQueue({ directory: loaded.paths.queue, settings: loaded.queue });
    const record = await queue.get(accepted.json().id);
    expect(record?.problem).toBeUndefined();
    expect(record?.task?.type).toBe('system.echo');
  });
});

describe('connection timeouts', () => {
  /**
   * Connects, and watches for the server closing the connection from the start, so a close that comes early is not
   * missed; the generous timeout only turns a hang into a failure.
   */
  async function connect(port: number, what: string): Promise<{ socket: net.Socket; closed: Promise<string> }> {
    const socket = net.connect(port, '127.0.0.1');
    const closed = new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`the server kept ${what} open`)), 20_000);
      socket.on('close', () => {
        clearTimeout(timer);
        resolve(what);
      });
    });
    await new Promise<void>((resolve, reject) => {
      socket.once('connect', () => resolve());
      socket.once('error', reject);
    });
    socket.on('error', () => {});
    // Read whatever the server answers (a 408): a paused socket never sees the end, so never emits close.
    socket.resume();
    return { socket, closed };
  }

  it('hole 19: silent, half-sent and idle keep-alive connections are closed', async () => {
    await using app = createServer({
      config: await config(),
      token,
      timeouts: { headersTimeoutMs: 500, requestTimeoutMs: 1_000, keepAliveTimeoutMs: 500 },
    });
    await app.listen({ host: '127.0.0.1', port: 0 });
    const address = app.server.address();
    if (address === null || typeof address === 'string') throw new Error('expected a TCP address');
    const { port } = address;

    const silent = await connect(port, 'a silent connection');
    const halfHeaders = await connect(port, 'half-sent headers');
    halfHeaders.socket.write('POST /api/tasks HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ');
    const halfBody = await connect(port, 'a half-sent body');
    halfBody.socket.write(
      `POST /api/tasks HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${token}\r\n` +
        'Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{"type":',
    );
    const idle = await connect(port, 'an idle keep-alive connection');
    const answered = new Promise<string>((resolve) => {
      let text = '';
      idle.socket.on('data', (chunk) => {
        text += chunk.toString();
        if (text.includes('\r\n\r\n')) resolve(text);
      });
    });
    idle.socket.write('GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: keep-alive\r\n\r\n');
    expect(await answered).toMatch(/^HTTP\/1\.1 200/);

    expect(await Promise.all([silent.closed, halfHeaders.closed, halfBody.closed, idle.closed])).toHaveLength(4);
  });

  it('hole 19: sets header, request and keep-alive timeouts by default', async () => {
    await using app = createServer({ config: await config(), token });
    expect(app.server.headersTimeout).toBeGreaterThan(0);
    expect(app.server.headersTimeout).toBeLessThanOrEqual(30_000);
    expect(app.server.requestTimeout).toBeGreaterThan(0);
    expect(app.server.requestTimeout).toBeLessThanOrEqual(120_000);
    expect(app.server.keepAliveTimeout).toBeGreaterThan(0);
    expect(app.server.keepAliveTimeout).toBeLessThanOrEqual(30_000);
  });
});
