import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { type LoadedRuntime, loadRuntime } from '@assistant/integration-host';
import { memoryStores } from '@assistant/memory';
import { FileNoteStore } from '@assistant/notes';
import { installation } from '@assistant/process';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createServer } from '../../create-server.ts';
import type { AssistantServer } from '../../server-type.ts';
import { sessionCookieName } from '../session.ts';

const token = 'dashboard-test-token-memory-0123456789abc';
const authorization = `Bearer ${token}`;
const form = { authorization, 'content-type': 'application/x-www-form-urlencoded' };

let dir: string;
let notesRoot: string;
let runtime: LoadedRuntime;

beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'assistant-memory-pages-'));
  notesRoot = path.join(dir, 'data', 'notes');
  await mkdir(notesRoot, { recursive: true });
  await writeFile(path.join(dir, 'config.yaml'), 'data_dir: ./data\nserver:\n  port: 0\nowner:\n  timezone: UTC\n');
  runtime = await loadRuntime({ installation, configPath: path.join(dir, 'config.yaml'), cwd: dir });
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

function stores() {
  return memoryStores({ notes: new FileNoteStore({ root: notesRoot }) });
}

async function server(): Promise<AssistantServer> {
  const app = createServer({ config: runtime.config, registry: runtime.registry, token });
  await app.ready();
  return app;
}

const get = (app: AssistantServer, url: string) => app.inject({ method: 'GET', url, headers: { authorization } });

describe('the Contacts page', () => {
  it('lists contacts and shows one: identity, observed identifiers, facts with the superseded one struck through and linked, items', async () => {
    const memory = stores();
    const alice = await memory.contacts.create(
      {
        name: 'Alice <b>Martin</b>',
        emails: ['alice@acme.example'],
        organisation: 'Acme',
        source: 'email/personal/1.md',
      },
      { by: 'extraction' },
    );
    await memory.contacts.observe({
      slug: alice.slug,
      observed: [{ kind: 'email', value: 'a.martin@acme.example' }],
      source: 'email/personal/2.md',
    });
    const old = await memory.facts.add({
      statement: 'Dentist on Thursday.',
      about: [`contact:${alice.slug}`],
      source: 'email/personal/1.md',
      trust: 'extracted',
      observedAt: '2026-11-01T10:00:00Z',
    });
    const replacement = await memory.facts.add({
      statement: 'Dentist moved to Friday.',
      about: [`contact:${alice.slug}`],
      source: 'email/personal/2.md',
      trust: 'extracted',
      observedAt: '2026-11-02T10:00:00Z',
      supersedes: [old.id],
    });
    await memory.contacts.create({ name: 'Bob Stone' }, { by: 'owner' });
    await mkdir(path.join(notesRoot, 'email', 'personal'), { recursive: true });
    await writeFile(
      path.join(notesRoot, 'email', 'personal', '2.md'),
      '---\nsubject: "Moved: <i>Friday</i>"\nfrom: Alice <alice@acme.example>\n---\nSee you Friday.\n',
    );
    await using app = await server();

    const list = await get(app, '/contacts');
    expect(list.statusCode, list.body).toBe(200);
    expect(list.body).toContain('href="/contacts"');
    expect(list.body).toContain('href="/my-tasks"');
    expect(list.body).toContain(`<a href="/contacts/${alice.slug}">Alice &lt;b&gt;Martin&lt;/b&gt;</a>`);
    expect(list.body).toContain('<a href="/contacts/bob-stone">Bob Stone</a>');

    const page = await get(app, `/contacts/${alice.slug}`);
    expect(page.statusCode, page.body).toBe(200);
    expect(page.body).not.toContain('<b>Martin</b>');
    expect(page.body).toContain('<code>a.martin@acme.example</code>');
    expect(page.body).toContain(
      `<del>Dentist on Thursday.</del> <span class="muted">superseded by</span> <a href="#fact-${replacement.id}">${replacement.id}</a>`,
    );
    expect(page.body).toContain(`id="fact-${replacement.id}">Dentist moved to Friday.`);
    expect(page.body).toContain('<a href="/notes/email/personal/2.md">');
    // An item they appear in, by its subject and sender (escaped: a stranger wrote them).
    expect(page.body).toContain('<a href="/notes/email/personal/2.md">Moved: &lt;i&gt;Friday&lt;/i&gt;</a>');
    expect(page.body).toContain('Alice &lt;alice@acme.example&gt;');
    // The merge form posts with the CSRF field, like every dashboard form.
    expect(page.body).toMatch(/<form method="post" action="\/contacts\/merge"><input type="hidden" name="_csrf"/);
    const unknown = await get(app, '/contacts/nobody');
    expect(unknown.statusCode).toBe(404);
  });

  it('merges from the contact page and unmerges, restoring both notes byte for byte', async () => {
    const memory = stores();
    await memory.contacts.create({ name: 'Alice Martin', emails: ['alice@acme.example'] }, { by: 'extraction' });
    await memory.contacts.create({ name: 'alice-a', handles: { github: ['alice-a'] } }, { by: 'extraction' });
    const files = ['alice-martin.md', 'alice-a.md'].map((name) => path.join(notesRoot, 'contacts', name));
    const before = await Promise.all(files.map((file) => readFile(file, 'utf8')));
    await using app = await server();
    const merge = await app.inject({
      method: 'POST',
      url: '/contacts/merge',
      headers: form,
      payload: 'into=alice-martin&from=alice-a',
    });
    expect(merge.statusCode, merge.body).toBe(303);
    expect(merge.headers.location).toBe('/contacts/alice-martin');
    expect((await get(app, '/contacts/alice-martin')).body).toContain('<a href="/contacts/alice-a">alice-a</a>');
    const merged = await get(app, '/contacts/alice-a');
    expect(merged.body).toContain('Merged into <a href="/contacts/alice-martin">Alice Martin</a>');
    const unmerge = await app.inject({ method: 'POST', url: '/contacts/alice-a/unmerge', headers: form, payload: '' });
    expect(unmerge.statusCode, unmerge.body).toBe(303);
    expect(await Promise.all(files.map((file) => readFile(file, 'utf8')))).toEqual(before);
  });
});

describe('the memory forms with the login cookie', () => {
  it('refuse a merge without the CSRF token, writing nothing, and take it with the token the page carries', async () => {
    const memory = stores();
    await memory.contacts.create({ name: 'Alice Martin' }, { by: 'extraction' });
    await memory.contacts.create({ name: 'alice-a' }, { by: 'extraction' });
    const file = path.join(notesRoot, 'contacts', 'alice-a.md');
    const before = await readFile(file, 'utf8');
    await using app = await server();
    const login = await app.inject({
      method: 'POST',
      url: '/login',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: `token=${token}&next=%2Fcontacts`,
    });
    const value = new RegExp(`${sessionCookieName}=([^;]+)`).exec(String(login.headers['set-cookie']))?.[1];
    const key = /data-key="([^"]+)"/.exec(login.body)?.[1] ?? '';
    const cookie = `${sessionCookieName}=${value}`;
    const cookieForm = { cookie, 'content-type': 'application/x-www-form-urlencoded' };
    const without = await app.inject({
      method: 'POST',
      url: '/contacts/merge',
      headers: cookieForm,
      payload: 'into=alice-martin&from=alice-a',
    });
    expect(without.statusCode).toBe(403);
    expect(await readFile(file, 'utf8')).toBe(before);
    const page = await app.inject({
      method: 'GET',
      url: '/contacts/alice-martin',
      headers: { cookie, 'x-assistant-key': key },
    });
    const csrf = /name="_csrf" value="([^"]+)"/.exec(page.body)?.[1] ?? '';
    const merged = await app.inject({
      method: 'POST',
      url: '/contacts/merge',
      headers: cookieForm,
      payload: `_csrf=${encodeURIComponent(csrf)}&into=alice-martin&from=alice-a`,
    });
    expect(merged.statusCode, merged.body).toBe(303);
    expect((await memory.contacts.get('alice-a'))?.merged_into).toBe('alice-martin');
  });
});

describe('the My tasks page and Needs you', () => {
  it('lists open tasks by due date with a Done button that marks one done', async () => {
    const memory = stores();
    const overdue = await memory.tasks.add({
      title: 'Answer Bob',
      due: '2020-01-06',
      about: ['contact:bob-stone', 'topic:contract'],
      createdBy: 'owner',
    });
    await memory.tasks.add({ title: 'Renew passport', due: '2999-01-01', createdBy: 'owner' });
    await using app = await server();
    const page = await get(app, '/my-tasks');
    expect(page.statusCode, page.body).toBe(200);
    expect(page.body.indexOf('Answer Bob')).toBeLessThan(page.body.indexOf('Renew passport'));
    expect(page.body).toContain('<strong class="bad">overdue</strong>');
    expect(page.body).toContain(`action="/my-tasks/${overdue.id}/done"`);
    expect(page.body).toContain('<td><a href="/contacts/bob-stone">bob-stone</a>, contract</td>');
    const done = await app.inject({ method: 'POST', url: `/my-tasks/${overdue.id}/done`, headers: form, payload: '' });
    expect(done.statusCode, done.body).toBe(303);
    expect((await memory.tasks.get(overdue.id))?.status).toBe('done');
    expect((await get(app, '/my-tasks')).body).not.toContain('Answer Bob');
    const added = await app.inject({
      method: 'POST',
      url: '/my-tasks',
      headers: form,
      payload: 'title=Call+Alice&due=friday',
    });
    expect(added.statusCode).toBe(400);
    expect(added.body).toContain('got `friday`');
  });

  it('"Needs you" lists an open task of the owner that is due, not one due later or done', async () => {
    const memory = stores();
    await memory.tasks.add({
      title: 'Send the contract to Bob',
      due: '2020-01-06',
      createdBy: 'extraction',
      source: 'email/personal/3.md',
    });
    await memory.tasks.add({ title: 'Renew passport', due: '2999-01-01', createdBy: 'owner' });
    await using app = await server();
    const needs = await app.inject({
      method: 'GET',
      url: '/overview/needs',
      headers: { authorization, 'hx-request': 'true' },
    });
    expect(needs.statusCode, needs.body).toBe(200);
    expect(needs.body).toContain('1 task of yours due');
    expect(needs.body).toContain('Send the contract to Bob');
    expect(needs.body).not.toContain('Renew passport');
    expect(needs.body).toContain('<a href="/my-tasks">All your tasks</a>');
  });
});
