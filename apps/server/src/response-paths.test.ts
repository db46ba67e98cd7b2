import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { loadConfig } from '@assistant/config';
import { openFileTaskQueue } from '@assistant/queue';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createServer } from './create-server.ts';
import { dataPaths } from './data-paths.ts';
import type { ServerCatalog } from './server-catalog.ts';

const token = 'test-token-for-response-paths-0123456789ab';
const headers = { authorization: `Bearer ${token}` };

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'assistant-paths-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

const catalog: ServerCatalog = {
  taskTypes: () => ['system.echo', 'greeter.people.check'],
  hasTaskType: (type) => type === 'system.echo' || type === 'greeter.people.check',
  entryTask: () => ({ ok: true, type: 'greeter.people.check', priority: 3, integration: 'friendly', payload: null }),
};

describe('paths and host details in responses', () => {
  it('hole 13: no response names the absolute data directory, the host name or the pid', async () => {
    await writeFile(path.join(dir, 'config.yaml'), 'data_dir: ./data\nserver:\n  port: 0\n');
    const { config } = await loadConfig({ configPath: path.join(dir, 'config.yaml') });
    const queue = await openFileTaskQueue({
      directory: config.paths.queue,
      dataDirectory: config.paths.dataDir,
      settings: config.queue,
    });
    // A done task that a worker on this host, with this pid, ran.
    const done = await queue.enqueue({ type: 'system.echo', source: 'cli' });
    // A failed file that cannot be read as a task.
    const broken = await queue.enqueue({ type: 'system.echo', source: 'cli' });
    if (done.status !== 'enqueued' || broken.status !== 'enqueued') throw new Error('not enqueued');
    const owner = `{id: ${os.hostname()}-${process.pid}-abc, pid: ${process.pid}, host: ${os.hostname()}}`;
    const doneText = await readFile(path.join(config.paths.dataDir, done.location), 'utf8');
    await mkdir(path.join(config.paths.queue, 'done'), { recursive: true });
    await writeFile(
      path.join(path.join(config.paths.queue, 'done'), path.basename(done.location)),
      `${doneText}started_at: 2026-01-01T00:00:00.000Z\nfinished_at: 2026-01-01T00:00:01.000Z\nworker: ${owner}\n` +
        `result: {ok: true}\nhistory:\n  - {attempt: 1, started_at: 2026-01-01T00:00:00.000Z, finished_at: 2026-01-01T00:00:00.500Z, worker: ${os.hostname()}-${process.pid}-abc, error: {type: Error, message: once}}\n`,
    );
    await rm(path.join(config.paths.dataDir, done.location));
    await mkdir(path.join(config.paths.queue, 'failed'), { recursive: true });
    await writeFile(
      path.join(path.join(config.paths.queue, 'failed'), path.basename(broken.location)),
      'attempts: -1\n',
    );
    await rm(path.join(config.paths.dataDir, broken.location));
    await mkdir(path.join(config.paths.notes, 'approvals'), { recursive: true });
    await writeFile(path.join(config.paths.notes, 'approvals/ap-0123456789ab.md'), '---\nid: [unclosed\n---\n');
    await writeFile(path.join(config.paths.notes, 'broken.md'), '---\ntitle: [unclosed\n---\n');

    await using app = createServer({ config, catalog, token });
    await app.ready();
    const responses: { what: string; body: string }[] = [];
    const call = async (method: 'GET' | 'POST', url: string, payload?: unknown) => {
      const response = await app.inject({
        method,
        url,
        headers: { ...headers, ...(payload === undefined ? {} : { 'content-type': 'application/json' }) },
        ...(payload === undefined ? {} : { payload: JSON.stringify(payload) }),
      });
      responses.push({ what: `${method} ${url} ${response.statusCode}`, body: response.body });
      return response;
    };
    const created = await call('POST', '/api/tasks', { type: 'system.echo' });
    expect(created.json().path).toMatch(
      /^queue\/pending\/5_\d{8}T\d{9}Z_[0-9a-z]{26}--[0-9a-f]{16}--system\.echo\.yaml$/,
    );
    const one = await call('GET', `/api/tasks/${created.json().id}`);
    expect(one.json().path).toBe(created.json().path);
    const doneView = await call('GET', `/api/tasks/${done.task.id}`);
    expect(doneView.json().path).toBe(`queue/done/${path.basename(done.location)}`);
    await call('GET', '/api/tasks');
    await call('GET', `/api/tasks/${broken.task.id}`);
    await call('POST', `/api/tasks/${broken.task.id}/retry`);
    await call('POST', `/api/tasks/${done.task.id}/retry`);
    await call('POST', `/api/tasks/${done.task.id}/reroute`);
    const triggered = await call('POST', '/api/integrations/friendly/people/trigger');
    expect(triggered.json().path).toMatch(/^queue\/pending\//);
    await call('GET', '/api/notes');
    await call('GET', '/api/notes/broken.md');
    // The store routes remote workers call: file errors travel as their code, never with the file's absolute path.
    expect((await call('GET', '/api/store/notes/read?path=broken.md')).statusCode).toBe(409);
    expect((await call('POST', '/api/store/notes/create', { path: 'broken.md', data: {} })).statusCode).toBe(409);
    expect((await call('POST', '/api/store/notes/update', { path: 'gone.md', set: { a: 1 } })).statusCode).toBe(404);
    expect((await call('POST', '/api/store/notes/move', { from: 'gone.md', to: 'x.md' })).statusCode).toBe(404);
    expect((await call('GET', '/api/store/notes/read?path=approvals')).statusCode).toBe(400);
    await call('GET', '/api/approvals?status=all');
    await call('POST', '/api/approvals/ap-0123456789ab', { decision: 'approve' });
    await call('GET', '/health');
    await call('GET', '/metrics');
    await call('GET', '/docs/openapi.json');
    await call('GET', '/nope');

    for (const { what, body } of responses) {
      expect(body, what).not.toContain(dir);
      expect(body, what).not.toContain(config.paths.dataDir);
      expect(body, what).not.toContain(`${os.hostname()}-${process.pid}`);
      expect(body, what).not.toMatch(/"(host|hostname|pid)":/);
      expect(body, what).not.toMatch(new RegExp(`\\b${process.pid}\\b`));
      // A short host name (`vm`) also turns up inside ids; a longer one must not appear at all.
      if (os.hostname().length >= 6) expect(body, what).not.toContain(os.hostname());
    }
  });

  it('leaves paths inside note bodies and task payloads as they are, and only whole data-dir paths in errors', async () => {
    await writeFile(path.join(dir, 'config.yaml'), 'data_dir: ./data\nserver:\n  port: 0\n');
    const { config } = await loadConfig({ configPath: path.join(dir, 'config.yaml') });
    const dataDir = config.paths.dataDir;
    // A URL whose path happens to be the data directory's, a sibling whose name starts with it, and the path itself.
    const lookalikes = {
      url: `https://example.com${dataDir}/report.csv`,
      sibling: `${dataDir}2/report.csv`,
      longer: `${dataDir}base`,
      relative: 'see data/report.csv and /data/report.csv',
      own: `${dataDir}/notes/a.md`,
    };
    await mkdir(config.paths.notes, { recursive: true });
    const noteBody = `${Object.values(lookalikes).join('\n')}\n`;
    await writeFile(
      path.join(config.paths.notes, 'links.md'),
      `---\ntitle: links\nurl: ${lookalikes.url}\n---\n${noteBody}`,
    );

    await using app = createServer({ config, catalog, token });
    await app.ready();
    const note = await app.inject({ method: 'GET', url: '/api/notes/links.md', headers });
    expect(note.statusCode).toBe(200);
    expect(note.json()).toMatchObject({ body: noteBody, data: { url: lookalikes.url } });

    const created = await app.inject({
      method: 'POST',
      url: '/api/tasks',
      headers,
      payload: { type: 'system.echo', payload: lookalikes },
    });
    expect(created.statusCode).toBe(201);
    const task = await app.inject({ method: 'GET', url: `/api/tasks/${created.json().id}`, headers });
    expect(task.json().payload).toEqual(lookalikes);
  });

  it('shows the data directory relative in error messages, but only where a whole path names it', () => {
    const dataDir = path.resolve('/srv/assistant/data');
    const paths = dataPaths({ dataDir, queueDir: path.join(dataDir, 'queue') });
    expect(paths.scrub(`cannot read '${path.join(dataDir, 'notes', 'a.md')}'`)).toBe(
      `cannot read '${['notes', 'a.md'].join(path.sep)}'`,
    );
    expect(paths.scrub(`no such folder ${dataDir}`)).toBe('no such folder .');
    for (const untouched of [
      `https://example.com${dataDir}/report.csv`,
      `${dataDir}2/report.csv`,
      `${dataDir}base`,
      `file://${dataDir}/x`,
    ]) {
      expect(paths.scrub(untouched)).toBe(untouched);
    }
    const outside = dataPaths({ dataDir, queueDir: path.resolve('/var/spool/assistant-queue') });
    expect(outside.scrub(`moved ${path.resolve('/var/spool/assistant-queue/done/x.yaml')}`)).toBe(
      `moved queue/${['done', 'x.yaml'].join(path.sep)}`,
    );
  });
});
