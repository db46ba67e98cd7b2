// Note store speed at 1,000 and 50,000 notes: create (atomic, fsynced) per second, update (under the note's lock)
// per second, the cost of taking and releasing a note lock alone, an indexed lookup by id, and a field query that
// reads every note. `npm run bench:notes [-- --counts 1000,50000 --dir /path --json]`.
// It prints figures; it never fails for being slow. Results go in docs/performance.md.
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { emailStore, FileNoteStore, withFileLock } from '@assistant/notes';

const { values } = parseArgs({
  options: {
    counts: { type: 'string', default: '1000,50000' },
    dir: { type: 'string', default: os.tmpdir() },
    json: { type: 'boolean', default: false },
  },
});
const counts = values.counts.split(',').map(Number);
const concurrency = 16;

interface Result {
  notes: number;
  createPerSecond: number;
  updatePerSecond: number;
  lockP50Us: number;
  indexStartMs: number;
  lookupP50Ms: number;
  lookupP99Ms: number;
  queryMs: number;
  queryMatches: number;
}

function percentile(sorted: number[], fraction: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * fraction))] ?? 0;
}

async function measure(count: number): Promise<Result> {
  const root = await mkdtemp(path.join(path.resolve(values.dir), 'assistant-bench-notes-'));
  try {
    const store = new FileNoteStore({ root });
    const started = performance.now();
    for (let index = 0; index < count; index += concurrency) {
      await Promise.all(
        Array.from({ length: Math.min(concurrency, count - index) }, (_, offset) => {
          const uid = index + offset;
          return store.create(`email/bench/${uid}.md`, {
            data: { message_id: `<${uid}@bench>`, uid, status: uid % 10 === 0 ? 'new' : 'read', date: '2026-11-22' },
            body: `# Message ${uid}\n\nSome text of a typical length for a short mail, about a line or two.\n`,
          });
        }),
      );
    }
    const createPerSecond = (count / (performance.now() - started)) * 1_000;

    // Updates of distinct notes, 16 at a time: each takes and releases its note's lock around the read-check-write.
    const updates = Math.min(count, 1_000);
    const updateStarted = performance.now();
    for (let index = 0; index < updates; index += concurrency) {
      await Promise.all(
        Array.from({ length: Math.min(concurrency, updates - index) }, (_, offset) =>
          store.update(`email/bench/${index + offset}.md`, { set: { flagged: true } }),
        ),
      );
    }
    const updatePerSecond = (updates / (performance.now() - updateStarted)) * 1_000;

    // The lock alone: take and release one note's lock 1,000 times in a row, nothing done while holding it.
    const locks: number[] = [];
    for (let index = 0; index < 1_000; index++) {
      const lockStarted = performance.now();
      await withFileLock(path.join(root, 'email/bench/0.md'), async () => {});
      locks.push(performance.now() - lockStarted);
    }
    locks.sort((left, right) => left - right);

    const mail = emailStore(store, 'bench');
    const indexStarted = performance.now();
    await mail.open();
    const indexStartMs = performance.now() - indexStarted;
    const lookups: number[] = [];
    for (let index = 0; index < 1_000; index++) {
      const uid = Math.floor(Math.random() * count);
      const lookupStarted = performance.now();
      const found = await mail.findBy('message_id', `<${uid}@bench>`);
      lookups.push(performance.now() - lookupStarted);
      if (found.length !== 1) throw new Error(`lookup of ${uid} found ${found.length} notes`);
    }
    lookups.sort((left, right) => left - right);
    await mail.close();

    const queryStarted = performance.now();
    const matches = await store.query({ folder: 'email', where: { status: 'new' } });
    const queryMs = performance.now() - queryStarted;
    return {
      notes: count,
      createPerSecond,
      updatePerSecond,
      lockP50Us: percentile(locks, 0.5) * 1_000,
      indexStartMs,
      lookupP50Ms: percentile(lookups, 0.5),
      lookupP99Ms: percentile(lookups, 0.99),
      queryMs,
      queryMatches: matches.length,
    };
  } finally {
    await rm(root, { recursive: true, force: true });
  }
}

const results: Result[] = [];
if (!values.json) {
  process.stdout.write(
    `notes bench in ${path.resolve(values.dir)}, node ${process.version}, ${os.cpus().length} cpus\n`,
  );
  process.stdout.write(
    '  notes  create/s  update/s  lock p50  index start  lookup p50  lookup p99  query (reads all)\n',
  );
}
for (const count of counts) {
  const result = await measure(count);
  results.push(result);
  if (!values.json) {
    process.stdout.write(
      `${String(result.notes).padStart(7)} ${result.createPerSecond.toFixed(0).padStart(9)} ${result.updatePerSecond.toFixed(0).padStart(9)} ${`${result.lockP50Us.toFixed(0)}µs`.padStart(9)} ${`${result.indexStartMs.toFixed(0)}ms`.padStart(12)} ${`${result.lookupP50Ms.toFixed(3)}ms`.padStart(11)} ${`${result.lookupP99Ms.toFixed(3)}ms`.padStart(11)} ${`${result.queryMs.toFixed(0)}ms`.padStart(10)} (${result.queryMatches} matches)\n`,
    );
  }
}
if (values.json) process.stdout.write(`${JSON.stringify(results, null, 2)}\n`);
