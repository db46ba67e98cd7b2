import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { loadConfig } from '@assistant/config';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createServer } from '../../create-server.ts';
import { sessionCookieName } from '../session.ts';

const token = 'note-page-test-token-0123456789abcdefghij';
const form = { 'content-type': 'application/x-www-form-urlencoded' };

let dir: string;
let notesRoot: string;
beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'assistant-note-page-'));
  notesRoot = path.join(dir, 'data/notes');
  await mkdir(path.join(notesRoot, 'mail'), { recursive: true });
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function server() {
  await writeFile(path.join(dir, 'config.yaml'), 'data_dir: ./data\nserver:\n  port: 0\n');
  const { config } = await loadConfig({ configPath: path.join(dir, 'config.yaml') });
  const app = createServer({ config, token });
  await app.ready();
  const login = await app.inject({ method: 'POST', url: '/login', headers: form, payload: `token=${token}&next=%2F` });
  // The cookie and the origin key the login's answer hands to the page (what session.js sends as a header).
  const cookie = `${sessionCookieName}=${new RegExp(`${sessionCookieName}=([^;]+)`).exec(String(login.headers['set-cookie']))?.[1]}`;
  const key = /data-key="([^"]+)"/.exec(login.body)?.[1] ?? '';
  return { app, cookie: { cookie, 'x-assistant-key': key } };
}

/** The edit form's hidden fields, as a browser would post them back. */
function hiddenFields(page: string): { csrf: string; version: string } {
  return {
    csrf: /name="_csrf" value="([^"]+)"/.exec(page)?.[1] ?? '',
    version: /name="version" value="([0-9a-f]{64})"/.exec(page)?.[1] ?? '',
  };
}

describe('note page', () => {
  it('keeps a leading blank line of the body through the form and saves CRLF from the form as LF', async () => {
    const file = path.join(notesRoot, 'mail/a.md');
    await writeFile(file, '---\n# mine\nstatus: new\n---\n\n# Title\n');
    const { app, cookie } = await server();
    await using _app = app;
    const edit = await app.inject({ method: 'GET', url: '/notes/mail/a.md?edit', headers: cookie });
    expect(edit.statusCode).toBe(200);
    // HTML drops the newline right after <textarea>: the form adds one so the body's own blank line survives.
    expect(edit.body).toContain('id="note-body" rows="10" spellcheck="false">\n\n# Title\n</textarea>');
    const { csrf, version } = hiddenFields(edit.body);
    const payload = new URLSearchParams({
      _csrf: csrf,
      version,
      frontmatter: '# mine\r\nstatus: done\r\n',
      body: '\r\n# Title\r\n',
    }).toString();
    const saved = await app.inject({
      method: 'POST',
      url: '/notes/mail/a.md',
      headers: { ...form, ...cookie },
      payload,
    });
    expect(saved.statusCode).toBe(303);
    expect(saved.headers.location).toBe('/notes/mail/a.md?saved');
    expect(await readFile(file, 'utf8')).toBe('---\n# mine\nstatus: done\n---\n\n# Title\n');
  });

  it('refuses a save without the CSRF token or without a version, writing nothing', async () => {
    const file = path.join(notesRoot, 'mail/a.md');
    await writeFile(file, '---\nstatus: new\n---\n');
    const { app, cookie } = await server();
    await using _app = app;
    const edit = await app.inject({ method: 'GET', url: '/notes/mail/a.md?edit', headers: cookie });
    const { csrf, version } = hiddenFields(edit.body);
    const noCsrf = await app.inject({
      method: 'POST',
      url: '/notes/mail/a.md',
      headers: { ...form, ...cookie },
      payload: new URLSearchParams({ version, frontmatter: 'status: x\n', body: '' }).toString(),
    });
    expect(noCsrf.statusCode).toBe(403);
    const noVersion = await app.inject({
      method: 'POST',
      url: '/notes/mail/a.md',
      headers: { ...form, ...cookie },
      payload: new URLSearchParams({ _csrf: csrf, frontmatter: 'status: x\n', body: '' }).toString(),
    });
    expect(noVersion.statusCode).toBe(400);
    expect(noVersion.body).toContain('frontmatter, body and version');
    expect(await readFile(file, 'utf8')).toBe('---\nstatus: new\n---\n');
  });

  it('escapes a frontmatter key and value holding markup, and renders an empty frontmatter without a table', async () => {
    await writeFile(
      path.join(notesRoot, 'mail/x.md'),
      '---\n"<b>key</b>": "<script>alert(1)</script>"\nlist: ["<i>a</i>"]\n---\nbody\n',
    );
    await writeFile(path.join(notesRoot, 'mail/plain.md'), 'just text\n');
    const { app, cookie } = await server();
    await using _app = app;
    const page = await app.inject({ method: 'GET', url: '/notes/mail/x.md', headers: cookie });
    expect(page.body).toContain('<th scope="row">&lt;b&gt;key&lt;/b&gt;</th>');
    expect(page.body).toContain('&lt;script&gt;alert(1)&lt;/script&gt;');
    expect(page.body).toContain('<code>[&quot;&lt;i&gt;a&lt;/i&gt;&quot;]</code>');
    expect(page.body).not.toMatch(/<(script|b|i)>/);
    const plain = await app.inject({ method: 'GET', url: '/notes/mail/plain.md', headers: cookie });
    expect(plain.body).toContain('No frontmatter.');
  });

  it('lists an empty root on a fresh install', async () => {
    await rm(notesRoot, { recursive: true, force: true });
    const { app, cookie } = await server();
    await using _app = app;
    const page = await app.inject({ method: 'GET', url: '/notes', headers: cookie });
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain('This folder is empty.');
  });

  it('answers a name over 255 bytes with 400 naming the limit, on the page, the save, the folder view and the API', async () => {
    const { app } = await server();
    await using _app = app;
    const authorization = `Bearer ${token}`;
    // 128 two-byte letters: 256 bytes.
    const long = encodeURIComponent('é'.repeat(128));
    const answers = [
      await app.inject({ method: 'GET', url: `/notes/mail/${long}.md`, headers: { authorization } }),
      await app.inject({ method: 'GET', url: `/notes/${long}/a.md?edit`, headers: { authorization } }),
      await app.inject({ method: 'GET', url: `/notes?folder=${long}`, headers: { authorization } }),
      await app.inject({ method: 'GET', url: `/notes?folder=${long}&q=x`, headers: { authorization } }),
      await app.inject({
        method: 'POST',
        url: `/notes/mail/${long}.md`,
        headers: { ...form, authorization },
        payload: new URLSearchParams({ frontmatter: 'a: 1\n', body: '', version: '0'.repeat(64) }).toString(),
      }),
      await app.inject({ method: 'GET', url: `/api/notes/mail/${long}.md`, headers: { authorization } }),
      await app.inject({ method: 'GET', url: `/api/notes?path=${long}`, headers: { authorization } }),
    ];
    for (const answer of answers) {
      expect(answer.statusCode, answer.body).toBe(400);
      expect(answer.body).toContain('at most 255 bytes');
    }
  });
});
