import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { type LoadedConfig, loadConfig } from '@assistant/config';
import { FileNoteStore } from '@assistant/notes';
import { openFileTaskQueue, type TaskQueue } from '@assistant/queue';
import type { InjectOptions } from 'fastify';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createServer } from '../create-server.ts';
import type { AssistantServer } from '../server-type.ts';

const token = 'test-token-for-the-workflow-routes-0123456789';
const authorization = `Bearer ${token}`;

function inject(app: AssistantServer, options: InjectOptions) {
  return app.inject({ ...options, headers: { authorization, ...options.headers } });
}

let dir: string;
let config: LoadedConfig;
let queue: TaskQueue;

beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'assistant-workflow-routes-'));
  await writeFile(path.join(dir, 'config.yaml'), 'data_dir: ./data\nserver:\n  port: 0\n');
  await mkdir(path.join(dir, 'agents'));
  await mkdir(path.join(dir, 'personas'));
  await writeFile(path.join(dir, 'personas', 'writer.md'), '---\ntools: {allow: [search_notes]}\n---\nYou write.\n');
  await writeFile(
    path.join(dir, 'agents', 'review.yaml'),
    'topology: pipeline\ndescription: write it\nsteps:\n  - persona: writer\n    task: "Write {{input}}"\n',
  );
  await writeFile(path.join(dir, 'agents', 'broken.yaml'), 'topology: mesh\nagents: [writter]\n');
  config = (await loadConfig({ configPath: path.join(dir, 'config.yaml') })).config;
  queue = await openFileTaskQueue({ directory: config.paths.queue, dataDirectory: config.paths.dataDir });
});
afterEach(async () => {
  await queue.close();
  await rm(dir, { recursive: true, force: true });
});

async function server() {
  const app = createServer({ config, token });
  await app.ready();
  return app;
}

describe('/api/workflows', () => {
  it('lists the workflows that load and the problems of those that do not', async () => {
    await using app = await server();
    const listed = await inject(app, { method: 'GET', url: '/api/workflows' });
    expect(listed.statusCode).toBe(200);
    expect(listed.json()).toEqual({
      workflows: [
        {
          name: 'review',
          topology: 'pipeline',
          file: 'agents/review.yaml',
          description: 'write it',
          steps: [{ persona: 'writer', task: 'Write {{input}}' }],
        },
      ],
      problems: [
        expect.objectContaining({
          file: 'agents/broken.yaml',
          line: 2,
          key: 'agents[0]',
          message: 'unknown persona `writter`',
          workflow: 'broken',
        }),
      ],
    });
  });

  it('starts a run: 202 with the run and the system.workflow task carrying it', async () => {
    await using app = await server();
    const started = await inject(app, {
      method: 'POST',
      url: '/api/workflows/review/runs',
      payload: { input: 'the history of tea' },
    });
    expect(started.statusCode).toBe(202);
    const { run, task } = started.json();
    expect(run).toMatch(/^run-\d{8}-[a-z0-9]+$/);
    const record = await queue.get(task);
    expect(record?.task).toMatchObject({
      type: 'system.workflow',
      source: 'api',
      payload: { workflow: 'review', input: 'the history of tea', run },
    });
  });

  it('refuses an unknown workflow (404), one with problems (409) and a body without input (400)', async () => {
    await using app = await server();
    const unknown = await inject(app, { method: 'POST', url: '/api/workflows/nope/runs', payload: { input: 'x' } });
    expect(unknown.statusCode).toBe(404);
    expect(unknown.json().error).toMatchObject({ code: 'WORKFLOW_UNKNOWN', message: 'no workflow "nope"' });
    const broken = await inject(app, { method: 'POST', url: '/api/workflows/broken/runs', payload: { input: 'x' } });
    expect(broken.statusCode).toBe(409);
    expect(broken.json().error.code).toBe('WORKFLOW_INVALID');
    expect(broken.json().error.message).toContain('agents/broken.yaml:2:10: agents[0]: unknown persona `writter`');
    const empty = await inject(app, { method: 'POST', url: '/api/workflows/review/runs', payload: {} });
    expect(empty.statusCode).toBe(400);
    expect(await queue.list({ type: 'system.workflow' })).toEqual([]);
  });

  it('needs the API token on every route', async () => {
    await using app = await server();
    for (const [method, url] of [
      ['GET', '/api/workflows'],
      ['POST', '/api/workflows/review/runs'],
      ['GET', '/api/workflows/runs/run-20261128-abcdef'],
    ] as const) {
      const response = await app.inject({ method, url, ...(method === 'POST' ? { payload: { input: 'x' } } : {}) });
      expect({ url, status: response.statusCode }).toEqual({ url, status: 401 });
    }
    expect(await queue.list({ type: 'system.workflow' })).toEqual([]);
  });

  it("answers a run's note, and 404 before there is one", async () => {
    await using app = await server();
    const missing = await inject(app, { method: 'GET', url: '/api/workflows/runs/run-20261128-abcdef' });
    expect(missing.statusCode).toBe(404);
    const notes = new FileNoteStore({ root: config.paths.notes });
    await notes.create('agents/runs/run-20261128-abcdef.md', {
      data: { workflow: 'review', status: 'done', tasks: ['t1', 't2'] },
      body: '# review\n\nDone.\n\n## Output\n\nTea came from China.\n',
    });
    const shown = await inject(app, { method: 'GET', url: '/api/workflows/runs/run-20261128-abcdef' });
    expect(shown.statusCode).toBe(200);
    expect(shown.json()).toEqual({
      path: 'agents/runs/run-20261128-abcdef.md',
      data: { workflow: 'review', status: 'done', tasks: ['t1', 't2'] },
      output: 'Tea came from China.',
    });
    const bad = await inject(app, { method: 'GET', url: '/api/workflows/runs/..%2Fsecrets' });
    expect(bad.statusCode).toBe(400);
  });
});
