import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { type LoadedRuntime, loadRuntime } from '@assistant/integration-host';
import { memoryStores } from '@assistant/memory';
import { FileNoteStore } from '@assistant/notes';
import { installation } from '@assistant/process';
import type { InjectOptions } from 'fastify';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createServer } from '../create-server.ts';
import type { AssistantServer } from '../server-type.ts';

const token = 'test-token-for-the-memory-routes-0123456789';

let dir: string;
let notesRoot: string;
let runtime: LoadedRuntime;

beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'assistant-memory-routes-'));
  notesRoot = path.join(dir, 'data', 'notes');
  await mkdir(notesRoot, { recursive: true });
  await writeFile(path.join(dir, 'config.yaml'), 'data_dir: ./data\nserver:\n  port: 0\nowner:\n  timezone: UTC\n');
  runtime = await loadRuntime({ installation, configPath: path.join(dir, 'config.yaml'), cwd: dir });
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** The stores over the same notes, as the worker's consolidation or the owner's editor would write them. */
function stores() {
  return memoryStores({ notes: new FileNoteStore({ root: notesRoot }) });
}

async function server(): Promise<AssistantServer> {
  const app = createServer({ config: runtime.config, registry: runtime.registry, token });
  await app.ready();
  return app;
}

function inject(app: AssistantServer, options: InjectOptions) {
  return app.inject({ ...options, headers: { authorization: `Bearer ${token}`, ...options.headers } });
}

async function seedAlice() {
  const memory = stores();
  const alice = await memory.contacts.create(
    { name: 'Alice Martin', emails: ['alice@acme.example'], organisation: 'Acme', source: 'email/personal/1.md' },
    { by: 'extraction' },
  );
  const handle = await memory.contacts.create(
    { name: 'alice-a', handles: { github: ['alice-a'] }, source: 'github/acme/pulls/7.md' },
    { by: 'extraction' },
  );
  const old = await memory.facts.add({
    statement: 'The dentist appointment with Alice is on Thursday.',
    about: [`contact:${alice.slug}`],
    source: 'email/personal/1.md',
    trust: 'extracted',
    observedAt: '2026-11-01T10:00:00Z',
  });
  const replacement = await memory.facts.add({
    statement: 'The dentist appointment with Alice moved to Friday.',
    about: [`contact:${alice.slug}`],
    source: 'email/personal/2.md',
    trust: 'extracted',
    observedAt: '2026-11-02T10:00:00Z',
    supersedes: [old.id],
  });
  return { alice, handle, old, replacement };
}

describe('/api/memory/contacts', () => {
  it('lists contacts, reports a malformed contact note as a problem without rewriting it', async () => {
    await seedAlice();
    const broken = '---\nname: [unclosed\n---\nBody.\n';
    await writeFile(path.join(notesRoot, 'contacts', 'broken.md'), broken);
    await using app = await server();
    const list = await inject(app, { method: 'GET', url: '/api/memory/contacts' });
    expect(list.statusCode, list.body).toBe(200);
    const body = list.json();
    expect(body.contacts.map((contact: { slug: string }) => contact.slug).sort()).toEqual(['alice-a', 'alice-martin']);
    expect(body.problems).toEqual([expect.objectContaining({ path: 'contacts/broken.md' })]);
    expect(await readFile(path.join(notesRoot, 'contacts', 'broken.md'), 'utf8')).toBe(broken);
  });

  it('shows a contact with its facts (the superseded one linked to its replacement) and items', async () => {
    const { old, replacement } = await seedAlice();
    await using app = await server();
    const one = await inject(app, { method: 'GET', url: '/api/memory/contacts/alice-martin' });
    expect(one.statusCode, one.body).toBe(200);
    const body = one.json();
    expect(body.contact).toMatchObject({ slug: 'alice-martin', name: 'Alice Martin', emails: ['alice@acme.example'] });
    expect(body.facts.map((fact: { id: string; superseded_by?: string }) => [fact.id, fact.superseded_by])).toEqual([
      [replacement.id, undefined],
      [old.id, replacement.id],
    ]);
    expect(body.items).toEqual(['email/personal/1.md', 'email/personal/2.md']);
    const unknown = await inject(app, { method: 'GET', url: '/api/memory/contacts/nobody' });
    expect(unknown.statusCode).toBe(404);
    expect(unknown.json().error.message).toContain('no contact `nobody`');
    const bad = await inject(app, { method: 'GET', url: '/api/memory/contacts/..%2Fsecrets' });
    expect(bad.statusCode).toBe(400);
    expect(bad.json().error.message).toContain('expected a contact slug');
  });

  it('merges two contacts, shows the merge on both, and unmerge restores both notes byte for byte', async () => {
    await seedAlice();
    const files = ['alice-martin.md', 'alice-a.md'].map((name) => path.join(notesRoot, 'contacts', name));
    const before = await Promise.all(files.map((file) => readFile(file, 'utf8')));
    await using app = await server();
    const merge = await inject(app, {
      method: 'POST',
      url: '/api/memory/contacts/merge',
      payload: { into: 'alice-martin', from: 'alice-a' },
    });
    expect(merge.statusCode, merge.body).toBe(200);
    expect(merge.json().from.merged_into).toBe('alice-martin');
    expect(merge.json().into.merged_from).toEqual(['alice-a']);
    const merged = (await inject(app, { method: 'GET', url: '/api/memory/contacts/alice-a' })).json();
    expect(merged.primary.slug).toBe('alice-martin');
    const primary = (await inject(app, { method: 'GET', url: '/api/memory/contacts/alice-martin' })).json();
    expect(primary.merged_from.map((contact: { slug: string }) => contact.slug)).toEqual(['alice-a']);
    expect(primary.items).toContain('github/acme/pulls/7.md');

    const unmerge = await inject(app, { method: 'POST', url: '/api/memory/contacts/alice-a/unmerge' });
    expect(unmerge.statusCode, unmerge.body).toBe(200);
    expect(unmerge.json().contact.merged_into).toBeUndefined();
    expect(await Promise.all(files.map((file) => readFile(file, 'utf8')))).toEqual(before);

    const missing = await inject(app, { method: 'POST', url: '/api/memory/contacts/merge', payload: { into: 'x' } });
    expect(missing.statusCode).toBe(400);
    expect(missing.json().error.message).toMatch(/^body\.from: /);
    const unknown = await inject(app, {
      method: 'POST',
      url: '/api/memory/contacts/merge',
      payload: { into: 'alice-martin', from: 'nobody' },
    });
    expect(unknown.statusCode).toBe(404);
  });
});

describe('/api/memory/facts', () => {
  it("adds the owner's fact (trust owner, about the contact the slug names) and lists facts about it", async () => {
    const { replacement, old } = await seedAlice();
    await using app = await server();
    const added = await inject(app, {
      method: 'POST',
      url: '/api/memory/facts',
      payload: { statement: 'Alice prefers calls after 10.', about: 'alice-martin' },
    });
    expect(added.statusCode, added.body).toBe(201);
    expect(added.json().fact).toMatchObject({
      statement: 'Alice prefers calls after 10.',
      about: ['contact:alice-martin'],
      trust: 'owner',
      source: 'owner',
    });
    const list = await inject(app, { method: 'GET', url: '/api/memory/facts?about=alice-martin' });
    expect(list.statusCode, list.body).toBe(200);
    const facts = list.json().facts as { id: string; superseded_by?: string }[];
    expect(facts.map((fact) => fact.id).sort()).toEqual([added.json().fact.id, old.id, replacement.id].sort());
    expect(facts.find((fact) => fact.id === old.id)?.superseded_by).toBe(replacement.id);

    const empty = await inject(app, {
      method: 'POST',
      url: '/api/memory/facts',
      payload: { statement: ' ', about: 'x' },
    });
    expect(empty.statusCode).toBe(400);
    expect(empty.json().error.message).toBe('body.statement: expected the statement');
  });
});

describe('/api/memory/tasks', () => {
  it("adds the owner's tasks, lists them by due window and status, and marks one done", async () => {
    await using app = await server();
    const add = (payload: object) => inject(app, { method: 'POST', url: '/api/memory/tasks', payload });
    const overdue = await add({ title: 'Answer Bob', due: '2020-01-06' });
    expect(overdue.statusCode, overdue.body).toBe(201);
    expect(overdue.json().task).toMatchObject({ title: 'Answer Bob', created_by: 'owner', standing: 'overdue' });
    expect((await add({ title: 'Renew passport', due: '2999-01-01' })).statusCode).toBe(201);
    expect((await add({ title: 'Someday' })).statusCode).toBe(201);

    const titles = async (query: string) =>
      (
        (await inject(app, { method: 'GET', url: `/api/memory/tasks${query}` })).json().tasks as { title: string }[]
      ).map((task) => task.title);
    expect(await titles('?due=overdue')).toEqual(['Answer Bob']);
    expect(await titles('')).toEqual(['Answer Bob', 'Renew passport', 'Someday']);

    const id = overdue.json().task.id as string;
    const done = await inject(app, { method: 'PATCH', url: `/api/memory/tasks/${id}`, payload: { status: 'done' } });
    expect(done.statusCode, done.body).toBe(200);
    expect(done.json().task.status).toBe('done');
    expect(await titles('?due=overdue')).toEqual([]);
    expect(await titles('?status=done')).toEqual(['Answer Bob']);

    const passport = (await inject(app, { method: 'GET', url: '/api/memory/tasks?due=all' })).json().tasks[0];
    const moved = await inject(app, {
      method: 'PATCH',
      url: `/api/memory/tasks/${passport.id}`,
      payload: { due: null },
    });
    expect(moved.statusCode, moved.body).toBe(200);
    expect(moved.json().task.due).toBeUndefined();
    expect(moved.json().task.standing).toBe('none');

    const badDue = await add({ title: 'x', due: 'friday' });
    expect(badDue.statusCode).toBe(400);
    expect(badDue.json().error.message).toContain('body.due: expected a day (2026-12-01)');
    const nothing = await inject(app, { method: 'PATCH', url: `/api/memory/tasks/${id}`, payload: {} });
    expect(nothing.statusCode).toBe(400);
    expect(nothing.json().error.message).toContain('expected `status` (open, done, dropped) or `due`');
    const badWindow = await inject(app, { method: 'GET', url: '/api/memory/tasks?due=soon' });
    expect(badWindow.statusCode).toBe(400);
    expect(badWindow.json().error.message).toMatch(/^query\.due: /);
    const unknown = await inject(app, {
      method: 'PATCH',
      url: '/api/memory/tasks/t-nope',
      payload: { status: 'done' },
    });
    expect(unknown.statusCode).toBe(404);
  });
});

describe('/api/memory/search', () => {
  it('finds a fact by words and meaning, says the mode, and refuses a search without a query', async () => {
    await seedAlice();
    await using app = await server();
    const found = await inject(app, { method: 'GET', url: '/api/memory/search?q=dentist%20appointment&folder=facts' });
    expect(found.statusCode, found.body).toBe(200);
    const body = found.json();
    expect(body.mode).toBe('hybrid');
    expect(body.hits.length).toBe(2);
    // The replacement ranks above the fact it supersedes, which is flagged.
    expect(body.hits[0].title).toContain('Friday');
    expect(body.hits[1].superseded).toBe(true);
    const lexical = await inject(app, { method: 'GET', url: '/api/memory/search?q=dentist&mode=lexical' });
    expect(lexical.json().mode).toBe('lexical');
    const none = await inject(app, { method: 'GET', url: '/api/memory/search' });
    expect(none.statusCode).toBe(400);
    expect(none.json().error.message).toMatch(/^query\.q: /);
    const badMode = await inject(app, { method: 'GET', url: '/api/memory/search?q=x&mode=vector' });
    expect(badMode.statusCode).toBe(400);
  });

  it('lists the memory routes in the OpenAPI document, PATCH included', async () => {
    await using app = await server();
    const document = (await inject(app, { method: 'GET', url: '/docs/openapi.json' })).json();
    expect(Object.keys(document.paths).filter((route) => route.startsWith('/api/memory'))).toEqual([
      '/api/memory/search',
      '/api/memory/contacts',
      '/api/memory/contacts/{slug}',
      '/api/memory/contacts/merge',
      '/api/memory/contacts/{slug}/unmerge',
      '/api/memory/facts',
      '/api/memory/tasks',
      '/api/memory/tasks/{id}',
    ]);
    expect(Object.keys(document.paths['/api/memory/tasks/{id}'])).toEqual(['patch']);
  });
});
