import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { type LoadedConfig, loadConfig } from '@assistant/config';
import { clearSecretValues, registerSecretValue } from '@assistant/errors';
import { applySteering, ControlFiles, HttpSteeringChannel, type SteerableTarget } from '@assistant/steering';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import * as z from 'zod';
import { createServer } from '../create-server.ts';
import type { AssistantServer } from '../server-type.ts';

const token = 'test-token-for-remote-steering-0123456789abcdef';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'assistant-remote-steering-'));
});
afterEach(async () => {
  clearSecretValues();
  await rm(dir, { recursive: true, force: true });
});

/** The whole server (auth, Host checks, the queue) on a loopback port: the channel talks to it as a worker would. */
async function listening(): Promise<{ app: AssistantServer; url: string; config: LoadedConfig }> {
  await writeFile(path.join(dir, 'config.yaml'), 'data_dir: ./data\nserver:\n  port: 0\n');
  const { config } = await loadConfig({ configPath: path.join(dir, 'config.yaml') });
  const app = createServer({ config, token });
  const address = await app.listen({ host: '127.0.0.1', port: 0 });
  return { app, url: address, config };
}

async function api(url: string, route: string, init: { method?: string; body?: unknown; token?: string } = {}) {
  const response = await fetch(`${url}${route}`, {
    method: init.method ?? 'GET',
    headers: {
      authorization: `Bearer ${init.token ?? token}`,
      ...(init.body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    ...(init.body === undefined ? {} : { body: JSON.stringify(init.body) }),
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

async function pendingTask(url: string): Promise<string> {
  const created = await api(url, '/api/tasks', { method: 'POST', body: { type: 'system.echo' } });
  return z.object({ id: z.string() }).parse(created.body).id;
}

/** A loop as steering sees it, recording what it was told; `ask` answers when the test says so. */
function recordingTarget() {
  const calls: string[] = [];
  const answers: ((answer: string) => void)[] = [];
  const target: SteerableTarget = {
    pause: () => calls.push('pause'),
    resume: () => calls.push('resume'),
    interject: (message) => calls.push(`interject ${message}`),
    stop: (reason) => calls.push(`stop ${reason}`),
    ask: (question) => {
      calls.push(`ask ${question}`);
      return new Promise((resolve) => answers.push(resolve));
    },
    answerClarification: (id, answer) => calls.push(`answer ${id} ${answer}`),
    done: () => false,
  };
  return { target, calls, answers };
}

const steeringEvents = async (config: LoadedConfig, id: string) =>
  (await new ControlFiles({ root: config.paths.control, taskId: id }).eventsFrom(0)).events
    .filter((event) => event.type === 'steering')
    .map((event) => event.action);

describe('applySteering over HttpSteeringChannel', () => {
  it('applies what POST /api/tasks/:id/steer asks, in order, and the REST call sees the outcome', async () => {
    const { app, url, config } = await listening();
    await using _app = app;
    const id = await pendingTask(url);
    const { target, calls } = recordingTarget();
    const channel = new HttpSteeringChannel({ serverUrl: url, token, taskId: id });
    const steering = applySteering({ channel, target });
    try {
      await steering.drained();
      const steer = (body: Record<string, unknown>) => api(url, `/api/tasks/${id}/steer`, { method: 'POST', body });
      // 200 (not 202): the remote side applied it and its outcome reached the server while the REST call waited.
      expect(await steer({ action: 'pause' })).toMatchObject({ status: 200, body: { status: 'applied' } });
      expect(await steer({ action: 'interject', message: 'look at the second source' })).toMatchObject({
        status: 200,
        body: { status: 'applied' },
      });
      expect(await steer({ action: 'resume' })).toMatchObject({ status: 200 });
      expect(await steer({ action: 'answer', clarification_id: 'c1', message: 'yes' })).toMatchObject({ status: 200 });
      expect(await steer({ action: 'stop', reason: 'enough' })).toMatchObject({ status: 200 });
      expect(calls).toEqual(['pause', 'interject look at the second source', 'resume', 'answer c1 yes', 'stop enough']);
      // The event follows the outcome the REST call waited for.
      await vi.waitFor(
        async () =>
          expect(await steeringEvents(config, id)).toEqual(['pause', 'interject', 'resume', 'answer', 'stop']),
        { timeout: 10_000 },
      );
      expect(await channel.pending()).toEqual([]);
      expect(await channel.exists()).toBe(true);
    } finally {
      await steering.close();
    }
  });

  it('applies requests made before it started first, in the order they were made', async () => {
    const { app, url, config } = await listening();
    await using _app = app;
    const id = await pendingTask(url);
    const files = new ControlFiles({ root: config.paths.control, taskId: id });
    await files.request({ action: 'interject', message: 'first', source: 'test' });
    await files.request({ action: 'interject', message: 'second', source: 'test' });
    // A request file a person broke: refused, not retried forever.
    await writeFile(path.join(files.requestsDirectory, '99999999999999-000000-broken00.json'), '{not json');
    const { target, calls } = recordingTarget();
    const steering = applySteering({ channel: new HttpSteeringChannel({ serverUrl: url, token, taskId: id }), target });
    try {
      await steering.drained();
      expect(calls).toEqual(['interject first', 'interject second']);
      expect(await files.outcome('99999999999999-000000-broken00')).toMatchObject({ status: 'refused' });
      expect(await files.pending()).toEqual([]);
    } finally {
      await steering.close();
    }
  });

  it('answers an ask once, however long the answer takes, and a later request does not wait for it', async () => {
    const { app, url } = await listening();
    await using _app = app;
    const id = await pendingTask(url);
    const { target, calls, answers } = recordingTarget();
    const steering = applySteering({
      // A short fallback poll: the ask stays pending while it is answered, and must not be asked again.
      channel: new HttpSteeringChannel({ serverUrl: url, token, taskId: id }),
      target,
      pollMs: 50,
    });
    try {
      await steering.drained();
      const asked = api(url, `/api/tasks/${id}/steer`, {
        method: 'POST',
        body: { action: 'ask', message: 'what are you doing?' },
      });
      await vi.waitFor(() => expect(answers).toHaveLength(1), { timeout: 10_000 });
      expect(await api(url, `/api/tasks/${id}/steer`, { method: 'POST', body: { action: 'pause' } })).toMatchObject({
        status: 200,
      });
      answers[0]?.('reading the mail');
      expect(await asked).toMatchObject({ status: 200, body: { status: 'applied', answer: 'reading the mail' } });
      expect(calls).toEqual(['ask what are you doing?', 'pause']);
    } finally {
      await steering.close();
    }
  });

  it('appends events in the order they were written, stamped by the worker', async () => {
    const { app, url, config } = await listening();
    await using _app = app;
    const id = await pendingTask(url);
    const channel = new HttpSteeringChannel({ serverUrl: url, token, taskId: id });
    expect(await channel.exists()).toBe(false);
    for (let step = 0; step < 20; step += 1) {
      await channel.event({ type: 'step-finished', step, lineage: ['task'] });
    }
    await channel.event({ type: 'notification', at: '2020-01-01T00:00:00.000Z', text: 'from the past' });
    const { events } = await new ControlFiles({ root: config.paths.control, taskId: id }).eventsFrom(0);
    expect(events.map((event) => event.step ?? event.text)).toEqual([
      ...Array.from({ length: 20 }, (_, step) => step),
      'from the past',
    ]);
    expect(events.at(-1)?.at).toBe('2020-01-01T00:00:00.000Z');
    expect(events[0]?.lineage).toEqual(['task']);
  });

  it('makes a request of another task and waits for its outcome (a chat turn on a remote worker)', async () => {
    const { app, url, config } = await listening();
    await using _app = app;
    const id = await pendingTask(url);
    const channel = new HttpSteeringChannel({ serverUrl: url, token, taskId: id });
    const request = await channel.request({ action: 'interject', message: 'hurry', source: `chat:${id}` });
    const files = new ControlFiles({ root: config.paths.control, taskId: id });
    expect((await files.pending()).map((entry) => entry.request)).toEqual([request]);
    expect(await channel.waitForOutcome(request.id, { timeoutMs: 0 })).toBeUndefined();
    const waiting = channel.waitForOutcome(request.id, { timeoutMs: 20_000 });
    await files.settle(request.id, { status: 'applied' });
    expect(await waiting).toMatchObject({ request_id: request.id, status: 'applied' });
  });
});

describe('HttpSteeringChannel', () => {
  it("scrubs the worker's own secrets from events, answers and requests before they leave it", async () => {
    const { app, url, config } = await listening();
    await using _app = app;
    const id = await pendingTask(url);
    const secret = 'sk-worker-only-secret-0123456789';
    registerSecretValue(secret);
    const sent: string[] = [];
    const recording: typeof fetch = (input, init) => {
      if (typeof init?.body === 'string') sent.push(init.body);
      return fetch(input, init);
    };
    const channel = new HttpSteeringChannel({ serverUrl: url, token, taskId: id, fetch: recording });
    await channel.event({ type: 'notification', text: `the model said 401 for ${secret}` });
    const request = await channel.request({ action: 'ask', message: `is ${secret} right?`, source: `chat:${id}` });
    await channel.settle(request.id, { status: 'applied', answer: `it is ${secret}` });
    expect(sent).toHaveLength(3);
    for (const body of sent) expect(body).not.toContain(secret);
    const files = new ControlFiles({ root: config.paths.control, taskId: id });
    expect(JSON.stringify(await files.eventsFrom(0))).toContain('the model said 401 for');
    expect((await files.outcome(request.id))?.answer).toMatch(/^it is /);
  });
});

describe('/api/store/steering routes', () => {
  it('refuse a bad task id, a request id that could name a path, an unknown request and a missing token', async () => {
    const { app, url } = await listening();
    await using _app = app;
    const id = await pendingTask(url);
    expect((await api(url, '/api/store/steering/not-a-task/requests')).status).toBe(400);
    expect((await api(url, '/api/store/steering/..%2F..%2Fqueue/requests')).status).toBe(400);
    expect(
      (await api(url, `/api/store/steering/${id.toUpperCase()}/events`, { method: 'POST', body: {} })).status,
    ).toBe(400);
    expect(
      (
        await api(url, `/api/store/steering/${id}/requests/..%2Fevents/outcome`, {
          method: 'POST',
          body: { status: 'applied' },
        })
      ).status,
    ).toBe(400);
    expect(
      await api(url, `/api/store/steering/${id}/requests/00000000000000-000000-00000000/outcome`, {
        method: 'POST',
        body: { status: 'applied' },
      }),
    ).toMatchObject({ status: 404, body: { error: { code: 'NOT_FOUND' } } });
    expect((await api(url, `/api/store/steering/${id}/requests?wait_ms=60000`)).status).toBe(400);
    expect((await api(url, `/api/store/steering/${id}/requests`, { token: 'wrong' })).status).toBe(401);
    expect(
      (
        await api(url, `/api/store/steering/${id}/requests`, {
          method: 'POST',
          body: { action: 'pause', source: '../../etc' },
        })
      ).status,
    ).toBe(400);
    const channel = new HttpSteeringChannel({ serverUrl: url, token: 'wrong', taskId: id });
    const refused = await channel.pending().then(
      () => undefined,
      (error: unknown) => (error as Error).message,
    );
    expect(refused).toMatch(/answered 401 UNAUTHORIZED/);
    expect(refused).not.toContain('wrong');
  });
});
