import { appendFile, mkdtemp, rm, stat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type ChatEventEntry, ChatEventLog } from './chat-events.ts';

let root: string;
let log: ChatEventLog;

beforeEach(async () => {
  root = await mkdtemp(path.join(os.tmpdir(), 'assistant-chat-events-'));
  log = new ChatEventLog({ directory: path.join(root, 'events') });
});

afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

/** A bounded wait for a condition another async path makes true. */
async function waitFor(check: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`waited 10 s for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

describe('ChatEventLog', () => {
  it('appends events as lines and reads them back from any offset it returned', async () => {
    expect(await log.read('c1')).toEqual({ entries: [], next: 0 });
    expect(await log.end('c1')).toBe(0);
    const first = await log.append('c1', { type: 'message', message: { id: 'm1' } });
    const second = await log.append('c1', { type: 'token', turn: 't1', text: 'Hel' });
    const third = await log.append('c1', {
      type: 'turn_done',
      turn: 't1',
      reply: 'm2',
      at: '2026-11-23T18:00:00.000Z',
    });
    expect((await stat(log.file('c1'))).size).toBe(third);
    expect(await log.end('c1')).toBe(third);

    const all = await log.read('c1');
    expect(all.next).toBe(third);
    expect(all.entries.map((entry) => [entry.offset, entry.event.type])).toEqual([
      [first, 'message'],
      [second, 'token'],
      [third, 'turn_done'],
    ]);
    expect(all.entries[0]?.event.at).toMatch(/^\d{4}-\d\d-\d\dT/);
    expect(all.entries[2]?.event.at).toBe('2026-11-23T18:00:00.000Z');

    const rest = await log.read('c1', first);
    expect(rest.entries.map((entry) => entry.event.type)).toEqual(['token', 'turn_done']);
    expect(await log.read('c1', third)).toEqual({ entries: [], next: third });
    // An offset past the end (the log was removed by hand) starts again from the beginning.
    expect((await log.read('c1', third + 1000)).entries).toHaveLength(3);
    // Conversations have logs of their own.
    expect((await log.read('c2')).entries).toEqual([]);
  });

  it('skips a broken line and leaves a line still being written for the next read', async () => {
    await log.append('c1', { type: 'message', n: 1 });
    await appendFile(log.file('c1'), 'not json at all\n{"no":"type"}\n');
    const afterBroken = await log.append('c1', { type: 'message', n: 2 });
    await appendFile(log.file('c1'), '{"type":"token","text":"half');
    const read = await log.read('c1');
    expect(read.entries.map((entry) => entry.event.n)).toEqual([1, 2]);
    expect(read.next).toBe(afterBroken);
    await appendFile(log.file('c1'), ' done"}\n');
    const next = await log.read('c1', read.next);
    expect(next.entries.map((entry) => entry.event.text)).toEqual(['half done']);
  });

  it('reads the event appended after a torn line (a crash cut the write before it)', async () => {
    await log.append('c1', { type: 'message', n: 1 });
    await appendFile(log.file('c1'), '{"type":"token","te');
    await log.append('c1', { type: 'turn_done', n: 2 });
    await log.append('c1', { type: 'message', n: 3 });
    const read = await log.read('c1');
    expect(read.entries.map((entry) => [entry.event.type, entry.event.n])).toEqual([
      ['message', 1],
      ['turn_done', 2],
      ['message', 3],
    ]);
  });

  it('reads a long log in pieces of at most 4 MiB, each ending at a whole line, and skips a line longer than a piece', async () => {
    // 9 MiB of events: three reads from `next` to the end, every event once, in order.
    const text = 'x'.repeat(100 * 1024);
    const lines = Array.from({ length: 90 }, (_, n) => `${JSON.stringify({ type: 'token', n, text })}\n`);
    await log.append('c1', { type: 'message', n: -1 });
    await appendFile(log.file('c1'), lines.join(''));
    // A line of 5 MiB (a person's paste, a broken writer): no event is that long; it is skipped, the next is read.
    await appendFile(log.file('c1'), `{"type":"token","text":"${'y'.repeat(5 * 1024 * 1024)}"}\n`);
    const end = await log.append('c1', { type: 'message', n: 90 });
    const seen: number[] = [];
    let next = 0;
    let reads = 0;
    while (next < end) {
      const read = await log.read('c1', next);
      expect(read.next).toBeGreaterThan(next);
      expect(read.next - next).toBeLessThanOrEqual(5 * 1024 * 1024 + 100);
      for (const entry of read.entries) seen.push(Number(entry.event.n));
      next = read.next;
      reads += 1;
    }
    expect(seen).toEqual([-1, ...Array.from({ length: 90 }, (_, n) => n), 90]);
    expect(reads).toBeGreaterThanOrEqual(3);
    expect((await log.read('c1', 0)).entries.length).toBeLessThan(45);

    // A follower sees them all too, reading on its own in pieces.
    const controller = new AbortController();
    const followed: number[] = [];
    for await (const entry of log.follow('c1', { signal: controller.signal })) {
      followed.push(Number(entry.event.n));
      if (entry.event.n === 90) controller.abort();
    }
    expect(followed).toEqual(seen);

    // Appended while followed (the watcher's read): 9 MiB at once, then an event; the follower gets every one.
    const live = new AbortController();
    const fromEnd = await log.end('c1');
    const arrived: number[] = [];
    const following = (async () => {
      for await (const entry of log.follow('c1', { fromOffset: fromEnd, signal: live.signal })) {
        arrived.push(Number(entry.event.n));
        if (entry.event.n === 200) live.abort();
      }
    })();
    await log.append('c1', { type: 'message', n: 99 });
    await waitFor(() => arrived.includes(99), 'the follower to be following');
    await appendFile(log.file('c1'), lines.map((line) => line.replace('"n":', '"n":1')).join(''));
    await log.append('c1', { type: 'message', n: 200 });
    await following;
    expect(arrived).toEqual([99, ...Array.from({ length: 90 }, (_, n) => Number(`1${n}`)), 200]);
  });

  it('follows from an offset: events already there, then the ones appended, until the signal aborts', async () => {
    const first = await log.append('c1', { type: 'message', n: 1 });
    await log.append('c1', { type: 'message', n: 2 });
    const controller = new AbortController();
    const seen: ChatEventEntry[] = [];
    const following = (async () => {
      for await (const entry of log.follow('c1', { fromOffset: first, signal: controller.signal })) {
        seen.push(entry);
        if (entry.event.n === 2) await log.append('c1', { type: 'message', n: 3 });
        if (entry.event.n === 3) controller.abort();
      }
    })();
    await following;
    expect(seen.map((entry) => entry.event.n)).toEqual([2, 3]);
  });

  it('fans one watcher per conversation out to many followers: each sees every event once, in order', async () => {
    const start = await log.append('c1', { type: 'message', n: 0 });
    const controller = new AbortController();
    const total = 60;
    const follow = async (fromOffset: number, stopAt: number) => {
      const seen: number[] = [];
      for await (const entry of log.follow('c1', { fromOffset, signal: controller.signal })) {
        seen.push(Number(entry.event.n));
        if (entry.event.n === stopAt) break;
      }
      return seen;
    };
    // Followers from the start and from after the first event, one that never reads (until the end), and one
    // that joins halfway, while the reader is ahead of where it starts.
    const early = Array.from({ length: 40 }, (_, index) => follow(index % 2 === 0 ? 0 : start, total));
    await waitFor(() => log.followedConversations === 1, 'the followers to join');
    for (let n = 1; n <= total / 2; n += 1) await log.append('c1', { type: 'token', n });
    const late = follow(start, total);
    for (let n = total / 2 + 1; n <= total; n += 1) await log.append('c1', { type: 'token', n });
    const results = await Promise.all([...early, late]);
    const all = Array.from({ length: total + 1 }, (_, n) => n);
    results.forEach((seen, index) => {
      expect(seen).toEqual(index % 2 === 0 && index < early.length ? all : all.slice(1));
    });
    controller.abort();
    // The last follower gone, nothing watches the conversation any more.
    expect(log.followedConversations).toBe(0);
  });

  it('a log removed while followed is read again from its start', async () => {
    await log.append('c1', { type: 'message', n: 1 });
    await log.append('c1', { type: 'message', n: 2 });
    const controller = new AbortController();
    const seen: number[] = [];
    const following = (async () => {
      for await (const entry of log.follow('c1', { fromOffset: await log.end('c1'), signal: controller.signal })) {
        seen.push(Number(entry.event.n));
        if (seen.length === 2) break;
      }
    })();
    await rm(log.file('c1'));
    await log.append('c1', { type: 'message', n: 3 });
    await log.append('c1', { type: 'message', n: 4 });
    await following;
    expect(seen).toEqual([3, 4]);
  });

  it('refuses a conversation id that is not a safe file name', async () => {
    await expect(log.append('../etc', { type: 'message' })).rejects.toMatchObject({ code: 'CHAT_INPUT_INVALID' });
  });
});
