// Memory index speed and size at 10,000 notes (a mix of contacts, facts and mail-like notes, generated): the time to
// build the index from nothing (read, postings, hashing vectors, cache written) and to start again with the cache,
// the disk size of data/memory/index, the memory the index holds, the incremental reindex of one changed note, and
// search latency, lexical and hybrid with the hashing embedder.
// With `--processes`, it then runs `assistant start` over the same notes and prints the server's and the worker's
// resident set (VmRSS) idle, then with their indexes loaded (the server's by a search, the worker's by a
// `memory.reindex` task), each sampled until it settles.
// `npm run bench:memory [-- --notes 10000 --queries 500 --dir /path --json --processes]`.
// It prints figures; it never fails for being slow. Results go in docs/performance.md.
import { mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { HashingEmbedder, MemoryIndex } from '@assistant/memory';
import { FileNoteStore } from '@assistant/notes';
import { freePort } from '../tests/helpers/free-port.ts';
import { cliMain, mib, pollUntil, residentBytes, runNode } from './bench-processes.ts';

const { values } = parseArgs({
  options: {
    notes: { type: 'string', default: '10000' },
    queries: { type: 'string', default: '500' },
    changes: { type: 'string', default: '200' },
    dir: { type: 'string', default: os.tmpdir() },
    json: { type: 'boolean', default: false },
    processes: { type: 'boolean', default: false },
  },
});
const noteCount = Number(values.notes);
const queryCount = Number(values.queries);
const changeCount = Number(values.changes);
const gc = (globalThis as { gc?: () => void }).gc;

/** A small deterministic generator (mulberry32), so every run indexes the same notes. */
function seeded(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let value = state;
    value = Math.imul(value ^ (value >>> 15), value | 1);
    value ^= value + Math.imul(value ^ (value >>> 7), value | 61);
    return ((value ^ (value >>> 14)) >>> 0) / 4_294_967_296;
  };
}
const random = seeded(35);
const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)] as T;

// A vocabulary with a long tail: a few hundred common words drawn often, thousands of made-up rarer ones.
const common = (
  'meeting invoice contract appointment answer project review deadline monday tuesday wednesday thursday friday ' +
  'report budget travel flight hotel dinner lunch call release build test deploy server client customer payment ' +
  'order delivery parcel address phone family school doctor dentist insurance tax bank account password renewal ' +
  'offer interview recruiter holiday weekend birthday gift reminder follow promise update change moved cancelled'
).split(' ');
const syllables = 'ka lo mi ren dus tor vel an pe qui sha zor bel fin gra hol jun mar nis ost'.split(' ');
const rare = Array.from({ length: 5000 }, () =>
  Array.from({ length: 2 + Math.floor(random() * 3) }, () => pick(syllables)).join(''),
);
const firstNames = 'alice bob carol dave erin frank grace heidi ivan judy mallory niaj olivia peggy rupert sybil'.split(
  ' ',
);
const lastNames = Array.from({ length: 200 }, () => pick(syllables) + pick(syllables) + pick(syllables));

function sentence(words: number): string {
  return Array.from({ length: words }, () => (random() < 0.6 ? pick(common) : pick(rare))).join(' ');
}

interface Generated {
  path: string;
  text: string;
}

function yamlList(items: readonly string[]): string {
  return `[${items.map((item) => JSON.stringify(item)).join(', ')}]`;
}

function generate(count: number): { notes: Generated[]; contacts: string[] } {
  const notes: Generated[] = [];
  const contacts: string[] = [];
  const contactCount = Math.round(count * 0.1);
  const factCount = Math.round(count * 0.4);
  for (let index = 0; index < contactCount; index++) {
    const name = `${pick(firstNames)} ${pick(lastNames)}`;
    const slug = `${name.replace(' ', '-')}-${index}`;
    contacts.push(name);
    notes.push({
      path: `contacts/${slug}.md`,
      text: `---\nname: ${JSON.stringify(name)}\naliases: []\nemails: ${yamlList([`${slug}@example.com`])}\nhandles: {github: ${yamlList([`${slug}-gh`])}}\ncreated_by: extraction\n---\n${sentence(12)}\n`,
    });
  }
  for (let index = 0; index < factCount; index++) {
    const about = `contact:${notes[Math.floor(random() * contactCount)]?.path.slice('contacts/'.length, -3)}`;
    const statement = sentence(8 + Math.floor(random() * 8));
    // One fact in ten supersedes an earlier one.
    const supersedes =
      index > 0 && index % 10 === 0 ? [`f${index - 1 - Math.floor(random() * Math.min(index, 50))}`] : [];
    notes.push({
      path: `facts/f${index}.md`,
      text: `---\nid: f${index}\nstatement: ${JSON.stringify(statement)}\nabout: ${yamlList([about])}\nsource: mail/m${index}.md\ntrust: extracted\nobserved_at: 2026-11-01T10:00:00Z\nconfidence: 0.8\nsupersedes: ${yamlList(supersedes)}\n---\n${statement}\n`,
    });
  }
  for (let index = 0; notes.length < count; index++) {
    const from = pick(contacts);
    const paragraphs = Array.from({ length: 2 + Math.floor(random() * 4) }, () =>
      sentence(20 + Math.floor(random() * 40)),
    );
    notes.push({
      path: `email/bench/m${index}.md`,
      text: `---\nsubject: ${JSON.stringify(sentence(5))}\nfrom: ${JSON.stringify(`${from} <${from.replace(' ', '.')}@example.com>`)}\ndate: 2026-11-0${1 + (index % 9)}\nstatus: read\n---\nHello,\n\n${paragraphs.join('\n\n')}\n\n-- \n${from}\n`,
    });
  }
  return { notes, contacts };
}

function percentile(sorted: readonly number[], fraction: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * fraction))] ?? 0;
}

function memoryMiB(): { rss: number; heap: number; external: number } {
  gc?.();
  gc?.();
  const usage = process.memoryUsage();
  return { rss: usage.rss / 1024 / 1024, heap: usage.heapUsed / 1024 / 1024, external: usage.external / 1024 / 1024 };
}

async function directoryBytes(directory: string): Promise<number> {
  let total = 0;
  for (const name of await readdir(directory).catch(() => [] as string[]))
    total += (await stat(path.join(directory, name))).size;
  return total;
}

async function timeEach(count: number, action: (index: number) => Promise<unknown>): Promise<number[]> {
  const times: number[] = [];
  for (let index = 0; index < count; index++) {
    const started = performance.now();
    await action(index);
    times.push(performance.now() - started);
  }
  return times.sort((left, right) => left - right);
}

const dataDir = await mkdtemp(path.join(path.resolve(values.dir), 'assistant-bench-memory-'));
try {
  const notesRoot = path.join(dataDir, 'notes');
  const { notes, contacts } = generate(noteCount);
  for (const note of notes) {
    await mkdir(path.dirname(path.join(notesRoot, note.path)), { recursive: true });
    await writeFile(path.join(notesRoot, note.path), note.text);
  }
  const notesBytes = notes.reduce((sum, note) => sum + Buffer.byteLength(note.text), 0);
  const store = new FileNoteStore({ root: notesRoot });
  const embedder = new HashingEmbedder();

  // The first index lives in this function only, so it is garbage by the restart and does not weigh on it.
  const first = async () => {
    const before = memoryMiB();
    const buildStarted = performance.now();
    const index = new MemoryIndex({ notes: store, dataDir, embedder });
    await index.start();
    // The hashing vectors are made during start and written to the cache just after: the build includes the write.
    await index.embedPending();
    const buildMs = performance.now() - buildStarted;
    const status = index.status();
    const loaded = memoryMiB();
    const indexDirectory = path.join(dataDir, 'memory', 'index');
    const diskBytes = await directoryBytes(indexDirectory);

    // One changed note at a time: written as an editor would, then refreshed and timed (the watch sees it too).
    const mails = notes.filter((note) => note.path.startsWith('email/'));
    const refreshOnly: number[] = [];
    for (let change = 0; change < changeCount; change++) {
      const note = mails[change % mails.length] as Generated;
      await writeFile(path.join(notesRoot, note.path), `${note.text}\nP.S. ${sentence(6)} (${change})\n`);
      const started = performance.now();
      await index.refresh(note.path);
      refreshOnly.push(performance.now() - started);
    }
    refreshOnly.sort((left, right) => left - right);

    const queries = Array.from({ length: queryCount }, (_, number) => {
      const words = Array.from({ length: 2 + (number % 3) }, () => pick(common));
      // One query in four names a contact, as "what did Alice say about the invoice" does.
      if (number % 4 === 0) words.unshift(pick(contacts));
      return words.join(' ');
    });
    // Warm-up, so the first figures are not the JIT's.
    for (const query of queries.slice(0, 20)) {
      await index.search({ query, mode: 'lexical' });
      await index.search({ query });
    }
    const lexical = await timeEach(queryCount, (number) =>
      index.search({ query: queries[number] as string, mode: 'lexical' }),
    );
    const hybrid = await timeEach(queryCount, (number) => index.search({ query: queries[number] as string }));
    await index.close();
    return { before, buildMs, status, loaded, diskBytes, refreshOnly, lexical, hybrid };
  };
  const { before, buildMs, status, loaded, diskBytes, refreshOnly, lexical, hybrid } = await first();
  memoryMiB();

  // A restart: postings rebuilt from the notes, vectors read from the cache instead of made.
  const restartStarted = performance.now();
  const again = new MemoryIndex({ notes: store, dataDir, embedder });
  await again.start();
  const restartMs = performance.now() - restartStarted;
  const restartStatus = again.status();
  await again.close();

  const figures = {
    notes: status.notes,
    notes_mib: Number((notesBytes / 1024 / 1024).toFixed(1)),
    embedded: status.embedded,
    model: status.model,
    build_ms: Math.round(buildMs),
    restart_ms: Math.round(restartMs),
    restart_embedded_from_cache: restartStatus.embedded,
    disk_mib: Number((diskBytes / 1024 / 1024).toFixed(1)),
    rss_before_mib: Math.round(before.rss),
    rss_loaded_mib: Math.round(loaded.rss),
    rss_index_mib: Math.round(loaded.rss - before.rss),
    heap_index_mib: Math.round(loaded.heap - before.heap + loaded.external - before.external),
    reindex_p50_ms: Number(percentile(refreshOnly, 0.5).toFixed(2)),
    reindex_p95_ms: Number(percentile(refreshOnly, 0.95).toFixed(2)),
    lexical_p50_ms: Number(percentile(lexical, 0.5).toFixed(2)),
    lexical_p95_ms: Number(percentile(lexical, 0.95).toFixed(2)),
    hybrid_p50_ms: Number(percentile(hybrid, 0.5).toFixed(2)),
    hybrid_p95_ms: Number(percentile(hybrid, 0.95).toFixed(2)),
  };
  const processes = values.processes ? await processFigures(dataDir) : undefined;
  if (values.json) process.stdout.write(`${JSON.stringify({ ...figures, processes })}\n`);
  else {
    process.stdout.write(
      `memory index bench in ${path.resolve(values.dir)}, node ${process.version}, ${os.cpus().length} cpus${gc ? '' : ' (no --expose-gc: RSS is rough)'}\n` +
        `  notes: ${figures.notes} (${figures.notes_mib} MiB of markdown: 10% contacts, 40% facts, 50% mail), ${figures.model}\n` +
        `  build from nothing: ${figures.build_ms} ms (${figures.embedded} embedded); restart with the cache: ${figures.restart_ms} ms (${figures.restart_embedded_from_cache} vectors read)\n` +
        `  disk (data/memory/index): ${figures.disk_mib} MiB\n` +
        `  RSS: ${figures.rss_before_mib} MiB before, ${figures.rss_loaded_mib} MiB with the index loaded (+${figures.rss_index_mib} MiB, of which ${figures.heap_index_mib} MiB live heap and buffers; the rest is V8 keeping freed pages)\n` +
        `  reindex of one changed note: p50 ${figures.reindex_p50_ms} ms, p95 ${figures.reindex_p95_ms} ms (goal ≤ 50 ms)\n` +
        `  search lexical: p50 ${figures.lexical_p50_ms} ms, p95 ${figures.lexical_p95_ms} ms (goal p50 ≤ 10 ms)\n` +
        `  search hybrid (hashing): p50 ${figures.hybrid_p50_ms} ms, p95 ${figures.hybrid_p95_ms} ms (goal p50 ≤ 30 ms)\n`,
    );
    if (processes) {
      process.stdout.write(
        `  assistant start over these notes (RSS settled): server ${mib(processes.server.idle)} idle, ${mib(processes.server.loaded)} with its index (first search ${processes.server.firstSearchMs} ms); worker ${mib(processes.worker.idle)} idle, ${mib(processes.worker.loaded)} with its index (memory.reindex ${processes.worker.reindexMs} ms)\n`,
      );
    }
  }
} finally {
  await rm(dataDir, { recursive: true, force: true });
}

/** Samples a process's resident set every 250 ms until it moved by at most 1 MB over 3 s (at most 30 s). */
async function settledRss(pid: number): Promise<number | undefined> {
  const window: number[] = [];
  const deadline = performance.now() + 30_000;
  for (;;) {
    window.push(residentBytes(pid) ?? 0);
    if (window.length > 12) window.shift();
    if (window.length === 12 && Math.max(...window) - Math.min(...window) <= 2 ** 20) return window.at(-1);
    if (performance.now() > deadline) return window.at(-1);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

/** `assistant start` over the generated notes: the server's and the worker's RSS idle and with their indexes. */
async function processFigures(directory: string) {
  const port = await freePort();
  const configFile = path.join(directory, 'config.yaml');
  // data_dir is the bench's directory, so its notes/ are the generated notes; no model profile (hashing vectors).
  await writeFile(
    configFile,
    `data_dir: .\nserver:\n  host: 127.0.0.1\n  port: ${port}\nworker:\n  shutdown_grace: 5s\n`,
  );
  const start = runNode([cliMain, 'start', '--config', configFile]);
  try {
    const server = Number((await start.waitForOutput(/^\[assistant\] server started \(pid (\d+)\)$/m, 30_000))[1]);
    const worker = Number((await start.waitForOutput(/^\[assistant\] worker started \(pid (\d+)\)$/m, 30_000))[1]);
    await start.waitForOutput(/^\[server\] .*listening on http:\/\/127\.0\.0\.1:\d+/m, 30_000);
    await start.waitForOutput(/^\[worker\] .*worker ready/m, 30_000);
    const serverIdle = await settledRss(server);
    const workerIdle = await settledRss(worker);
    const token = (await readFile(path.join(directory, 'api-token'), 'utf8')).trim();
    const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
    const base = `http://127.0.0.1:${port}`;
    const searchStarted = performance.now();
    const search = await fetch(`${base}/api/memory/search?q=dentist%20appointment`, { headers });
    if (!search.ok) throw new Error(`GET /api/memory/search: ${search.status} ${await search.text()}`);
    const firstSearchMs = Math.round(performance.now() - searchStarted);
    const reindexStarted = performance.now();
    const enqueued = await fetch(`${base}/api/tasks`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ type: 'memory.reindex', payload: {} }),
    });
    if (enqueued.status !== 201) throw new Error(`POST /api/tasks: ${enqueued.status} ${await enqueued.text()}`);
    const { id } = (await enqueued.json()) as { id: string };
    await pollUntil('memory.reindex done', 300_000, 250, async () => {
      const task = (await (await fetch(`${base}/api/tasks/${id}`, { headers })).json()) as { state?: string };
      if (task.state === 'failed') throw new Error(`memory.reindex failed: ${JSON.stringify(task)}`);
      return task.state === 'done' ? true : undefined;
    });
    const reindexMs = Math.round(performance.now() - reindexStarted);
    return {
      server: { idle: serverIdle, loaded: await settledRss(server), firstSearchMs },
      worker: { idle: workerIdle, loaded: await settledRss(worker), reindexMs },
    };
  } finally {
    start.child.kill('SIGTERM');
    await Promise.race([start.exited, new Promise((resolve) => setTimeout(resolve, 20_000).unref())]);
    if (start.child.exitCode === null && start.child.signalCode === null) start.child.kill('SIGKILL');
  }
}
