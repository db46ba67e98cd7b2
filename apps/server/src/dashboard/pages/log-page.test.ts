import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { loadConfig } from '@assistant/config';
import { FileHumanLog } from '@assistant/notes';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createServer } from '../../create-server.ts';
import { formatLogDate } from '../human-log-view.ts';

const token = 'dashboard-test-token-0123456789abcdefghij';
const authorization = `Bearer ${token}`;

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'assistant-log-page-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function server() {
  await writeFile(path.join(dir, 'config.yaml'), 'data_dir: ./data\nserver:\n  port: 0\n');
  const { config } = await loadConfig({ configPath: path.join(dir, 'config.yaml') });
  const app = createServer({ config, token });
  await app.ready();
  return { app, log: new FileHumanLog({ directory: config.paths.logs }), logs: config.paths.logs };
}

describe('the Log page', () => {
  it("shows today's lines as text, with links to notes and tasks, and a live cursor at the end", async () => {
    const { app, log } = await server();
    await using _app = app;
    await log.write({
      source: 'email/inbox',
      message: 'archived "<script>alert(1)</script>" "><img src=x onerror=alert(1)>',
      reason: 'rule "x"',
      link: 'email/inbox/a b.md',
    });
    await log.write({ source: 'queue', message: 'task failed', link: '01jabcdefghjkmnpqrstvwxyz0' });
    const page = await app.inject({ method: 'GET', url: '/log', headers: { authorization } });
    expect(page.statusCode).toBe(200);
    expect(page.body).not.toContain('<script>alert');
    expect(page.body).not.toContain('<img src=x');
    expect(page.body).toContain('&lt;script&gt;alert(1)&lt;/script&gt;');
    expect(page.body).toContain('href="/notes/email/inbox/a%20b.md"');
    expect(page.body).toContain('href="/tasks/01jabcdefghjkmnpqrstvwxyz0"');
    expect(page.body).toContain('sse-connect="/live?topics=log,approvals"');
    const offset = /hx-get="\/log\/[\d-]+\/after\?offset=(\d+)"/.exec(page.body)?.[1];
    expect(Number(offset)).toBeGreaterThan(0);

    await log.write({ source: 'worker', message: 'one more' });
    const today = formatLogDate(new Date());
    const after = await app.inject({
      method: 'GET',
      url: `/log/${today}/after?offset=${offset}`,
      headers: { authorization, 'hx-request': 'true' },
    });
    expect(after.statusCode).toBe(200);
    expect(after.body).toContain('one more');
    expect(after.body).not.toContain('task failed');
    expect(after.body).toMatch(
      /<li hidden class="log-cursor" hx-get="\/log\/[\d-]+\/after\?offset=\d+" hx-trigger="live-refresh"/,
    );
  });

  it('refuses a date that is not a real day, and anything that looks like a path', async () => {
    const { app } = await server();
    await using _app = app;
    for (const url of [
      '/log/2026-02-30',
      '/log/..%2F..%2Fconfig',
      '/log/2026-11-23%2F..',
      '/log?date=..%2Fx',
      '/log/2026-11-23/after?offset=-1',
      '/log/2026-11-23/after?offset=abc',
      '/log/2026-11-23?before=x',
    ]) {
      const response = await app.inject({ method: 'GET', url, headers: { authorization } });
      expect(response.statusCode, url).toBe(400);
      expect(response.headers['content-type'], url).toContain('text/html');
    }
    const bad = await app.inject({ method: 'GET', url: '/log/2026-02-30', headers: { authorization } });
    expect(bad.body).toContain('Expected a date as YYYY-MM-DD');
    const form = await app.inject({ method: 'GET', url: '/log?date=2026-02-03', headers: { authorization } });
    expect(form.statusCode).toBe(303);
    expect(form.headers.location).toBe('/log/2026-02-03');
  });

  it('pages a large day by byte offsets and stays small, and moves between days that have a log', async () => {
    const { app, logs } = await server();
    await using _app = app;
    await mkdir(logs, { recursive: true });
    const lines = Array.from({ length: 10_000 }, (_, index) => `- 10:00:00 **bench** line ${index} of a busy day\n`);
    await writeFile(path.join(logs, '2026-01-02.md'), lines.join(''));
    await writeFile(path.join(logs, '2026-01-01.md'), '- 09:00:00 **x** first day\n');
    await writeFile(path.join(logs, '2026-01-05.md'), '- 09:00:00 **x** later day\n');
    const page = await app.inject({ method: 'GET', url: '/log/2026-01-02', headers: { authorization } });
    expect(page.statusCode).toBe(200);
    expect(page.body.length).toBeLessThan(100_000);
    expect(page.body).toContain('line 9999 of a busy day');
    expect(page.body).not.toContain('line 9799 of a busy day');
    expect(page.body).not.toContain('sse-connect');
    expect(page.body).toContain('href="/log/2026-01-01" rel="prev"');
    expect(page.body).toContain('href="/log/2026-01-05" rel="next"');
    const earlier = /href="(\/log\/2026-01-02\?before=\d+)">Earlier lines/.exec(page.body)?.[1];
    expect(earlier).toBeDefined();
    const previous = await app.inject({ method: 'GET', url: earlier ?? '', headers: { authorization } });
    expect(previous.body).toContain('line 9799 of a busy day');
    expect(previous.body).not.toContain('line 9800 of a busy day');
    expect(previous.body).toContain('Latest lines');
    // Long lines (escaped markup makes them longer still): fewer per page, the page still small, none lost.
    const long = Array.from({ length: 300 }, (_, index) => `- 10:00:00 **x** long ${index} ${'<&>'.repeat(600)}\n`);
    await writeFile(path.join(logs, '2026-01-03.md'), long.join(''));
    const longPage = await app.inject({ method: 'GET', url: '/log/2026-01-03', headers: { authorization } });
    expect(longPage.body.length).toBeLessThan(100_000);
    expect(longPage.body).toContain('long 299 ');
    const shownFirst = Number(/long (\d+) /.exec(longPage.body)?.[1]);
    expect(shownFirst).toBeGreaterThan(250);
    const longEarlier = /href="(\/log\/2026-01-03\?before=\d+)">Earlier lines/.exec(longPage.body)?.[1] ?? '';
    const longPrevious = await app.inject({ method: 'GET', url: longEarlier, headers: { authorization } });
    expect(longPrevious.body).toContain(`long ${shownFirst - 1} `);
    expect(longPrevious.body).not.toContain(`long ${shownFirst} `);
    const empty = await app.inject({ method: 'GET', url: '/log/2025-12-31', headers: { authorization } });
    expect(empty.body).toContain('Nothing was logged that day.');
  });
});
