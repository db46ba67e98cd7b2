import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { type EventLedger, openEventLedger } from '@assistant/events';
import { type LoadedRuntime, loadRuntime } from '@assistant/integration-host';
import { installation } from '@assistant/process';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createServer } from '../../create-server.ts';
import type { AssistantServer } from '../../server-type.ts';

const token = 'dashboard-test-token-events-0123456789abc';
const authorization = `Bearer ${token}`;
const script = '<script>alert(1)</script>';

let dir: string;
let runtime: LoadedRuntime;
let ledger: EventLedger;

beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'assistant-events-page-'));
  await writeFile(path.join(dir, 'config.yaml'), 'data_dir: ./data\nserver:\n  port: 0\n');
  await mkdir(path.join(dir, 'hooks'));
  await writeFile(
    path.join(dir, 'hooks', 'accountant.yaml'),
    [
      'description: "my accountant <b>wrote</b>"',
      'on: mail.received',
      'when: {from_address: anna@accountant.example}',
      'then:',
      '  - notify: "Your accountant wrote: {{event.data.subject}}"',
      '',
    ].join('\n'),
  );
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

function mail(nativeId: string, from: string, subject: string, causedBy?: string[]) {
  return {
    type: 'mail.received',
    source: 'email:personal',
    nativeId,
    ...(causedBy ? { causedBy } : {}),
    data: {
      instance: 'personal',
      message_id: nativeId,
      from_address: from,
      from_domain: from.split('@')[1] ?? '',
      subject,
    },
  };
}

async function snapshot(root: string): Promise<Record<string, string>> {
  const files: Record<string, string> = {};
  for (const entry of await readdir(root, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile()) continue;
    const file = path.join(entry.parentPath, entry.name);
    files[path.relative(root, file)] = await readFile(file, 'utf8');
  }
  return files;
}

describe('the Events page', () => {
  it('lists events newest first with their data escaped, lineage linked, problems marked, and live updates', async () => {
    const { event: first } = await ledger.emit(mail('m1', 'anna@accountant.example', script));
    await ledger.emit({
      type: 'task.done',
      source: 'queue',
      nativeId: 't1:done',
      causedBy: [first.id, '01jabcdefghjkmnpqrstvwxyz0'],
      data: { task: 't1', task_type: 'system.echo', attempts: 1 },
    });
    await ledger.emit({ type: 'mail.received', source: 'email:personal', nativeId: 'bad', data: { subject: 'odd' } });
    await using app = await server();
    const page = await app.inject({ method: 'GET', url: '/events', headers: { authorization } });
    expect(page.statusCode).toBe(200);
    expect(page.body).not.toContain(script);
    expect(page.body).toContain('&lt;script&gt;alert(1)&lt;/script&gt;');
    // Newest first: the broken mail, the task, then the first mail.
    const order = [...page.body.matchAll(/<li class="event[^"]*" id="(ev-[0-9a-f]{20})"/g)].map((match) => match[1]);
    expect(order).toHaveLength(3);
    expect(order[2]).toBe(first.id);
    expect(page.body).toContain('<li class="event problem"');
    expect(page.body).toContain('problem: ');
    expect(page.body).toContain(`href="/events/${first.id}"`);
    expect(page.body).toContain('href="/tasks/01jabcdefghjkmnpqrstvwxyz0"');
    expect(page.body).toContain('sse-swap="ledger-event"');
    expect(page.body).toContain('href="/events"');
    expect(page.body).toMatch(/<a href="\/events"[^>]*aria-current="page"/);
    expect(page.body).toContain('href="/hooks"');

    const filtered = await app.inject({
      method: 'GET',
      url: '/events?type=task.done&since=1h',
      headers: { authorization },
    });
    expect([...filtered.body.matchAll(/<li class="event/g)]).toHaveLength(1);
    const bad = await app.inject({ method: 'GET', url: '/events?since=whenever', headers: { authorization } });
    expect(bad.statusCode).toBe(400);
    expect(bad.body).toContain('whenever');

    const one = await app.inject({ method: 'GET', url: `/events/${first.id}`, headers: { authorization } });
    expect(one.statusCode).toBe(200);
    expect(one.body).not.toContain(script);
    expect(one.body).toContain('&lt;script&gt;');

    // Live: an event appended while the page's stream is open arrives as a row, escaped.
    const address = await app.listen({ host: '127.0.0.1', port: 0 });
    const controller = new AbortController();
    const from = await ledger.end();
    const live = await fetch(`${address}/live?topics=approvals&events=mail.received@${from}`, {
      headers: { authorization },
      signal: controller.signal,
    });
    expect(live.status).toBe(200);
    let received = '';
    const reading = (async () => {
      const reader = (live.body as ReadableStream<Uint8Array>).pipeThrough(new TextDecoderStream()).getReader();
      for (;;) {
        const { value, done } = await reader.read().catch(() => ({ value: undefined, done: true as const }));
        if (done) return;
        received += value;
      }
    })();
    // The topic follows from the cursor the page was rendered from: one event appended now arrives as a row.
    await ledger.emit(mail('live-0', 'bob@example.com', `${script} live`));
    const deadline = Date.now() + 15_000;
    while (!received.includes('event: ledger-event')) {
      if (Date.now() > deadline) throw new Error(`no live event; received: ${received}`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    controller.abort();
    await reading;
    expect(received).not.toContain(script);
    expect(received).toContain('&lt;script&gt;alert(1)&lt;/script&gt; live');
  });

  it('pages back through older events', async () => {
    for (let index = 0; index < 55; index++) {
      await ledger.emit({
        type: 'task.done',
        source: 'queue',
        nativeId: `t${index}`,
        data: { task: `t${index}`, task_type: `n.${index}`, attempts: 1 },
      });
    }
    await using app = await server();
    const page = await app.inject({ method: 'GET', url: '/events', headers: { authorization } });
    expect([...page.body.matchAll(/<li class="event/g)]).toHaveLength(50);
    expect(page.body).toContain('n.54&quot;');
    expect(page.body).not.toContain('n.4&quot;');
    const older = /href="(\/events\?[^"]*before=[^"]+)"/.exec(page.body)?.[1]?.replaceAll('&amp;', '&');
    expect(older).toBeDefined();
    const next = await app.inject({ method: 'GET', url: older ?? '', headers: { authorization } });
    expect([...next.body.matchAll(/<li class="event/g)]).toHaveLength(5);
    expect(next.body).toContain('n.0&quot;');
    expect(next.body).toContain('n.4&quot;');
    expect(next.body).not.toContain('n.5&quot;');
    expect(next.body).not.toContain('sse-swap');
  });
});

describe('the Hooks page', () => {
  it('lists the hooks and explains one against a recent event of its type, escaped, writing nothing', async () => {
    const { event } = await ledger.emit(mail('m1', 'anna@accountant.example', script));
    await mkdir(path.join(runtime.config.paths.dataDir, 'hooks'), { recursive: true });
    await writeFile(
      path.join(runtime.config.paths.dataDir, 'hooks', 'breakers.json'),
      JSON.stringify({ accountant: { failures: 5, opened_at: new Date().toISOString() } }),
    );
    await using app = await server();
    const list = await app.inject({ method: 'GET', url: '/hooks', headers: { authorization } });
    expect(list.statusCode).toBe(200);
    expect(list.body).toContain('href="/hooks/accountant"');
    expect(list.body).toMatch(/<strong class="bad">open<\/strong> after 5 errors/);

    // The overview's health lists the open hook breaker beside the task types' breakers.
    const overview = await app.inject({ method: 'GET', url: '/', headers: { authorization } });
    expect(overview.body).toContain('<a href="/hooks/accountant">hook accountant</a>');

    const before = await snapshot(dir);
    const one = await app.inject({ method: 'GET', url: '/hooks/accountant', headers: { authorization } });
    expect(one.statusCode).toBe(200);
    expect(one.body).not.toContain(script);
    expect(one.body).not.toContain('<b>wrote</b>');
    expect(one.body).toContain('Why (a dry run)');
    expect(one.body).toContain(`value="${event.id}" selected`);
    expect(one.body).toContain('it fires');
    expect(one.body).toContain('holds: <code>event type is mail.received</code>');
    expect(one.body).toContain('Your accountant wrote: &lt;script&gt;');
    expect(one.body).toContain('runs without approval');
    expect(await snapshot(dir)).toEqual(before);

    const missing = await app.inject({ method: 'GET', url: '/hooks/nobody', headers: { authorization } });
    expect(missing.statusCode).toBe(404);
  });
});
