// Decision 0023: the login cookie reaches every port of the host, so it alone must open nothing. These tests replay it
// as another local user's server on another port would (the cookie, and any header it likes) and check that the
// replay gets no page data, no CSRF token and cannot approve, while the owner's requests (with the origin key from
// the login's answer) work; and that a junk cookie of our name on a longer path does not lock the owner out.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { enqueueActions, explainItem, readApproval } from '@assistant/actions';
import { loadRuntime } from '@assistant/integration-host';
import { FileNoteStore } from '@assistant/notes';
import { installation } from '@assistant/process';
import { openFileTaskQueue } from '@assistant/queue';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createServer } from '../create-server.ts';
import { sessionCookieName } from './session.ts';

const token = 'dashboard-origin-key-token-0123456789abcdef';
const form = { 'content-type': 'application/x-www-form-urlencoded' };
const greeter = fileURLToPath(new URL('../../../../tests/fixtures/integrations/custom/greeter', import.meta.url));
/** What a replaying server adds: whatever a real same-origin browser request would carry. */
const forged = { origin: 'http://localhost:80', 'sec-fetch-site': 'same-origin', 'sec-fetch-mode': 'navigate' };

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'assistant-origin-key-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** A server over a greeter instance whose rule asks before sending a card, with one pending approval. */
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
  await notes.create(item, { data: { name: 'Ada', is_friend: false, classifications: { close: 0.93 } } });
  const explained = await explainItem({ registry, config, notes, notePath: item });
  const result = await enqueueActions({
    notes,
    queue,
    instance: 'friendly',
    domain: 'greeter',
    platform: 'cards',
    notePath: item,
    title: 'Ada',
    matches: explained.rules.flatMap((rule) => (rule.match ? [rule.match] : [])),
    approvalExpiresMs: 3_600_000,
  });
  const id = result.approvals[0]?.id ?? '';
  expect(id).not.toBe('');
  const app = createServer({ config, token, registry });
  await app.ready();
  const login = await app.inject({ method: 'POST', url: '/login', headers: form, payload: `token=${token}&next=%2F` });
  expect(login.statusCode).toBe(200);
  const value = new RegExp(`${sessionCookieName}=([^;]+)`).exec(String(login.headers['set-cookie']))?.[1] ?? '';
  const key = /data-key="([^"]+)"/.exec(login.body)?.[1] ?? '';
  expect(key).not.toBe('');
  return { app, notes, id, cookie: `${sessionCookieName}=${value}`, key };
}

describe('the dashboard origin key', () => {
  it('gives a replayed cookie with forged headers no page data, no CSRF token, no live stream and no approval', async () => {
    const { app, notes, id, cookie, key } = await setup();
    await using _app = app;
    // What the owner's tab sees, to know what must not leak.
    const owner = await app.inject({ method: 'GET', url: '/approvals', headers: { cookie, 'x-assistant-key': key } });
    expect(owner.statusCode).toBe(200);
    expect(owner.body).toContain(`id="${id}"`);
    const csrf = /name="_csrf" value="([^"]+)"/.exec(owner.body)?.[1] ?? '';
    const streamToken = /stream_token=([A-Za-z0-9_-]+)/.exec(owner.body)?.[1] ?? '';
    expect(csrf).not.toBe('');
    expect(streamToken).not.toBe('');

    const replay = { cookie, ...forged };
    const page = await app.inject({ method: 'GET', url: '/approvals', headers: replay });
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain('data-assistant-session="load"');
    for (const secret of [id, csrf, streamToken, key, '_csrf', 'x-csrf-token', 'Ada']) {
      expect(page.body).not.toContain(secret);
    }
    expect(page.headers['content-security-policy']).toContain("script-src 'self'");
    const fragment = await app.inject({
      method: 'GET',
      url: '/approvals',
      headers: { ...replay, 'hx-request': 'true' },
    });
    expect(fragment.statusCode).toBe(401);
    expect(fragment.body).not.toContain(id);
    const live = await app.inject({
      method: 'GET',
      url: '/live?topics=approvals',
      headers: { ...replay, accept: 'text/event-stream' },
    });
    expect(live.statusCode).toBe(401);
    const guessedStream = await app.inject({
      method: 'GET',
      url: `/live?topics=approvals&stream_token=${'A'.repeat(43)}`,
      headers: { ...replay, accept: 'text/event-stream' },
    });
    expect(guessedStream.statusCode).toBe(401);
    // A wrong key is refused, not answered with the bootstrap page again.
    const wrongKey = await app.inject({
      method: 'GET',
      url: '/approvals',
      headers: { ...replay, 'x-assistant-key': 'A'.repeat(43) },
    });
    expect(wrongKey.statusCode).toBe(401);
    // The stream token is the stream's only: it opens no page.
    const streamAsKey = await app.inject({
      method: 'GET',
      url: '/approvals',
      headers: { ...replay, 'x-assistant-key': streamToken },
    });
    expect(streamAsKey.statusCode).toBe(401);
    for (const payload of ['', '_csrf=', `_csrf=${'A'.repeat(43)}`]) {
      const approve = await app.inject({
        method: 'POST',
        url: `/approvals/${id}/approve`,
        headers: { ...replay, ...form, 'x-csrf-token': 'guess' },
        payload,
      });
      expect(approve.statusCode, payload).toBe(403);
    }
    expect(await readApproval(notes, id)).toMatchObject({ status: 'pending' });

    // The owner's tab approves: htmx sends the key and the CSRF token as headers.
    const approved = await app.inject({
      method: 'POST',
      url: `/approvals/${id}/approve`,
      headers: { cookie, ...form, 'x-assistant-key': key, 'x-csrf-token': csrf, 'hx-request': 'true' },
      payload: '',
    });
    expect(approved.statusCode).toBeLessThan(400);
    expect(await readApproval(notes, id)).toMatchObject({ status: 'approved' });
  });

  it('opens the live stream with the stream token of a page served with the key', async () => {
    const { app, cookie, key } = await setup();
    await using _app = app;
    const owner = await app.inject({ method: 'GET', url: '/approvals', headers: { cookie, 'x-assistant-key': key } });
    const streamToken = /stream_token=([A-Za-z0-9_-]+)/.exec(owner.body)?.[1] ?? '';
    await app.listen({ host: '127.0.0.1', port: 0 });
    const address = app.server.address();
    const port = typeof address === 'object' && address ? address.port : 0;
    const controller = new AbortController();
    try {
      const response = await fetch(`http://127.0.0.1:${port}/live?topics=approvals&stream_token=${streamToken}`, {
        headers: { cookie, accept: 'text/event-stream' },
        signal: controller.signal,
      });
      expect(response.status).toBe(200);
      expect(response.headers.get('content-type')).toContain('text/event-stream');
    } finally {
      controller.abort();
    }
  });

  it('is not locked out by a junk cookie of the same name on a longer path, in either order', async () => {
    const { app, id, cookie, key } = await setup();
    await using _app = app;
    const junk = [
      `${sessionCookieName}=junk`,
      `${sessionCookieName}=v1.${'A'.repeat(24)}.99999999999999.${'A'.repeat(43)}`,
    ];
    for (const bad of junk) {
      for (const header of [`${bad}; ${cookie}`, `${cookie}; ${bad}`]) {
        const page = await app.inject({
          method: 'GET',
          url: '/approvals',
          headers: { cookie: header, 'x-assistant-key': key },
        });
        expect(page.statusCode, header).toBe(200);
        expect(page.body, header).toContain(`id="${id}"`);
        const csrf = /name="_csrf" value="([^"]+)"/.exec(page.body)?.[1] ?? '';
        // Without the key (a full page load) it is the bootstrap page, not the login.
        const load = await app.inject({ method: 'GET', url: '/approvals', headers: { cookie: header } });
        expect(load.statusCode, header).toBe(200);
        expect(load.body, header).toContain('data-assistant-session="load"');
        // A plain form post, proven by its CSRF token, goes through with either order too.
        const filter = await app.inject({
          method: 'POST',
          url: '/approvals/nope/reject',
          headers: { cookie: header, ...form },
          payload: `_csrf=${csrf}`,
        });
        // An unknown id: past the login and the CSRF check (401 and 403 are theirs).
        expect(filter.statusCode, header).toBe(400);
        expect(filter.body, header).toContain('nope');
      }
    }
  });
});
