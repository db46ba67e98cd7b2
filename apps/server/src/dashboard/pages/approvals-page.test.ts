import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createHookApprovalRequest, enqueueActions, explainItem, readApproval } from '@assistant/actions';
import {
  memo,
  mustShow,
  serviceApprovalId,
  toolCallApprovalId,
  writeSurfaceApprovals,
} from '@assistant/actions/testing';
import { loadRuntime } from '@assistant/integration-host';
import { FileNoteStore } from '@assistant/notes';
import { installation } from '@assistant/process';
import { openFileTaskQueue } from '@assistant/queue';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createServer } from '../../create-server.ts';
import type { DashboardContext } from '../dashboard-context.ts';
import { renderWhy } from '../why.ts';

const token = 'dashboard-approvals-token-0123456789abcdef';
const headers = { authorization: `Bearer ${token}` };
const form = { ...headers, 'content-type': 'application/x-www-form-urlencoded' };
const greeter = fileURLToPath(new URL('../../../../../tests/fixtures/integrations/custom/greeter', import.meta.url));
const evil = '<script>alert(1)</script>"><img src=x onerror=alert(2)>';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'assistant-dashboard-approvals-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** A server over a greeter instance whose rule asks before sending a card, and one item note that asked. */
async function setup() {
  await writeFile(
    path.join(dir, 'config.yaml'),
    `data_dir: ./data
server: {port: 0}
integration_dirs: [${JSON.stringify(greeter)}]
llms:
  default: {base_url: "http://127.0.0.1:11434/v1", model: m}
integrations:
  - type: greeter
    name: friendly
    platforms:
      cards:
        automations:
          - name: cards for close people
            when: {close: ">= 0.8"}
            then: send_card
            approval: required
`,
  );
  const { config, registry } = await loadRuntime({ installation, configPath: path.join(dir, 'config.yaml'), cwd: dir });
  const notes = new FileNoteStore({ root: config.paths.notes });
  const queue = await openFileTaskQueue({ directory: config.paths.queue, dataDirectory: config.paths.dataDir });
  const item = 'greeter/friendly/ada.md';
  await notes.create(item, { data: { name: evil, is_friend: false, classifications: { close: 0.93 } } });
  // The matches the evaluate stage would enqueue: explainItem is evaluateRules over the worker's rules and facts.
  const explained = await explainItem({ registry, config, notes, notePath: item });
  const result = await enqueueActions({
    notes,
    queue,
    instance: 'friendly',
    domain: 'greeter',
    platform: 'cards',
    notePath: item,
    title: evil,
    matches: explained.rules.flatMap((rule) => (rule.match ? [rule.match] : [])),
    approvalExpiresMs: 3_600_000,
  });
  const id = result.approvals[0]?.id ?? '';
  const app = createServer({ config, token, registry });
  await app.ready();
  return { app, notes, queue, id, item, config, registry };
}

describe('the Approvals page', () => {
  it("shows what each request will do in full: a 5,000-character argument to its last line, a service's inputs (issue 30)", async () => {
    const { app, notes } = await setup();
    await using _app = app;
    const { toolCall, service } = await writeSurfaceApprovals(notes);
    const escaped = (text: string) =>
      text
        .replaceAll('&', '&amp;')
        .replaceAll('<', '&lt;')
        .replaceAll('>', '&gt;')
        .replaceAll('"', '&quot;')
        .replaceAll("'", '&#39;');
    const page = await app.inject({ method: 'GET', url: '/approvals', headers });
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain(escaped(JSON.stringify(memo)));
    for (const line of mustShow) expect(page.body).toContain(escaped(line));
    // Each rendering whole, in one block; only the one-line heading of the long call says how much it leaves out.
    for (const request of [toolCall, service]) {
      expect(page.body).toContain(`<pre class="approval-rendering">${escaped(request.rendering ?? '')}</pre>`);
    }
    expect(page.body).toMatch(/call mail__send \{[^<]*… \(\d+ more characters: open the request\)/);
    // Each request on a page of its own, where the surfaces that cannot show it all link to.
    for (const id of [toolCallApprovalId, serviceApprovalId]) {
      const one = await app.inject({ method: 'GET', url: `/approvals/${id}`, headers });
      expect(one.statusCode).toBe(200);
      expect(one.body).toContain(`id="${id}"`);
    }
    const call = await app.inject({ method: 'GET', url: `/approvals/${toolCallApprovalId}`, headers });
    expect(call.body).toContain(escaped(JSON.stringify(memo)));
    expect((await app.inject({ method: 'GET', url: '/approvals/ap-000000000000', headers })).statusCode).toBe(404);
  });

  it("shows a hook's request with the tasks it will enqueue, and approving it enqueues them (issue 33)", async () => {
    const { app, notes, queue } = await setup();
    await using _app = app;
    const { id } = await createHookApprovalRequest({
      notes,
      firing: {
        hook: 'merge-when-green',
        version: '0123456789abcdef',
        event: 'ev-00000000000000000001',
        event_type: 'task.done',
        firing: 'f1',
        tasks: [
          {
            summary: `enqueue system.echo {"said":"${evil}"}`,
            tier: 'irreversible',
            type: 'system.echo',
            payload: { said: evil },
          },
        ],
      },
      provenance: 'llm',
      reason: 'the model said the build is green',
      expiresMs: 3_600_000,
      nowMs: Date.now(),
    });
    const page = await app.inject({ method: 'GET', url: `/approvals/${id}`, headers });
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain('hook “merge-when-green”');
    expect(page.body).toContain('enqueue system.echo {&quot;said&quot;:&quot;&lt;script&gt;alert(1)');
    expect(page.body).not.toContain('<script>alert(1)');
    const approved = await app.inject({ method: 'POST', url: `/approvals/${id}/approve`, headers: form, payload: '' });
    expect(approved.statusCode).toBeLessThan(400);
    const request = await readApproval(notes, id);
    expect(request).toMatchObject({ status: 'approved', tasks: [expect.any(String)] });
    expect(await queue.get(request?.tasks?.[0] ?? '')).toMatchObject({
      task: { type: 'system.echo', payload: { said: evil } },
    });
  });

  it('refuses to approve a request made before approvals were bound to what they show, and says why', async () => {
    const { app, notes, id } = await setup();
    await using _app = app;
    await notes.update(`approvals/${id}.md`, { set: { rendering: undefined, digest: undefined } });
    const page = await app.inject({ method: 'GET', url: `/approvals/${id}`, headers });
    expect(page.body).toContain('Made before approvals were bound to what they show: it cannot be approved.');
    const approved = await app.inject({ method: 'POST', url: `/approvals/${id}/approve`, headers: form, payload: '' });
    expect(approved.statusCode).toBe(409);
    expect(approved.body).toContain('was made before approvals were bound to what they show');
    expect(await readApproval(notes, id)).toMatchObject({ status: 'pending' });
  });

  it('lists a pending request with what, which item and why, escaping its text, and decides it once', async () => {
    const { app, notes, queue, id } = await setup();
    await using _app = app;
    const page = await app.inject({ method: 'GET', url: '/approvals', headers });
    expect(page.statusCode).toBe(200);
    const body = page.body;
    expect(body).toContain(`id="${id}"`);
    expect(body).toContain('href="/notes/greeter/friendly/ada.md"');
    expect(body).toContain('“cards for close people”');
    expect(body).toContain('close &gt;= 0.8');
    expect(body).toContain('<code>close</code>: 0.93');
    expect(body).toContain('&lt;script&gt;alert(1)&lt;/script&gt;&quot;&gt;&lt;img src=x onerror=alert(2)&gt;');
    expect(body).not.toContain('<script>alert(1)');
    expect(body).not.toContain('<img src=x');
    expect(body).toContain(`action="/approvals/${id}/approve"`);
    expect(body).toContain('hx-trigger="live-refresh" data-live-events="approvals"');

    // The htmx refresh is the list alone.
    const fragment = await app.inject({
      method: 'GET',
      url: '/approvals',
      headers: { ...headers, 'hx-request': 'true' },
    });
    expect(fragment.body.startsWith('<div id="approvals-list"')).toBe(true);
    expect((await app.inject({ method: 'GET', url: '/approvals?status=nope', headers })).statusCode).toBe(400);

    const approved = await app.inject({ method: 'POST', url: `/approvals/${id}/approve`, headers: form, payload: '' });
    expect(approved.statusCode).toBe(303);
    expect(approved.headers.location).toBe(`/approvals?decided=${id}`);
    expect(await readApproval(notes, id)).toMatchObject({ status: 'approved', decided_by: 'dashboard' });
    expect(await queue.list({ state: 'pending' })).toHaveLength(1);
    const again = await app.inject({ method: 'POST', url: `/approvals/${id}/approve`, headers: form, payload: '' });
    expect(again.statusCode).toBe(409);
    expect(again.body).toContain('was approved already');
    const rejectLate = await app.inject({ method: 'POST', url: `/approvals/${id}/reject`, headers: form, payload: '' });
    expect(rejectLate.statusCode).toBe(409);
    expect(await queue.list({ state: 'pending' })).toHaveLength(1);

    const after = await app.inject({ method: 'GET', url: `/approvals?decided=${id}`, headers });
    expect(after.body).toMatch(new RegExp(`${id} approved by dashboard: send_card enqueued \\(<a href="/tasks/`));
    expect(after.body).toContain('No pending approval requests.');
    const all = await app.inject({ method: 'GET', url: '/approvals?status=approved', headers });
    expect(all.body).toContain(`id="${id}"`);
    expect(all.body).not.toContain(`action="/approvals/${id}/approve"`);
    expect(
      (await app.inject({ method: 'POST', url: '/approvals/nope/approve', headers: form, payload: '' })).statusCode,
    ).toBe(400);
  });

  it('decides from an inline form (`decision` field), going back only to a page of this server', async () => {
    const { app, notes, id } = await setup();
    await using _app = app;
    const bad = await app.inject({ method: 'POST', url: `/approvals/${id}`, headers: form, payload: 'decision=maybe' });
    expect(bad.statusCode).toBe(400);
    expect((await readApproval(notes, id))?.status).toBe('pending');
    const decided = await app.inject({
      method: 'POST',
      url: `/approvals/${id}`,
      headers: { ...form, host: 'localhost', referer: 'https://evil.test/chat/x' },
      payload: 'decision=reject',
    });
    expect(decided.statusCode).toBe(303);
    expect(decided.headers.location).toBe(`/approvals?decided=${id}`);
    expect(await readApproval(notes, id)).toMatchObject({ status: 'rejected', decided_by: 'dashboard' });
    const again = await app.inject({
      method: 'POST',
      url: `/approvals/${id}`,
      headers: { ...form, host: 'localhost', referer: 'http://localhost/chat/notifications' },
      payload: 'decision=approve',
    });
    expect(again.statusCode).toBe(409);
    expect((await readApproval(notes, id))?.status).toBe('rejected');
  });

  it('lists broken request notes with the problem', async () => {
    const { app, notes } = await setup();
    await using _app = app;
    await notes.create('approvals/ap-000000000000.md', { data: { id: 'ap-000000000000', status: 'pending' } });
    const page = await app.inject({ method: 'GET', url: '/approvals', headers });
    expect(page.body).toContain('Request notes that cannot be read');
    expect(page.body).toContain('approvals/ap-000000000000.md: not an approval request');
  });
});

describe('renderWhy', () => {
  it('explains an item with escaped values, and is undefined for a note that is not an item', async () => {
    const { app, notes, config, registry, id, item } = await setup();
    await using _app = app;
    await notes.create('journal/day.md', { data: {} });
    const context = { notes, config, registry } as unknown as DashboardContext;
    const why = String(await renderWhy(context, item));
    expect(why).toContain('<h2 id="why-heading">Why</h2>');
    expect(why).toContain('<code>close &gt;= 0.8</code>');
    expect(why).toContain('saw 0.93');
    expect(why).toContain(`waiting for approval ${id}`);
    expect(why).toContain(`<a href="/approvals?status=all#${id}">${id}</a>: <strong>pending</strong>`);
    await notes.update(item, { set: { classifications: { close: evil } } });
    const hostile = String(await renderWhy(context, item));
    expect(hostile).toContain('saw &quot;&lt;script&gt;alert(1)');
    expect(hostile).not.toContain('<script>alert');
    expect(await renderWhy(context, 'journal/day.md')).toBeUndefined();
    expect(await renderWhy(context, 'greeter/friendly/nobody.md')).toBeUndefined();
  });
});
