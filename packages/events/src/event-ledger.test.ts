import { appendFile, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { compareCursors, EventLedger, eventId } from './event-ledger.ts';
import { EventRegistry } from './event-registry.ts';

let root: string;
let now: number;
let warnings: string[];
let ledger: EventLedger;

beforeEach(async () => {
  root = await mkdtemp(path.join(tmpdir(), 'ledger-'));
  now = Date.parse('2026-11-28T10:00:00Z');
  warnings = [];
  ledger = new EventLedger({
    directory: path.join(root, 'events'),
    now: () => now,
    warn: (message) => warnings.push(message),
    pollMs: 20,
  });
});
afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

const done = (task: string) => ({
  type: 'task.done',
  source: 'queue',
  nativeId: task,
  data: { task, task_type: 'system.echo', attempts: 1 },
});

describe('EventLedger', () => {
  it('appends one JSON line per event with a deterministic id, and stores the same event once', async () => {
    const first = await ledger.emit({ ...done('t1'), causedBy: ['ev-00000000000000000000'] });
    expect(first.duplicate).toBe(false);
    expect(first.event).toMatchObject({
      id: eventId('task.done', 'queue', 't1'),
      type: 'task.done',
      at: '2026-11-28T10:00:00.000Z',
      caused_by: ['ev-00000000000000000000'],
    });
    expect(first.event.id).toMatch(/^ev-[0-9a-f]{20}$/);
    const again = await ledger.emit(done('t1'));
    expect(again).toEqual({ event: first.event, duplicate: true });
    // A fresh process (a new ledger object) finds it stored too.
    const other = new EventLedger({ directory: path.join(root, 'events'), now: () => now });
    expect((await other.emit(done('t1'))).duplicate).toBe(true);
    const text = await readFile(path.join(root, 'events', '2026-11-28.jsonl'), 'utf8');
    expect(text.trim().split('\n')).toHaveLength(1);
    expect(await ledger.get(first.event.id)).toMatchObject({ id: first.event.id, cursor: expect.any(String) });
  });

  it('stores a payload that breaks its schema, or of an unknown type, with the problem marked', async () => {
    const broken = await ledger.emit({ type: 'task.done', source: 'queue', nativeId: 'x', data: { task: 7 } });
    expect(broken.event.problem).toMatch(/task|type/);
    const unknown = await ledger.emit({ type: 'nope.never', source: 'test', nativeId: '1', data: {} });
    expect(unknown.event.problem).toBe('unknown event type "nope.never"');
    expect((await ledger.list()).events.map((event) => event.problem)).toEqual([
      broken.event.problem,
      unknown.event.problem,
    ]);
  });

  it('cuts a torn last line off at the next append, keeps its bytes in a .torn file and says so', async () => {
    await ledger.emit(done('t1'));
    const file = path.join(root, 'events', '2026-11-28.jsonl');
    await appendFile(file, '{"id":"ev-torn","type":"task.do');
    // Readers never see past the last newline.
    expect((await ledger.list()).events).toHaveLength(1);
    await ledger.emit(done('t2'));
    const lines = (await readFile(file, 'utf8')).split('\n');
    expect(lines.pop()).toBe('');
    expect(lines.map((line) => (JSON.parse(line) as { native_id: string }).native_id)).toEqual(['t1', 't2']);
    expect(await readFile(path.join(root, 'events', '2026-11-28.torn'), 'utf8')).toBe(
      '{"id":"ev-torn","type":"task.do\n',
    );
    expect(warnings).toEqual([expect.stringContaining('repaired a torn last line')]);
  });

  it('skips an unreadable line in the middle and reports it', async () => {
    await ledger.emit(done('t1'));
    await appendFile(path.join(root, 'events', '2026-11-28.jsonl'), 'not json\n');
    await ledger.emit(done('t2'));
    expect((await ledger.list()).events.map((event) => event.native_id)).toEqual(['t1', 't2']);
    expect(warnings.some((warning) => warning.includes('unreadable line'))).toBe(true);
  });

  it('lists by type and time, paged by cursors that order across days', async () => {
    for (let index = 0; index < 5; index++) await ledger.emit(done(`a${index}`));
    now = Date.parse('2026-11-29T00:00:05Z');
    await ledger.emit({
      type: 'schedule.fired',
      source: 'scheduler',
      nativeId: 'daily@1',
      data: { schedule: 'daily' },
    });
    for (let index = 0; index < 3; index++) await ledger.emit(done(`b${index}`));
    const seen: string[] = [];
    let after: string | undefined;
    for (;;) {
      const page = await ledger.list({ types: ['task.done'], limit: 3, ...(after ? { after } : {}) });
      seen.push(...page.events.map((event) => event.native_id));
      if (!page.next) break;
      after = page.next;
    }
    expect(seen).toEqual(['a0', 'a1', 'a2', 'a3', 'a4', 'b0', 'b1', 'b2']);
    const cursors = (await ledger.list()).events.map((event) => event.cursor);
    expect([...cursors].sort(compareCursors)).toEqual(cursors);
    expect(compareCursors('2026-11-28:900', '2026-11-29:10')).toBeLessThan(0);
    const since = await ledger.list({ since: '2026-11-29T00:00:00Z', types: ['schedule.fired'] });
    expect(since.events.map((event) => event.native_id)).toEqual(['daily@1']);
    await expect(ledger.list({ after: 'nonsense' })).rejects.toMatchObject({ code: 'EVENT_CURSOR_INVALID' });
  });

  it('keeps appending to the latest day when the wall clock is set back across midnight, so no reader skips a line', async () => {
    // A process that appended before midnight, and knows only that day.
    now = Date.parse('2026-11-28T23:59:50Z');
    const early = new EventLedger({ directory: path.join(root, 'events'), now: () => now });
    await early.emit(done('before-midnight'));
    now = Date.parse('2026-11-29T00:00:05Z');
    await ledger.emit(done('after-midnight'));
    const cursor = (await ledger.list()).events.find((event) => event.native_id === 'after-midnight')?.cursor as string;
    // Another process's ledger, started after that line, and a clock stepped back 10 s (NTP): both append after it.
    const other = new EventLedger({ directory: path.join(root, 'events'), now: () => now });
    now = Date.parse('2026-11-28T23:59:56Z');
    await ledger.emit(done('stepped-back'));
    await other.emit(done('other-process'));
    await early.emit(done('early-process'));
    const seen = (await ledger.list({ after: cursor })).events.map((event) => event.native_id);
    expect(seen).toEqual(['stepped-back', 'other-process', 'early-process']);
    expect(await ledger.days()).toEqual(['2026-11-28', '2026-11-29']);
    // Still one event per id across the move: the same event again is a duplicate, found in the later day's file.
    expect((await other.emit(done('stepped-back'))).duplicate).toBe(true);
  });

  it('follows new events from the end, as another ledger object appends them', async () => {
    await ledger.emit(done('before'));
    const controller = new AbortController();
    const from = await ledger.end();
    const got: string[] = [];
    const following = (async () => {
      for await (const event of ledger.follow({ after: from, signal: controller.signal })) {
        got.push(event.native_id);
        if (got.length === 2) controller.abort();
      }
    })();
    const writer = new EventLedger({ directory: path.join(root, 'events'), now: () => now });
    await writer.emit(done('n1'));
    await writer.emit(done('n2'));
    await following;
    expect(got).toEqual(['n1', 'n2']);
  });

  it('reads a long day a batch at a time: lists, follows, finds and dedups past the first batches', async () => {
    // 4,500 events written by another process (one append, as a day that grew while this one was not looking),
    // each about 700 bytes: more than two batches of lines and pieces of the file.
    const file = path.join(root, 'events', '2026-11-28.jsonl');
    const writer = new EventLedger({ directory: path.join(root, 'events'), now: () => now });
    const first = await writer.emit(done('seed'));
    const line = (await readFile(file, 'utf8')).trim();
    const lines = Array.from({ length: 4_500 }, (_, index) => {
      const id = `ev-${index.toString(16).padStart(20, '0')}`;
      return `${line.replace(first.event.id, id).replace('"seed"', `"t${index}","pad":"${'p'.repeat(500)}"`)}\n`;
    });
    await appendFile(file, lines.join(''));
    const all: string[] = [];
    let after: string | undefined;
    for (;;) {
      const page = await ledger.list({ limit: 1_000, ...(after ? { after } : {}) });
      all.push(...page.events.map((event) => event.id));
      if (!page.next) break;
      after = page.next;
    }
    expect(all).toHaveLength(4_501);
    expect(all.at(-1)).toBe(`ev-${(4_499).toString(16).padStart(20, '0')}`);
    expect(await ledger.end()).toBe(`2026-11-28:${(await readFile(file)).length}`);
    // Not in the index (written by hand): found by reading the day, batch by batch.
    const late = `ev-${(4_321).toString(16).padStart(20, '0')}`;
    expect((await ledger.get(late))?.id).toBe(late);
    // This ledger read every id of the day when it caught up: the last one is a duplicate.
    expect((await ledger.emit({ type: 'task.done', source: 'queue', nativeId: 'seed', data: {} })).duplicate).toBe(
      true,
    );
    const followed: string[] = [];
    const controller = new AbortController();
    for await (const event of ledger.follow({ after: '2026-11-28:0', signal: controller.signal })) {
      followed.push(event.id);
      if (followed.length === 4_501) controller.abort();
    }
    expect(followed).toEqual(all);
  });

  it('removes whole days older than the retention', async () => {
    const short = new EventLedger({ directory: path.join(root, 'events'), now: () => now, retentionDays: 2 });
    now = Date.parse('2026-11-20T10:00:00Z');
    await short.emit(done('old'));
    now = Date.parse('2026-11-27T10:00:00Z');
    await short.emit(done('recent'));
    now = Date.parse('2026-11-28T10:00:00Z');
    expect(await short.prune()).toEqual(['2026-11-20']);
    expect(await short.days()).toEqual(['2026-11-27']);
  });

  it('writes emits that arrive together as one batch: each stored once, at the offset its index line names', async () => {
    const other = new EventLedger({ directory: path.join(root, 'events'), now: () => now });
    const names = Array.from({ length: 20 }, (_, index) => `c${index}`);
    const outcomes = await Promise.all([
      ...names.map((name) => ledger.emit(done(name))),
      ledger.emit(done('c3')),
      ...names.slice(10).map((name) => other.emit(done(name))),
    ]);
    // The second c3 of this object is in the same batch as the first: a duplicate of it. Whichever object's batch
    // takes the lock first stores c10…c19; each is stored once, and the other's emits of them are duplicates.
    expect(outcomes[20]).toEqual({ event: outcomes[3]?.event, duplicate: true });
    for (const [index, name] of names.entries()) {
      const emits = [outcomes[index], ...(index >= 10 ? [outcomes[11 + index]] : [])];
      expect(emits.filter((outcome) => !outcome?.duplicate).map((outcome) => outcome?.event.native_id)).toEqual([name]);
    }
    const text = await readFile(path.join(root, 'events', '2026-11-28.jsonl'), 'utf8');
    expect(
      text
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line).native_id)
        .sort(),
    ).toEqual([...names].sort());
    const index = (await readFile(path.join(root, 'events', 'index', '2026-11-28.idx'), 'utf8')).trim().split('\n');
    expect(index).toHaveLength(20);
    for (const entry of index) {
      const [id, , offset] = entry.split(' ');
      expect(JSON.parse(text.slice(Number(offset)).split('\n')[0] as string).id).toBe(id);
    }
    // A later emit appends after the batch, and a fresh object sees all of it.
    expect((await ledger.emit(done('after'))).duplicate).toBe(false);
    const fresh = new EventLedger({ directory: path.join(root, 'events'), now: () => now });
    expect((await fresh.emit(done('c19'))).duplicate).toBe(true);
  });

  it('finds an event whose index line was lost (a crash between the append and the index)', async () => {
    const { event } = await ledger.emit(done('t1'));
    await writeFile(path.join(root, 'events', 'index', '2026-11-28.idx'), '');
    expect((await ledger.get(event.id))?.native_id).toBe('t1');
    expect(await ledger.get('ev-ffffffffffffffffffff')).toBeUndefined();
  });
});

describe('EventRegistry', () => {
  it('knows the built-in types, with which fields an outsider can write', () => {
    const registry = new EventRegistry();
    expect(registry.names()).toEqual(
      expect.arrayContaining(['mail.received', 'task.failed', 'time.tick', 'hook.fired', 'github.delivery']),
    );
    expect(registry.get('mail.received')?.fields.from_address).toMatchObject({ type: 'string', trusted: false });
    expect(registry.get('task.failed')?.fields.task_type).toMatchObject({ type: 'string', trusted: true });
    expect(registry.get('constructor')).toBeUndefined();
    expect(registry.check('task.done', { task: 't', task_type: 'x', attempts: 1, extra: true })).toBeUndefined();
  });

  it('adds the types manifests declare, as integration.name, untrusted unless said', () => {
    const registry = EventRegistry.withManifests([
      {
        name: 'weather',
        events: {
          storm_warning: {
            description: 'A storm warning',
            fields: { region: 'string', level: { type: 'number', trusted: true } },
          },
        },
      },
    ]);
    const storm = registry.get('weather.storm_warning');
    expect(storm).toMatchObject({
      origin: 'weather',
      fields: { region: { trusted: false }, level: { trusted: true } },
    });
    expect(registry.check('weather.storm_warning', { level: 'high' })).toMatch(/level/);
  });
});
