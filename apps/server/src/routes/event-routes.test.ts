import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { type EventLedger, openEventLedger } from '@assistant/events';
import { type LoadedRuntime, loadRuntime } from '@assistant/integration-host';
import { FakeOpenAiServer } from '@assistant/llm/testing';
import { installation } from '@assistant/process';
import type { InjectOptions } from 'fastify';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createServer } from '../create-server.ts';
import type { AssistantServer } from '../server-type.ts';

const token = 'test-token-for-the-event-routes-0123456789';
const authorization = `Bearer ${token}`;

let dir: string;
let runtime: LoadedRuntime;
let ledger: EventLedger;

const accountantHook = [
  'description: my accountant wrote',
  'on: mail.received',
  'when: {from_address: anna@accountant.example}',
  'then:',
  '  - notify: "Your accountant wrote: {{event.data.subject}}"',
  '',
].join('\n');

const deadlineHook = [
  'on: mail.received',
  'when: {from_address: anna@accountant.example}',
  'ask: Does this mail name a deadline for me?',
  'then:',
  '  - notify: "A deadline: {{event.data.subject}}"',
  '',
].join('\n');

function mail(nativeId: string, from: string, subject: string) {
  return {
    type: 'mail.received',
    source: 'email:personal',
    nativeId,
    data: {
      instance: 'personal',
      message_id: nativeId,
      from_address: from,
      from_domain: from.split('@')[1] ?? '',
      subject,
    },
  };
}

beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'assistant-event-routes-'));
  await writeFile(
    path.join(dir, 'config.yaml'),
    'data_dir: ./data\nserver:\n  port: 0\nllms:\n  default:\n    base_url: http://127.0.0.1:9/v1\n    model: nothing\n',
  );
  await mkdir(path.join(dir, 'hooks'));
  await writeFile(path.join(dir, 'hooks', 'accountant.yaml'), accountantHook);
  await writeFile(path.join(dir, 'hooks', 'deadline.yaml'), deadlineHook);
  runtime = await loadRuntime({ installation, configPath: path.join(dir, 'config.yaml'), cwd: dir });
  ledger = openEventLedger({ dataDir: runtime.config.paths.dataDir });
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function server(): Promise<AssistantServer> {
  const app = createServer({
    config: runtime.config,
    registry: runtime.registry,
    hooks: runtime.hooks,
    token,
    events: ledger,
  });
  await app.ready();
  return app;
}

function inject(app: AssistantServer, options: InjectOptions) {
  return app.inject({ ...options, headers: { authorization, ...options.headers } });
}

/** Every file under `root` with its contents, to prove a dry run wrote nothing. */
async function snapshot(root: string): Promise<Record<string, string>> {
  const files: Record<string, string> = {};
  for (const entry of await readdir(root, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile()) continue;
    const file = path.join(entry.parentPath, entry.name);
    files[path.relative(root, file)] = await readFile(file, 'utf8');
  }
  return files;
}

describe('GET /api/events', () => {
  it('lists events filtered by type and time, pages with next, and refuses a bad cursor, time or type with a code', async () => {
    await ledger.emit(mail('m1', 'anna@accountant.example', 'Invoice'));
    await ledger.emit({
      type: 'task.done',
      source: 'queue',
      nativeId: 't1:done',
      data: { task: 't1', task_type: 'system.echo', attempts: 1 },
    });
    await ledger.emit(mail('m2', 'bob@example.com', 'Lunch'));
    await using app = await server();

    const all = await inject(app, { method: 'GET', url: '/api/events' });
    expect(all.statusCode).toBe(200);
    expect(all.json().events.map((event: { type: string }) => event.type)).toEqual([
      'mail.received',
      'task.done',
      'mail.received',
    ]);
    expect(all.json().next).toBeUndefined();

    const mails = await inject(app, { method: 'GET', url: '/api/events?type=mail.received&limit=1' });
    expect(mails.json().events).toHaveLength(1);
    expect(mails.json().events[0].data.subject).toBe('Invoice');
    const next = await inject(app, {
      method: 'GET',
      url: `/api/events?type=mail.received&limit=1&after=${encodeURIComponent(mails.json().next)}`,
    });
    expect(next.json().events.map((event: { data: { subject: string } }) => event.data.subject)).toEqual(['Lunch']);
    // Both spellings of several types.
    for (const url of ['/api/events?type=task.done,mail.received', '/api/events?type=task.done&type=mail.received']) {
      expect((await inject(app, { method: 'GET', url })).json().events).toHaveLength(3);
    }
    expect((await inject(app, { method: 'GET', url: '/api/events?since=1h' })).json().events).toHaveLength(3);
    expect((await inject(app, { method: 'GET', url: '/api/events?until=2000-01-01' })).json().events).toHaveLength(0);

    const badCursor = await inject(app, { method: 'GET', url: '/api/events?after=yesterday' });
    expect(badCursor.statusCode).toBe(400);
    expect(badCursor.json().error.code).toBe('EVENT_CURSOR_INVALID');
    const badTime = await inject(app, { method: 'GET', url: '/api/events?since=last%20week' });
    expect(badTime.statusCode).toBe(400);
    expect(badTime.json().error).toMatchObject({
      code: 'EVENT_QUERY_INVALID',
      message: expect.stringContaining('"last week"'),
    });
    const badType = await inject(app, { method: 'GET', url: '/api/events?type=Mail!' });
    expect(badType.json().error.code).toBe('EVENT_QUERY_INVALID');
    const tooMany = await inject(app, { method: 'GET', url: '/api/events?limit=1001' });
    expect(tooMany.statusCode).toBe(400);
  });

  it('answers 401 on every new route without the token', async () => {
    await using app = await server();
    for (const [method, url] of [
      ['GET', '/api/events'],
      ['GET', '/api/events/stream'],
      ['GET', '/api/hooks'],
      ['GET', '/api/hooks/accountant'],
      ['POST', '/api/hooks/accountant/test'],
    ] as const) {
      const response = await app.inject({ method, url, ...(method === 'POST' ? { payload: { event: 'x' } } : {}) });
      expect({ url, status: response.statusCode }).toEqual({ url, status: 401 });
    }
  });
});

describe('GET /api/events/stream', () => {
  it('streams new events as they are appended, filtered by type, and resumes from Last-Event-ID', async () => {
    await ledger.emit(mail('old', 'anna@accountant.example', 'Before the stream'));
    await using app = await server();
    const address = await app.listen({ host: '127.0.0.1', port: 0 });
    const controller = new AbortController();
    const received: { type: string; id: string; data: { id: string; data: { subject?: string } } }[] = [];
    const response = await fetch(`${address}/api/events/stream?type=mail.received`, {
      headers: { authorization },
      signal: controller.signal,
    });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const reading = readEvents(response, (event) => received.push(event));
    // Appended while the stream is open: the task event is filtered out, the mail arrives.
    await ledger.emit({
      type: 'task.done',
      source: 'queue',
      nativeId: 't1:done',
      data: { task: 't1', task_type: 'system.echo', attempts: 1 },
    });
    await ledger.emit(mail('new', 'bob@example.com', 'During the stream'));
    await waitFor(() => received.length >= 1);
    expect(received.map((event) => [event.type, event.data.data.subject])).toEqual([
      ['mail.received', 'During the stream'],
    ]);
    controller.abort();
    await reading;

    // Resuming from the first event's cursor gives what came after it, whatever the type filter allows.
    const first = (await ledger.list({ limit: 1 })).events[0];
    const resumed: typeof received = [];
    const again = new AbortController();
    const resumedResponse = await fetch(`${address}/api/events/stream`, {
      headers: { authorization, 'last-event-id': first?.cursor ?? '' },
      signal: again.signal,
    });
    const resumedReading = readEvents(resumedResponse, (event) => resumed.push(event));
    await waitFor(() => resumed.length >= 2);
    expect(resumed.map((event) => event.type)).toEqual(['task.done', 'mail.received']);
    expect(resumed[1]?.id).toMatch(/^\d{4}-\d{2}-\d{2}:\d+$/);
    again.abort();
    await resumedReading;

    const bad = await fetch(`${address}/api/events/stream`, { headers: { authorization, 'last-event-id': 'nope' } });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { error: { code: string } }).error.code).toBe('EVENT_CURSOR_INVALID');
  });
});

describe('/api/hooks', () => {
  it("lists each hook's state, shows one with its compiled form, and 404s an unknown one", async () => {
    await mkdir(path.join(runtime.config.paths.dataDir, 'hooks'), { recursive: true });
    await writeFile(
      path.join(runtime.config.paths.dataDir, 'hooks', 'breakers.json'),
      JSON.stringify({ deadline: { failures: 5, opened_at: new Date().toISOString() } }),
    );
    await using app = await server();
    const list = await inject(app, { method: 'GET', url: '/api/hooks' });
    expect(list.statusCode).toBe(200);
    expect(list.json().hooks).toEqual([
      expect.objectContaining({
        name: 'accountant',
        on: 'mail.received',
        enabled: true,
        breaker: { state: 'closed', failures: 0 },
      }),
      expect.objectContaining({ name: 'deadline', breaker: expect.objectContaining({ state: 'open', failures: 5 }) }),
    ]);
    const one = await inject(app, { method: 'GET', url: '/api/hooks/accountant' });
    expect(one.json().hook).toMatchObject({
      name: 'accountant',
      file: 'hooks/accountant.yaml',
      on: 'mail.received',
      conditions: [expect.stringContaining('anna@accountant.example')],
      actions: [{ kind: 'notify', needs_approval: false }],
    });
    const missing = await inject(app, { method: 'GET', url: '/api/hooks/nobody' });
    expect(missing.statusCode).toBe(404);
    expect(missing.json().error.message).toContain('accountant, deadline');

    // /health names the hook whose breaker is open, and stays ok.
    const health = await inject(app, { method: 'GET', url: '/health' });
    expect(health.json()).toMatchObject({
      status: 'ok',
      hook_breakers: [{ hook: 'deadline', state: 'open', failures: 5 }],
    });
  });

  it('dry-runs a hook against a stored event or one written out, writing nothing', async () => {
    const { event: stored } = await ledger.emit(mail('m1', 'anna@accountant.example', 'Invoice 42'));
    await ledger.emit(mail('m2', 'bob@example.com', 'Lunch'));
    await using app = await server();
    const before = await snapshot(dir);

    const fires = await inject(app, {
      method: 'POST',
      url: '/api/hooks/accountant/test',
      payload: { event: stored.id },
    });
    expect(fires.statusCode).toBe(200);
    expect(fires.json()).toMatchObject({
      fire: true,
      fast_path: { passed: true },
      slow_path: { status: 'none' },
      actions: [{ kind: 'notify', summary: 'notify "Your accountant wrote: Invoice 42"', needs_approval: false }],
    });
    const written = await inject(app, {
      method: 'POST',
      url: '/api/hooks/accountant/test',
      payload: { event: { type: 'mail.received', data: { from_address: 'eve@example.com', subject: 'x' } } },
    });
    expect(written.json()).toMatchObject({ fire: false, fast_path: { passed: false } });
    // A payload that breaks its schema has its problem and fires nothing.
    expect(written.json().event.problem).toEqual(expect.any(String));
    const notAsked = await inject(app, {
      method: 'POST',
      url: '/api/hooks/deadline/test',
      payload: { event: stored.id },
    });
    expect(notAsked.json()).toMatchObject({ fire: false, slow_path: { status: 'not asked' } });

    const unknown = await inject(app, {
      method: 'POST',
      url: '/api/hooks/accountant/test',
      payload: { event: 'ev-00000000000000000000' },
    });
    expect(unknown.statusCode).toBe(400);
    expect(unknown.json().error.code).toBe('HOOK_TEST_EVENT_INVALID');

    expect(await snapshot(dir)).toEqual(before);
  });

  it('asks the model only with ask: true, and then writes only the ask cache', async () => {
    await using model = await FakeOpenAiServer.start({
      replies: [{ json: { fire: true, reason: 'it names Friday as the deadline' } }],
    });
    await writeFile(
      path.join(dir, 'config.yaml'),
      `data_dir: ./data\nserver:\n  port: 0\nllms:\n  default:\n    base_url: ${model.url}\n    model: fake-model\n`,
    );
    runtime = await loadRuntime({ installation, configPath: path.join(dir, 'config.yaml'), cwd: dir });
    const { event } = await ledger.emit(mail('m1', 'anna@accountant.example', 'Pay by Friday'));
    await using app = await server();
    const before = await snapshot(dir);
    const notAsked = await inject(app, {
      method: 'POST',
      url: '/api/hooks/deadline/test',
      payload: { event: event.id },
    });
    expect(notAsked.json().slow_path).toEqual({ status: 'not asked' });
    expect(model.requests).toHaveLength(0);
    const asked = await inject(app, {
      method: 'POST',
      url: '/api/hooks/deadline/test',
      payload: { event: event.id, ask: true },
    });
    expect(asked.statusCode).toBe(200);
    expect(asked.json()).toMatchObject({
      fire: true,
      slow_path: { status: 'asked', verdict: { fire: true, reason: 'it names Friday as the deadline', cached: false } },
    });
    expect(model.requests).toHaveLength(1);
    const after = await snapshot(dir);
    const changed = Object.keys(after).filter((file) => after[file] !== before[file]);
    expect(changed).toEqual([expect.stringMatching(/^data\/hooks\/ask-cache\/[^/]+\/ev-[0-9a-f]{20}\.json$/)]);
  });
});

async function readEvents(
  response: Response,
  onEvent: (event: { type: string; id: string; data: never }) => void,
): Promise<void> {
  const reader = (response.body as ReadableStream<Uint8Array>).pipeThrough(new TextDecoderStream()).getReader();
  let buffer = '';
  for (;;) {
    const { value, done } = await reader.read().catch(() => ({ value: undefined, done: true as const }));
    if (done) return;
    buffer += value;
    for (let end = buffer.indexOf('\n\n'); end >= 0; end = buffer.indexOf('\n\n')) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      const type = /^event: (.*)$/m.exec(block)?.[1];
      const data = /^data: (.*)$/m.exec(block)?.[1];
      if (type && data) onEvent({ type, id: /^id: (.*)$/m.exec(block)?.[1] ?? '', data: JSON.parse(data) as never });
    }
  }
}

async function waitFor(condition: () => boolean, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('timed out waiting');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
