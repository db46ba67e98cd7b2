import { mkdir, mkdtemp, readFile, rm, stat, unlink, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { FileNoteStore } from '@assistant/notes';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { Embedder } from '../memory-types.ts';
import { HashingEmbedder } from './hashing-embedder.ts';
import { MemoryIndex, type MemoryIndexOptions } from './memory-index.ts';
import { OpenAiEmbedder } from './openai-embedder.ts';
import { cacheFileName } from './vector-cache.ts';

let dataDir: string;
let store: FileNoteStore;
const opened: MemoryIndex[] = [];
const servers: Server[] = [];

beforeEach(async () => {
  dataDir = await mkdtemp(path.join(os.tmpdir(), 'assistant-memory-index-'));
  store = new FileNoteStore({ root: path.join(dataDir, 'notes') });
});
afterEach(async () => {
  await Promise.all(opened.splice(0).map((index) => index.close()));
  await Promise.all(servers.splice(0).map((server) => new Promise((resolve) => server.close(resolve))));
  await rm(dataDir, { recursive: true, force: true });
});

function openIndex(options: Partial<MemoryIndexOptions> = {}): MemoryIndex {
  const index = new MemoryIndex({ notes: store, dataDir, ...options });
  opened.push(index);
  return index;
}

/**
 * Polls `check` (every 20 ms) until it holds; a hang becomes a failure naming what was awaited (within the test's
 * own 15 s timeout, which would name nothing). Timed by `performance.now`, so a test that stops `Date` still ends.
 */
async function waitUntil(check: () => boolean | Promise<boolean>, what: string, timeoutMs = 10_000): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (!(await check())) {
    if (performance.now() > deadline) throw new Error(`waited ${timeoutMs} ms for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** An embedder of our own interface that counts the texts it embeds (hashing vectors underneath). */
class CountingEmbedder implements Embedder {
  readonly model: string;
  texts = 0;
  failing = false;
  readonly #inner = new HashingEmbedder();
  constructor(model: string) {
    this.model = model;
  }
  async embed(options: { texts: readonly string[] }): Promise<Float32Array[]> {
    if (this.failing) throw new Error('the test says no');
    this.texts += options.texts.length;
    return await this.#inner.embed(options);
  }
}

const paths = (hits: ReadonlyArray<{ path: string }>) => hits.map((hit) => hit.path);

describe('MemoryIndex', () => {
  it('finds notes by words and meaning, and follows a note edited by hand in an editor while running', async () => {
    await store.create('mail/dentist.md', {
      data: { subject: 'Appointment moved', from: 'reception@smile.example' },
      body: 'Your dentist appointment moved to Friday at 10:00.\n',
    });
    await store.create('mail/lunch.md', { data: { subject: 'Lunch' }, body: 'Lunch with Bob on Monday?\n' });
    const index = openIndex();
    await index.start();
    expect(index.ready).toBe(true);

    const found = await index.search({ query: 'when is the dentist appointment' });
    expect(found.mode).toBe('hybrid');
    expect(found.degraded).toBeUndefined();
    expect(paths(found.hits)[0]).toBe('mail/dentist.md');
    expect(found.hits[0]).toMatchObject({ title: 'Appointment moved', snippet: expect.stringContaining('Friday') });
    expect(found.hits[0]?.parts.lexical).toBeGreaterThan(0);
    expect(found.hits[0]?.parts.vector).toBeGreaterThan(0);
    // A frontmatter value is searchable.
    expect(paths((await index.search({ query: 'smile.example', mode: 'lexical' })).hits)).toEqual(['mail/dentist.md']);

    // An editor writes the file in place; no call to refresh: the watch must see it.
    await writeFile(
      path.join(store.root, 'mail/lunch.md'),
      '---\nsubject: Lunch\n---\nLunch moved to the harbour café.\n',
    );
    await waitUntil(
      async () => paths((await index.search({ query: 'harbour' })).hits).includes('mail/lunch.md'),
      'the hand edit to be indexed',
    );
    // A new file made by hand, then one removed by hand.
    await writeFile(path.join(store.root, 'mail/new.md'), '---\nsubject: Parcel\n---\nThe parcel arrives Tuesday.\n');
    await waitUntil(
      async () => paths((await index.search({ query: 'parcel' })).hits).includes('mail/new.md'),
      'the new note',
    );
    await unlink(path.join(store.root, 'mail/dentist.md'));
    await waitUntil(
      async () => !paths((await index.search({ query: 'dentist' })).hits).includes('mail/dentist.md'),
      'the removal',
    );
    expect(index.status()).toMatchObject({ notes: 2, embedded: 2, pending: 0, model: 'hashing-v1-256' });
    // The hashing vectors were written behind the searches; close waits for the writes: at least the two notes, the
    // edit and the new note (more if the watch read a file half-written by the editor, a text of its own).
    // The removed note's vector stays: it is keyed by content, not by path.
    await index.close();
    const lines = (await readFile(index.cacheFile, 'utf8')).trimEnd().split('\n');
    expect(lines[0]).toBe('{"format":"assistant-memory-vectors","version":1,"model":"hashing-v1-256"}');
    expect(lines.length).toBeGreaterThanOrEqual(5);
  });

  it('sees a write at once after refresh, and skips a broken note, counting it', async () => {
    const index = openIndex();
    await index.start();
    await store.create('facts/f1.md', { data: { id: 'f1', statement: 'Bob prefers tea' }, body: 'Bob prefers tea.\n' });
    await index.refresh('facts/f1.md');
    expect(paths((await index.search({ query: 'tea' })).hits)).toEqual(['facts/f1.md']);
    await mkdir(path.join(store.root, 'facts'), { recursive: true });
    await writeFile(path.join(store.root, 'facts/broken.md'), '---\nstatement: [tea\n---\ntea\n');
    await index.refresh('facts/broken.md');
    expect(paths((await index.search({ query: 'tea' })).hits)).toEqual(['facts/f1.md']);
    expect(index.status()).toMatchObject({ notes: 1, broken: 1 });
    // Nothing rewrote it.
    expect(await readFile(path.join(store.root, 'facts/broken.md'), 'utf8')).toBe('---\nstatement: [tea\n---\ntea\n');
  });

  it('keeps to the folders asked for, and refuses a bad limit or mode, naming it', async () => {
    await store.create('facts/a.md', { data: { statement: 'Invoice from Acme' }, body: 'Invoice from Acme.\n' });
    await store.create('mail/b.md', { data: { subject: 'Invoice' }, body: 'Acme invoice attached.\n' });
    const index = openIndex();
    await index.start();
    expect(paths((await index.search({ query: 'invoice', folders: ['facts/'] })).hits)).toEqual(['facts/a.md']);
    expect((await index.search({ query: 'invoice', limit: 1 })).hits).toHaveLength(1);
    await expect(index.search({ query: 'x', limit: -1 })).rejects.toThrow(/`limit`.*got `-1`/);
    // @ts-expect-error: a mode from outside (a REST query string) that is not one.
    await expect(index.search({ query: 'x', mode: 'semantic' })).rejects.toThrow(/`mode`.*got `semantic`/);
  });

  it('ranks notes about a contact named by a handle or address in the query, though they do not hold it', async () => {
    await store.create('contacts/alice-martin.md', {
      data: {
        name: 'Alice Martin',
        aliases: ['Ally'],
        emails: ['alice@acme.example'],
        handles: { github: ['acmecoder'] },
      },
      body: '',
    });
    await store.create('facts/a1.md', {
      data: { id: 'a1', statement: 'The contract is signed', about: ['contact:alice-martin'] },
      body: 'The contract is signed.\n',
    });
    await store.create('mail/m1.md', {
      data: { subject: 'Contract' },
      body: 'Ally Martin says: contract ready soon.\n',
    });
    await store.create('mail/m2.md', { data: { subject: 'Contract draft' }, body: 'Carol sent the contract draft.\n' });
    const index = openIndex();
    await index.start();
    for (const query of ['acmecoder contract', 'alice@acme.example contract']) {
      const { hits } = await index.search({ query, mode: 'lexical' });
      const order = paths(hits);
      expect(order.indexOf('facts/a1.md')).toBeLessThan(order.indexOf('mail/m2.md'));
      expect(order.indexOf('mail/m1.md')).toBeLessThan(order.indexOf('mail/m2.md'));
      expect(hits.find((hit) => hit.path === 'facts/a1.md')?.parts.entity).toBe(1);
      expect(hits.find((hit) => hit.path === 'mail/m2.md')?.parts.entity).toBeUndefined();
    }
  });

  it('takes the longest name in the query, and lets a first name many contacts share name none of them', async () => {
    for (const last of ['Martin', 'Chen', 'Okafor', 'Berg']) {
      await store.create(`contacts/alice-${last.toLowerCase()}.md`, { data: { name: `Alice ${last}` }, body: '' });
    }
    await store.create('contacts/bob-stone.md', { data: { name: 'Bob Stone' }, body: '' });
    await store.create('facts/m.md', {
      data: { statement: 'Budget approved', about: ['contact:alice-martin'] },
      body: 'Budget approved.\n',
    });
    await store.create('facts/b.md', {
      data: { statement: 'Budget due', about: ['contact:bob-stone'] },
      body: 'Due.\n',
    });
    const index = openIndex();
    await index.start();
    const entityOf = async (query: string) =>
      Object.fromEntries(
        (await index.search({ query, mode: 'lexical' })).hits
          .filter((hit) => hit.parts.entity !== undefined)
          .map((hit) => [hit.path, hit.parts.entity]),
      );
    // "Alice Martin" names her alone, though "Alice" is one of her names too.
    expect(await entityOf('alice martin budget')).toEqual({ 'contacts/alice-martin.md': 1, 'facts/m.md': 1 });
    // Four Alices: "alice" alone is no one in particular.
    expect(await entityOf('alice budget')).toEqual({});
    // One Bob: his first name is enough.
    expect(await entityOf('what is due for bob')).toEqual({ 'contacts/bob-stone.md': 1, 'facts/b.md': 1 });
  });

  it('ranks a superseded fact below its replacement, flags it, and brings the replacement in', async () => {
    await store.create('facts/old.md', {
      data: { id: 'old', statement: 'Dentist appointment on Tuesday', trust: 'extracted', supersedes: [] },
      body: 'Dentist appointment on Tuesday at 9, Tuesday for sure, Tuesday.\n',
    });
    await store.create('facts/new.md', {
      data: { id: 'new', statement: 'The appointment moved to Friday', trust: 'extracted', supersedes: ['old'] },
      body: 'The appointment moved to Friday.\n',
    });
    const index = openIndex();
    await index.start();
    // Words alone put the old fact first (it says "Tuesday" three times; the new one never does).
    const { hits } = await index.search({ query: 'dentist Tuesday' });
    expect(paths(hits)).toEqual(['facts/new.md', 'facts/old.md']);
    expect(hits[1]?.superseded).toBe(true);
    expect(hits[0]?.superseded).toBeUndefined();
    expect(hits[0]?.score).toBeGreaterThan(hits[1]?.score ?? Number.POSITIVE_INFINITY);
    // With a limit of one, the replacement is what remains.
    expect(paths((await index.search({ query: 'dentist Tuesday', limit: 1 })).hits)).toEqual(['facts/new.md']);
  });

  it('orders a chain of supersessions newest first, bringing in each replacement', async () => {
    const fact = (id: string, statement: string, supersedes: string[]) =>
      store.create(`facts/${id}.md`, { data: { id, statement, trust: 'owner', supersedes }, body: `${statement}\n` });
    await fact('v1', 'Bob works at Initech as an engineer at Initech', []);
    await fact('v2', 'Bob moved to Globex', ['v1']);
    await fact('v3', 'Bob left for Umbrella', ['v2']);
    const index = openIndex();
    await index.start();
    const { hits } = await index.search({ query: 'Initech engineer', mode: 'lexical' });
    expect(paths(hits)).toEqual(['facts/v3.md', 'facts/v2.md', 'facts/v1.md']);
    expect(hits.map((hit) => hit.superseded ?? false)).toEqual([false, true, true]);
  });

  it('brings in every replacement of a fact that two newer facts supersede', async () => {
    const fact = (id: string, statement: string, supersedes: string[]) =>
      store.create(`facts/${id}.md`, { data: { id, statement, trust: 'owner', supersedes }, body: `${statement}\n` });
    await fact('plan', 'The offsite is in Porto in March', []);
    await fact('place', 'The team meets in Lisbon instead', ['plan']);
    await fact('date', 'It moved to April', ['plan']);
    const index = openIndex();
    await index.start();
    const { hits } = await index.search({ query: 'offsite Porto', mode: 'lexical' });
    expect(paths(hits).toSorted()).toEqual(['facts/date.md', 'facts/place.md', 'facts/plan.md']);
    expect(paths(hits).at(-1)).toBe('facts/plan.md');
  });

  it('does not let an extracted fact supersede one the owner wrote', async () => {
    await store.create('facts/owner.md', {
      data: { id: 'owner', statement: 'My dentist is Dr Lee', trust: 'owner' },
      body: 'My dentist is Dr Lee.\n',
    });
    await store.create('facts/mail.md', {
      data: { id: 'mail', statement: 'Dentist is Dr Smith', trust: 'extracted', supersedes: ['owner'] },
      body: 'Dentist is Dr Smith.\n',
    });
    const index = openIndex();
    await index.start();
    const { hits } = await index.search({ query: 'dentist Lee' });
    expect(hits.find((hit) => hit.path === 'facts/owner.md')?.superseded).toBeUndefined();
    expect(paths(hits)[0]).toBe('facts/owner.md');
  });

  it('answers by words while the embeddings endpoint is down, and embeds by itself once it is back', async () => {
    await store.create('facts/f1.md', {
      data: { statement: 'Bob wants an answer by Monday' },
      body: 'Bob: answer Monday\n',
    });
    await store.create('facts/f2.md', { data: { statement: 'Alice moved to Lyon' }, body: 'Alice lives in Lyon\n' });
    // A port that was free a moment ago: nothing listens on it yet.
    const probe = createServer();
    await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
    const port = (probe.address() as AddressInfo).port;
    await new Promise((resolve) => probe.close(resolve));
    const warnings: string[] = [];
    const infos: string[] = [];
    const embedder = new OpenAiEmbedder({
      baseUrl: `http://127.0.0.1:${port}/v1`,
      model: 'fake-embed',
      apiKey: 'sk-secret-123456',
    });
    const index = openIndex({
      embedder,
      logger: { warn: (message) => warnings.push(message), info: (message) => infos.push(message) },
      // Each try 1 s after the last: on a loaded machine several may fail before the endpoint is up, and the
      // doubling wait (2 s, 4 s, 8 s, …) would outlast the test.
      maxRetryMs: 1_000,
    });
    await index.start();
    await waitUntil(() => index.status().lastError !== undefined, 'the first failed attempt');
    expect(index.status()).toMatchObject({ notes: 2, embedded: 0, pending: 2, model: 'fake-embed' });
    expect(index.status().lastError).toMatch(/could not be reached/);
    const down = await index.search({ query: 'Bob answer' });
    expect(down.mode).toBe('lexical');
    expect(down.degraded).toMatch(/embeddings unavailable/);
    expect(paths(down.hits)).toEqual(['facts/f1.md']);
    expect(warnings.join('\n')).toMatch(/2 notes pending/);
    expect(warnings.join('\n')).not.toContain('sk-secret-123456');

    // The endpoint comes up on that port: a fake model answering hashing vectors.
    const hashing = new HashingEmbedder();
    let requests = 0;
    const server = createServer((request, response) => {
      let text = '';
      request.on('data', (chunk: Buffer) => {
        text += chunk.toString('utf8');
      });
      request.on('end', () => {
        requests++;
        const body = JSON.parse(text) as { input: string[] };
        response.writeHead(200, { 'content-type': 'application/json' });
        response.end(
          JSON.stringify({
            data: body.input.map((input, index) => ({ index, embedding: Array.from(hashing.embedOne(input)) })),
          }),
        );
      });
    });
    servers.push(server);
    await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
    // No call from the test: the retry timer (every 1 s here) finds it.
    await waitUntil(() => index.status().pending === 0, 'the notes to be embedded after the outage');
    expect(index.status()).toMatchObject({ notes: 2, embedded: 2, pending: 0 });
    expect(index.status().lastError).toBeUndefined();
    expect(infos.join('\n')).toMatch(/embeddings are back/);
    const up = await index.search({ query: 'Bob answer' });
    expect(up).toMatchObject({ mode: 'hybrid' });
    expect(up.degraded).toBeUndefined();
    expect(paths(up.hits)[0]).toBe('facts/f1.md');
    expect(requests).toBeGreaterThanOrEqual(2);
  });

  it('retries when its backoff timer ends even if the wall clock says it is early (stands still, stepped back)', async () => {
    // A timer runs on the monotonic clock and may fire a millisecond before `Date.now()` reaches the retry time;
    // an NTP step can set the wall clock back by more. A retry that found itself "early" and returned was never
    // tried again. Here the wall clock stands still after the failure: only the timer can say the wait is over.
    await store.create('facts/f1.md', { data: { statement: 'Bob wants an answer by Monday' }, body: 'Monday\n' });
    const embedder = new CountingEmbedder('counting');
    embedder.failing = true;
    const index = openIndex({ embedder, maxRetryMs: 50 });
    vi.useFakeTimers({ toFake: ['Date'] });
    try {
      await index.start();
      await waitUntil(() => index.status().lastError !== undefined, 'the first failed attempt');
      embedder.failing = false;
      await waitUntil(() => index.status().pending === 0, 'the retry after the backoff, with the wall clock stopped');
      expect(index.status()).toMatchObject({ embedded: 1, pending: 0 });
      expect(embedder.texts).toBe(1);
    } finally {
      vi.useRealTimers();
    }
  });

  it('closes at once while a request to a hanging endpoint is in flight', async () => {
    await store.create('mail/a.md', { data: { subject: 'A' }, body: 'a\n' });
    let received = false;
    const server = createServer(() => {
      received = true;
    });
    servers.push(server);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as AddressInfo).port;
    const embedder = new OpenAiEmbedder({ baseUrl: `http://127.0.0.1:${port}/v1`, model: 'm', timeoutMs: 600_000 });
    const index = openIndex({ embedder });
    await index.start();
    await waitUntil(() => received, 'the embedding request to arrive');
    // Would take the request's 10 minutes without the abort; the test's own timeout is far shorter.
    await index.close();
    expect(index.status()).toMatchObject({ pending: 1 });
  });

  it('says so when some notes still wait for their vectors, and ranks them by words meanwhile', async () => {
    const embedder = new CountingEmbedder('counting-1');
    // Hashing vectors of unrelated notes still have a small cosine; as with the hashing embedder, that is noise.
    const index = openIndex({ embedder, minimumSimilarity: 0.15 });
    await index.start();
    await index.embedPending();
    embedder.failing = true;
    await store.create('mail/a.md', { data: { subject: 'Quarterly report' }, body: 'numbers\n' });
    await store.create('mail/b.md', { data: { subject: 'Holiday' }, body: 'beach\n' });
    await index.refresh('mail/a.md');
    await index.refresh('mail/b.md');
    embedder.failing = false;
    // Nothing embedded at all: lexical, and why.
    const none = await index.search({ query: 'quarterly report' });
    expect(none.mode).toBe('lexical');
    expect(none.degraded).toMatch(/still being made|unavailable/);
    expect(paths(none.hits)).toEqual(['mail/a.md']);
    await index.embedPending();
    embedder.failing = true;
    await store.create('mail/c.md', { data: { subject: 'Quarterly plan' }, body: 'plans\n' });
    await index.refresh('mail/c.md');
    embedder.failing = false;
    const some = await index.search({ query: 'quarterly' });
    expect(some.mode).toBe('hybrid');
    expect(some.degraded).toMatch(/1 of 3 notes have no vector yet/);
    expect(paths(some.hits).toSorted()).toEqual(['mail/a.md', 'mail/c.md']);
  });

  it('keeps vectors across restarts, shares them between two indexes, and re-embeds lazily on a model change', async () => {
    for (const name of ['a', 'b', 'c']) {
      await store.create(`mail/${name}.md`, { data: { subject: `Note ${name}` }, body: `text of ${name}\n` });
    }
    const first = new CountingEmbedder('counting-1');
    const one = openIndex({ embedder: first });
    await one.start();
    await waitUntil(() => one.status().pending === 0, 'the first embedding');
    expect(first.texts).toBe(3);
    const file = path.join(dataDir, 'memory/index', cacheFileName('counting-1'));
    expect(one.cacheFile).toBe(file);
    const size = (await stat(file)).size;

    // A second index over the same data directory (the worker beside the server): the vectors are read, not made.
    const again = new CountingEmbedder('counting-1');
    const two = openIndex({ embedder: again });
    await two.start();
    expect(two.status()).toMatchObject({ embedded: 3, pending: 0 });
    // One process embeds a new note; the other, whose own attempts fail meanwhile, then finds its vector on disk.
    again.failing = true;
    await store.create('mail/d.md', { data: { subject: 'Note d' }, body: 'text of d\n' });
    await two.refresh('mail/d.md');
    await one.refresh('mail/d.md');
    await waitUntil(() => one.status().pending === 0, 'd embedded by the first index');
    again.failing = false;
    await two.embedPending();
    expect(two.status()).toMatchObject({ embedded: 4, pending: 0 });
    expect(again.texts).toBe(0);

    // Another model: everything is embedded again, into its own file; the old file is left as it was.
    const other = new CountingEmbedder('counting-2');
    const three = openIndex({ embedder: other });
    await three.start();
    expect(three.status()).toMatchObject({ notes: 4, model: 'counting-2' });
    await waitUntil(() => three.status().pending === 0, 'the re-embedding under the new model');
    expect(other.texts).toBe(4);
    expect((await stat(file)).size).toBeGreaterThan(size);
    const otherFile = path.join(dataDir, 'memory/index', cacheFileName('counting-2'));
    expect((await readFile(otherFile, 'utf8')).split('\n')[0]).toBe(
      '{"format":"assistant-memory-vectors","version":1,"model":"counting-2"}',
    );
  });

  it('rebuilds from the notes alone: a deleted or corrupt cache costs embeddings, never a note', async () => {
    for (const name of ['a', 'b']) {
      await store.create(`mail/${name}.md`, { data: { subject: `Invoice ${name}` }, body: `invoice ${name}\n` });
    }
    const embedder = new CountingEmbedder('counting-1');
    const index = openIndex({ embedder });
    await index.start();
    await waitUntil(() => index.status().pending === 0, 'the first embedding');
    expect(embedder.texts).toBe(2);
    await index.rebuild();
    expect(embedder.texts).toBe(4);
    expect(index.status()).toMatchObject({ notes: 2, embedded: 2, pending: 0 });
    await index.close();

    // A torn and a garbled line: skipped, their notes embedded again; the rest used.
    const file = index.cacheFile;
    const lines = (await readFile(file, 'utf8')).trimEnd().split('\n');
    expect(lines).toHaveLength(3);
    await writeFile(file, `${lines[0]}\n${lines[1]}\nnot json\n${(lines[2] ?? '').slice(0, 20)}`);
    const repaired = new CountingEmbedder('counting-1');
    const reopened = openIndex({ embedder: repaired });
    await reopened.start();
    await waitUntil(() => reopened.status().pending === 0, 'the re-embedding of the lost vector');
    expect(repaired.texts).toBe(1);

    // An index directory that cannot be used at all (a file in its place): searches work, it says why in the log.
    await reopened.close();
    await rm(path.join(dataDir, 'memory'), { recursive: true });
    await writeFile(path.join(dataDir, 'memory'), 'not a directory');
    const warnings: string[] = [];
    const blocked = openIndex({ logger: { warn: (message) => warnings.push(message), info: () => {} } });
    await blocked.start();
    expect(paths((await blocked.search({ query: 'invoice b' })).hits)[0]).toBe('mail/b.md');
    expect(blocked.status()).toMatchObject({ notes: 2, embedded: 2 });
    expect(warnings.join('\n')).toMatch(/could not (read|write)/);
    await blocked.close();
    await rm(path.join(dataDir, 'memory'));

    // No index directory at all.
    const fresh = openIndex();
    await fresh.start();
    expect(paths((await fresh.search({ query: 'invoice b' })).hits)[0]).toBe('mail/b.md');
  });
});
