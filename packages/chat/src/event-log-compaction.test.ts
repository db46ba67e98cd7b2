import { constants } from 'node:fs';
import { link, mkdtemp, open, readdir, readFile, rm, stat, unlink, utimes, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type ChatEventEntry, ChatEventLog } from './chat-events.ts';
import { compactingFile, type EventLogRetention, lostInCompaction } from './event-log-compaction.ts';
import { readHeader } from './event-log-header.ts';

let root: string;
let log: ChatEventLog;
const day = 24 * 3_600_000;
/** Compacts whatever is past 2 KiB at once, whatever the age. */
const small: EventLogRetention = { maxBytes: 2048, maxAgeMs: 365 * day, idleMs: 0 };

beforeEach(async () => {
  root = await mkdtemp(path.join(os.tmpdir(), 'assistant-event-compaction-'));
  log = new ChatEventLog({ directory: path.join(root, 'events') });
});

afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

async function appendMany(conversation: string, count: number, from = 0): Promise<number[]> {
  const offsets: number[] = [];
  for (let n = from; n < from + count; n += 1) {
    offsets.push(await log.append(conversation, { type: 'token', n, text: `piece ${n} `.padEnd(60, '.') }));
  }
  return offsets;
}

/** The offset of the first event a compacted log keeps: where its `compacted` entry says to go on. */
async function firstKept(conversation: string): Promise<number> {
  const [first] = (await log.read(conversation, 0)).entries;
  if (first?.event.type !== 'compacted') throw new Error(`${conversation} was not compacted`);
  return first.offset;
}

async function readAll(conversation: string, fromOffset = 0): Promise<ChatEventEntry[]> {
  const entries: ChatEventEntry[] = [];
  let position = fromOffset;
  for (;;) {
    const read = await log.read(conversation, position);
    entries.push(...read.entries);
    if (read.next === position) return entries;
    position = read.next;
  }
}

describe('ChatEventLog compaction', () => {
  it('cuts an idle log past maxBytes to its newest half, keeping every kept offset and the end', async () => {
    const offsets = await appendMany('c1', 200);
    const end = await log.end('c1');
    expect((await stat(log.file('c1'))).size).toBeGreaterThan(10_000);

    const result = await log.compact('c1', { retention: small });
    expect(result.removedBytes).toBeGreaterThan(0);
    expect((await stat(log.file('c1'))).size).toBeLessThanOrEqual(1024 + 200);
    expect(await log.end('c1')).toBe(end);

    // Kept events have the offsets they had; reading from any kept offset goes on as before.
    const kept = await readAll('c1', result.removedBytes);
    expect(kept.length).toBeGreaterThan(5);
    expect(kept.at(-1)).toEqual({ offset: end, event: expect.objectContaining({ n: 199 }) });
    for (const entry of kept) expect(entry.offset).toBe(offsets[entry.event.n as number]);
    const fromKept = await log.read('c1', offsets[195]);
    expect(fromKept.entries.map((entry) => entry.event.n)).toEqual([196, 197, 198, 199]);

    // An offset that was removed gets one `compacted` entry saying so, then the first kept event.
    const fromGone = await log.read('c1', offsets[10]);
    expect(fromGone.entries[0]).toEqual({
      offset: result.removedBytes,
      event: expect.objectContaining({ type: 'compacted', from: offsets[10] }),
    });
    expect(fromGone.entries.slice(1)).toEqual(kept);

    // New events go on from the old end.
    const next = await log.append('c1', { type: 'message', n: 200 });
    expect(next).toBeGreaterThan(end);
    expect((await log.read('c1', end)).entries).toEqual([{ offset: next, event: expect.objectContaining({ n: 200 }) }]);
    // A second compaction keeps the offsets too.
    await appendMany('c1', 100, 201);
    const secondEnd = await log.end('c1');
    expect((await log.compact('c1', { retention: small })).removedBytes).toBeGreaterThan(0);
    expect(await log.end('c1')).toBe(secondEnd);
    const firstAfterSecond = await firstKept('c1');
    expect(firstAfterSecond).toBeGreaterThan(offsets[198] as number);
    const resumed = await readAll('c1', offsets[198]);
    expect(resumed[0]?.event.type).toBe('compacted');
    expect(resumed.slice(1)).toEqual(await readAll('c1', firstAfterSecond));
  });

  it('leaves a log appended to within idleMs, or within its size and age, as it is', async () => {
    await appendMany('c1', 100);
    expect(await log.compact('c1', { retention: { ...small, maxBytes: 8192, idleMs: 60_000 } })).toEqual({
      removedBytes: 0,
      skipped: 'recent',
    });
    expect(await log.compact('c1', { retention: { ...small, maxBytes: 1024 * 1024 } })).toEqual({
      removedBytes: 0,
      skipped: 'within-retention',
    });
    expect(await log.compact('missing', { retention: small })).toEqual({ removedBytes: 0, skipped: 'missing' });
  });

  it('compacts a log in use once it passes twice maxBytes, so a conversation never idle is bounded too', async () => {
    await appendMany('c1', 100);
    const size = (await stat(log.file('c1'))).size;
    const busy = { maxBytes: Math.floor(size / 2) - 1, maxAgeMs: 365 * day, idleMs: 60_000 };
    expect((await log.compact('c1', { retention: busy })).removedBytes).toBeGreaterThan(0);
    expect((await stat(log.file('c1'))).size).toBeLessThan(size / 2);
  });

  it('removes events older than maxAgeMs, and all of them when every one is', async () => {
    // After the appends' own file times (a log written after `now` would count as in use), whatever today is.
    const now = new Date(Math.ceil(Date.now() / 1_000) * 1_000 + 60_000);
    for (let n = 0; n < 10; n += 1) {
      await log.append('c1', { type: 'message', n, at: new Date(now.getTime() - (10 - n) * day).toISOString() });
    }
    const end = await log.end('c1');
    const retention = { maxBytes: 1024 * 1024, maxAgeMs: 3.5 * day, idleMs: 0 };
    expect((await log.compact('c1', { retention, now })).removedBytes).toBeGreaterThan(0);
    expect((await readAll('c1', end - 1)).length).toBe(0);
    const left = await readAll('c1', await firstKept('c1'));
    expect(left.map((entry) => entry.event.n)).toEqual([7, 8, 9]);

    const later = new Date(now.getTime() + 10 * day);
    await log.compact('c1', { retention, now: later });
    expect(await log.end('c1')).toBe(end);
    expect((await log.read('c1', 0)).entries.map((entry) => entry.event.type)).toEqual(['compacted']);
    const handle = await open(log.file('c1'), 'r');
    try {
      expect(await readHeader(handle)).toMatchObject({ offset: end, copiedTo: end });
    } finally {
      await handle.close();
    }
  });

  it('a follower across a compaction sees every event once, and one that resumes from a removed offset is told', async () => {
    const controller = new AbortController();
    const seen: ChatEventEntry[] = [];
    await appendMany('c1', 100);
    const start = await log.end('c1');
    const following = (async () => {
      for await (const entry of log.follow('c1', { fromOffset: start, signal: controller.signal })) {
        seen.push(entry);
        if (entry.event.n === 299) controller.abort();
      }
    })();
    const offsets: number[] = [];
    for (let round = 0; round < 4; round += 1) {
      offsets.push(...(await appendMany('c1', 50, 100 + round * 50)));
      await log.compact('c1', { retention: small });
    }
    await Promise.race([
      following,
      new Promise((_, reject) => setTimeout(() => reject(new Error('the follower did not see event 299')), 20_000)),
    ]);
    expect(seen.map((entry) => entry.event.n)).toEqual(Array.from({ length: 200 }, (_, index) => 100 + index));
    expect(seen.map((entry) => entry.offset)).toEqual(offsets);

    // A client that reconnects with an offset the compactions removed (its Last-Event-ID) is told, then resumes.
    const resumed: ChatEventEntry[] = [];
    const again = new AbortController();
    for await (const entry of log.follow('c1', { fromOffset: offsets[0] as number, signal: again.signal })) {
      resumed.push(entry);
      if (entry.event.n === 299) again.abort();
    }
    expect(resumed[0]?.event).toMatchObject({ type: 'compacted', from: offsets[0] });
    const numbers = resumed.slice(1).map((entry) => entry.event.n as number);
    expect(numbers.at(-1)).toBe(299);
    expect(numbers).toEqual(Array.from({ length: numbers.length }, (_, index) => 300 - numbers.length + index));
  });

  it('loses no append and duplicates none while compactions run between concurrent writers', async () => {
    const writers = ['a', 'b', 'c'];
    const perWriter = 150;
    let writing = writers.length;
    const controller = new AbortController();
    const seen: ChatEventEntry[] = [];
    const done = new Set<string>();
    const following = (async () => {
      for await (const entry of log.follow('c1', { fromOffset: 0, signal: controller.signal })) {
        seen.push(entry);
        if (entry.event.n === perWriter - 1) done.add(String(entry.event.writer));
        if (done.size === writers.length) controller.abort();
      }
    })();
    const write = async (writer: string) => {
      for (let n = 0; n < perWriter; n += 1) await log.append('c1', { type: 'token', writer, n, text: 'x'.repeat(40) });
      writing -= 1;
    };
    const compact = async () => {
      let compactions = 0;
      while (writing > 0) {
        if ((await log.compact('c1', { retention: { ...small, maxBytes: 4096 } })).removedBytes > 0) compactions += 1;
        await new Promise((resolve) => setImmediate(resolve));
      }
      return compactions;
    };
    const [compactions] = await Promise.all([compact(), ...writers.map(write)]);
    expect(compactions).toBeGreaterThan(2);
    await Promise.race([
      following,
      new Promise((_, reject) =>
        setTimeout(() => reject(new Error('the follower did not see every last event')), 20_000),
      ),
    ]);
    // Each writer's events reach the follower in order, each once; a gap only where it was told of a compaction.
    for (const writer of writers) {
      let last = -1;
      for (const entry of seen) {
        if (entry.event.type === 'compacted') last = Number.NaN;
        if (entry.event.writer !== writer) continue;
        const n = entry.event.n as number;
        if (!Number.isNaN(last)) expect(n, `writer ${writer} after ${last}`).toBe(last + 1);
        else expect(n).toBeGreaterThan(-1);
        last = n;
      }
      expect(last).toBe(perWriter - 1);
    }
    const offsets = seen.map((entry) => entry.offset);
    expect(offsets).toEqual([...offsets].sort((a, b) => a - b));
    expect(new Set(offsets).size).toBe(offsets.length);
    expect(await readdir(log.directory)).toEqual(['c1.jsonl']);
  });

  it.each([
    { compactions: 1, when: 'as soon as the compaction published' },
    // The second header's own copy is of the first compaction's log, not of the file these writers wrote to.
    { compactions: 2, when: 'after a second compaction replaced the new log' },
  ])(
    'an append that landed in the set-aside log after the copy is found and appended again, once: looked at $when',
    async ({ compactions }) => {
      await appendMany('c1', 100);
      const file = log.file('c1');
      // A writer that opened the log before the compaction set it aside, and writes only after it copied.
      const late = await open(file, constants.O_RDWR | constants.O_APPEND);
      const early = await open(file, constants.O_RDWR | constants.O_APPEND);
      const earlyLine = Buffer.from(`${JSON.stringify({ type: 'token', n: 'early', at: new Date().toISOString() })}\n`);
      await early.write(earlyLine);
      const earlyHeader = await readHeader(early);
      await log.compact('c1', { retention: small });
      const lateLine = Buffer.from(`${JSON.stringify({ type: 'token', n: 'late', at: new Date().toISOString() })}\n`);
      await late.write(lateLine);
      const lateHeader = await readHeader(late);
      for (let more = 1; more < compactions; more += 1) {
        // Other writers go on in the new log, and another compaction replaces it before either writer looks.
        await appendMany('c1', 100, 1_000 * more);
        expect((await log.compact('c1', { retention: small })).removedBytes).toBeGreaterThan(0);
      }
      try {
        expect(await lostInCompaction({ file, handle: late, header: lateHeader, line: lateLine, waitMs: 5_000 })).toBe(
          true,
        );
        expect(
          await lostInCompaction({ file, handle: early, header: earlyHeader, line: earlyLine, waitMs: 5_000 }),
        ).toBe(false);
      } finally {
        await late.close();
        await early.close();
      }
      if (compactions === 1) {
        const tail = await readAll('c1', await firstKept('c1'));
        expect(tail.filter((entry) => entry.event.n === 'early')).toHaveLength(1);
        expect(tail.filter((entry) => entry.event.n === 'late')).toHaveLength(0);
      }
    },
  );

  it('recovers a compaction that died: the set-aside log put back, or dropped once published; temp copies removed', async () => {
    const offsets = await appendMany('c1', 50);
    const file = log.file('c1');
    // Died after setting the log aside: readers see nothing new (no restart), and recovery puts it back.
    await link(file, compactingFile(file));
    await unlink(file);
    await writeFile(path.join(log.directory, `.c1.jsonl.${process.pid}.0a1b2c.tmp`), '{"type":"log_start"');
    expect(await log.read('c1', offsets[10])).toEqual({ entries: [], next: offsets[10] });
    // The end waits for the compaction to publish (or be recovered), as an append does.
    const ending = log.end('c1');
    expect(await log.recover({ staleMs: 60_000 })).toBe(0);
    expect(await log.recover({ staleMs: 0 })).toBe(2);
    expect(await ending).toBe(offsets.at(-1));
    expect(await readdir(log.directory)).toEqual(['c1.jsonl']);
    expect((await readAll('c1')).map((entry) => entry.offset)).toEqual(offsets);

    // Died after publishing, before removing the set-aside log: recovery removes it and leaves the new log.
    await log.compact('c1', { retention: small });
    const compacted = await readFile(file);
    await writeFile(compactingFile(file), 'the old log');
    await log.recover({ staleMs: 0 });
    expect(await readdir(log.directory)).toEqual(['c1.jsonl']);
    expect(await readFile(file)).toEqual(compacted);

    // An append while a dead compaction holds the log waits, then recovers it rather than starting a new log.
    const end = await log.end('c1');
    await link(file, compactingFile(file));
    await unlink(file);
    const old = new Date(Date.now() - 120_000);
    await utimes(compactingFile(file), old, old);
    const appending = log.append('c1', { type: 'message', n: 'after' });
    await log.recover({ staleMs: 0 });
    expect(await appending).toBeGreaterThan(end);
    expect((await log.read('c1', end)).entries.map((entry) => entry.event.n)).toEqual(['after']);
  });
});
