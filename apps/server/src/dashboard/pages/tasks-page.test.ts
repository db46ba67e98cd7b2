import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { loadConfig } from '@assistant/config';
import { clearSecretValues, registerSecretValue } from '@assistant/errors';
import { openFileTaskQueue } from '@assistant/queue';
import { ControlFiles } from '@assistant/steering';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createServer } from '../../create-server.ts';
import { clarificationsOf, parseTaskTopicParam } from '../task-steps.ts';
import { activeWorker, jsonShownLimit } from './task-page.ts';
import { parseTaskFilters, scanFileLimit, tasksPerPage } from './tasks-page.ts';

const token = 'dashboard-tasks-test-token-0123456789abcdef';
const bearer = { authorization: `Bearer ${token}` };
const xss = '"><img src=x onerror=alert(1)><script>alert(2)</script>';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'assistant-dashboard-tasks-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function server() {
  await writeFile(path.join(dir, 'config.yaml'), 'data_dir: ./data\nserver:\n  port: 0\n');
  const { config } = await loadConfig({ configPath: path.join(dir, 'config.yaml') });
  const catalog = {
    taskTypes: () => ['system.echo', 'system.sleep', 'system.agent'],
    hasTaskType: (type: string) => type.startsWith('system.'),
    entryTask: () => ({ ok: false as const, status: 404 as const, message: 'none' }),
  };
  const app = createServer({ config, token, catalog });
  await app.ready();
  const enqueue = async (type: string, payload: unknown) => {
    const response = await app.inject({
      method: 'POST',
      url: '/api/tasks',
      headers: bearer,
      payload: { type, payload },
    });
    expect(response.statusCode, response.body).toBe(201);
    return (response.json() as { id: string }).id;
  };
  const get = (url: string, headers: Record<string, string> = {}) =>
    app.inject({ method: 'GET', url, headers: { ...bearer, ...headers } });
  return Object.assign(app, {
    enqueue,
    get,
    controlRoot: config.paths.control,
    queuePath: config.paths.queue,
    dataPath: config.paths.dataDir,
  });
}

describe('a task page with sub-agents', () => {
  it('shows the tree of agents the task spawned, linked to their tasks, their text escaped', async () => {
    await using app = await server();
    const root = await app.enqueue('system.echo', {});
    const child = await app.enqueue('system.echo', {});
    const grandchild = await app.enqueue('system.echo', {});
    const write = async (parent: string, id: string, task: string, depth: number, persona: string, result?: string) => {
      const folder = path.join(app.dataPath, 'agents', parent);
      await mkdir(path.join(folder, 'children'), { recursive: true });
      await writeFile(
        path.join(folder, 'children', `${id}.json`),
        JSON.stringify({ id, persona, task: `${xss} ${persona}`, depth, task_id: task }),
      );
      if (result !== undefined) {
        await mkdir(path.join(folder, 'inbox'), { recursive: true });
        await writeFile(path.join(folder, 'inbox', `${id}.json`), JSON.stringify({ id, status: result, steps: 2 }));
      }
    };
    await write(root, 'ag-0000000000000001', child, 1, 'researcher', 'completed');
    await write(child, 'ag-0000000000000002', grandchild, 2, 'fetcher');
    const page = await app.get(`/tasks/${root}`);
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain('Sub-agents');
    expect(page.body).toContain(`href="/tasks/${child}"`);
    expect(page.body).toContain(`href="/tasks/${grandchild}"`);
    expect(page.body).toMatch(/researcher<\/strong>[\s\S]*completed[\s\S]*fetcher<\/strong>[\s\S]*running/);
    expect(page.body).not.toContain('<img src=x');
    // A task without children has no such section.
    expect((await app.get(`/tasks/${grandchild}`)).body).not.toContain('Sub-agents');
  });
});

describe('the Tasks page', () => {
  it('lists, filters by type and text, escapes what tasks hold, and pages by 50', async () => {
    await using app = await server();
    const hostile = await app.enqueue('system.echo', { subject: xss });
    for (let index = 0; index < tasksPerPage + 5; index += 1) await app.enqueue('system.sleep', { ms: index });
    const page = await app.get('/tasks');
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain('pending <strong>56</strong>');
    expect(page.body).toContain('Tasks 1–50 of 56.');
    expect(page.body).toContain('href="/tasks?start=50"');
    expect(page.body).toContain('sse-connect="/live?topics=queue,approvals"');
    const second = await app.get('/tasks?start=50');
    expect(second.body).toContain('Tasks 51–56 of 56.');
    expect(second.body).toContain('href="/tasks" rel="prev"');

    const echo = await app.get('/tasks?type=system.echo');
    expect(echo.body).toContain(`href="/tasks/${hostile}"`);
    expect(echo.body).not.toContain('system.sleep</code>');

    const text = await app.get(`/tasks?q=${encodeURIComponent('onerror')}`);
    expect(text.body).toContain(`href="/tasks/${hostile}"`);
    expect(text.body).toContain('1 match(es)');
    const wildcard = await app.get('/tasks?type=system.*&state=pending');
    expect(wildcard.body).toContain('all <strong>56</strong>');

    const task = await app.get(`/tasks/${hostile}`);
    expect(task.statusCode).toBe(200);
    expect(task.body).not.toContain('<script>alert');
    expect(task.body).not.toContain('<img src=x');
    expect(task.body).toContain('&lt;script&gt;alert(2)&lt;/script&gt;');
    expect(task.body).toContain(`queue/pending/`);
  });

  it('answers htmx with the results fragment and shows bad filters instead of failing', async () => {
    await using app = await server();
    await app.enqueue('system.echo', { n: 1 });
    const fragment = await app.get('/tasks?state=pending', { 'hx-request': 'true' });
    expect(fragment.body.startsWith('<div id="task-results"')).toBe(true);
    expect(fragment.body).not.toContain('<html');
    const bad = await app.get(`/tasks?state=nonsense&type=${encodeURIComponent('<b>')}&start=x`);
    expect(bad.statusCode).toBe(200);
    expect(bad.body).toContain('Some filters were ignored');
    expect(bad.body).toContain('state must be one of all, pending, active, done, failed');
    expect(bad.body).not.toContain('<b>');
  });

  it('404s an unknown or malformed task id, and refuses retry of a task that has not failed', async () => {
    await using app = await server();
    const id = await app.enqueue('system.echo', { n: 1 });
    expect((await app.get('/tasks/0000000000000000000000000z')).statusCode).toBe(404);
    const malformed = await app.get('/tasks/..%2F..%2Fetc');
    expect(malformed.statusCode).toBe(404);
    expect(malformed.body).toContain('not a task id');
    const retry = await app.inject({ method: 'POST', url: `/tasks/${id}/retry`, headers: bearer });
    expect(retry.statusCode).toBe(409);
    expect(retry.headers['content-type']).toContain('text/html');
    const reroute = await app.inject({ method: 'POST', url: `/tasks/${id}/reroute`, headers: bearer });
    expect(reroute.statusCode).toBe(409);
    const page = await app.get(`/tasks/${id}`);
    expect(page.body).not.toContain('Retry this task');
    expect(page.body).not.toContain('Route the result again');
    // An echo task is no agent: no steering buttons.
    expect(page.body).not.toContain('>Pause</button>');
  });

  it('shows an agent task’s events, its open clarification and the steering buttons', async () => {
    await using app = await server();
    const id = await app.enqueue('system.agent', { prompt: 'x' });
    const files = new ControlFiles({ root: app.controlRoot, taskId: id });
    await files.event({ type: 'step-finished', step: 1, toolCalls: 1, lineage: ['system.agent'] });
    await files.event({ type: 'clarification', id: 'c1', question: `Which one? ${xss}`, lineage: ['system.agent'] });
    await files.event({ type: 'clarification', id: 'c2', question: 'Done already?', lineage: ['system.agent'] });
    await files.event({ type: 'steering', action: 'answer', message: 'yes', clarification_id: 'c2' });
    const page = await app.get(`/tasks/${id}`);
    expect(page.body).toContain('data-event="step-finished"');
    expect(page.body).toContain('name="clarification_id" value="c1"');
    expect(page.body).not.toContain('value="c2"');
    expect(page.body).toContain('>Pause</button>');
    expect(page.body).toMatch(new RegExp(`sse-connect="/live\\?topics=queue,approvals&amp;task=${id}%40\\d+"`));
    expect(page.body).not.toContain('<img src=x');
    const bad = await app.inject({
      method: 'POST',
      url: `/tasks/${id}/steer`,
      headers: { ...bearer, 'content-type': 'application/x-www-form-urlencoded' },
      payload: 'action=interject&message=',
    });
    expect(bad.statusCode).toBe(400);
    expect(bad.body).toContain('interject needs a message');
  });

  it('marks a done agent task whose result says it failed, in the list and on its page', async () => {
    await using app = await server();
    const id = await app.enqueue('system.agent', { prompt: 'hello' });
    const queue = await openFileTaskQueue({ directory: app.queuePath, dataDirectory: app.dataPath });
    const consumer = queue.consumer();
    await consumer.start();
    const claimed = await consumer.claim();
    expect(claimed?.id).toBe(id);
    if (claimed) await consumer.complete(claimed, { status: 'failed', reason: 'Connection error', steps: 0 });
    await consumer.close();
    await queue.close();
    const list = await app.get('/tasks?state=done');
    expect(list.body).toContain('agent failed');
    expect(list.body).toContain('Connection error');
    const page = await app.get(`/tasks/${id}`);
    expect(page.body).toContain('agent failed');
  });

  it('shows no loaded secret a payload holds', async () => {
    await using app = await server();
    const secret = 'sk-dashboard-secret-0123456789';
    registerSecretValue(secret);
    try {
      const id = await app.enqueue('system.echo', { note: `the key is ${secret}` });
      const page = await app.get(`/tasks/${id}`);
      expect(page.statusCode).toBe(200);
      expect(page.body).toContain('the key is');
      expect(page.body).not.toContain(secret);
    } finally {
      clearSecretValues();
    }
  });

  it('cuts a huge payload with a link to the whole', async () => {
    await using app = await server();
    const id = await app.enqueue('system.echo', { big: 'x'.repeat(jsonShownLimit + 10) });
    const page = await app.get(`/tasks/${id}`);
    expect(page.body).toContain(`href="/tasks/${id}?full=1"`);
    expect(page.body.length).toBeLessThan(100_000);
    const full = await app.get(`/tasks/${id}?full=1`);
    expect(full.body).toContain('x'.repeat(jsonShownLimit + 10));
  });
});

describe('task page helpers', () => {
  it('parses filters and the live topic parameter', () => {
    const query = (values: Record<string, string>) => (name: string) => values[name];
    expect(parseTaskFilters(query({ state: 'all', type: 'email.*', start: '50' })).filters).toMatchObject({
      state: undefined,
      type: 'email.*',
      start: 50,
    });
    expect(parseTaskFilters(query({ type: 'Email Inbox' })).problems).toHaveLength(1);
    expect(parseTaskTopicParam('0000000000000000000000000z@123')).toEqual({
      id: '0000000000000000000000000z',
      offset: 123,
    });
    expect(parseTaskTopicParam('../x')).toBeUndefined();
    expect(activeWorker('queue/active/5_x_0000000000000000000000000z--f--system.echo@host-12-ab.yaml')).toBe(
      'host-12-ab',
    );
    expect(activeWorker('queue/pending/5_x.yaml')).toBeUndefined();
    expect(scanFileLimit).toBe(2_000);
  });

  it('marks clarifications answered by id', () => {
    expect(
      clarificationsOf([
        { type: 'clarification', at: '', id: 'a', question: 'q1' },
        { type: 'clarification', at: '', id: 'b', question: 'q2' },
        { type: 'steering', at: '', action: 'answer', clarification_id: 'a' },
      ]),
    ).toEqual([
      { id: 'a', question: 'q1', answered: true },
      { id: 'b', question: 'q2', answered: false },
    ]);
  });
});
