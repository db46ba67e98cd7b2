import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { EventLedger, type EventRecord, EventRegistry } from '@assistant/events';
import { FileHumanLog, FileNoteStore } from '@assistant/notes';
import { openFileTaskQueue, type TaskQueue } from '@assistant/queue';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { compileHook } from '../compile-hook.ts';
import type { CompiledHook } from '../hook-types.ts';
import { writeJsonAtomic } from './hook-files.ts';
import { firingIdOf, HookRunner, type HookRunnerOptions, readHookStates } from './hook-runner.ts';

let dataDir: string;
let ledger: EventLedger;
let queue: TaskQueue;
const runners: HookRunner[] = [];

beforeEach(async () => {
  dataDir = await mkdtemp(path.join(tmpdir(), 'hook-runner-'));
  ledger = new EventLedger({ directory: path.join(dataDir, 'events'), pollMs: 20 });
  queue = await openFileTaskQueue({ directory: path.join(dataDir, 'queue') });
});
afterEach(async () => {
  for (const runner of runners.splice(0)) await runner.stop();
  await rm(dataDir, { recursive: true, force: true });
});

function hook(name: string, source: Record<string, unknown>): CompiledHook {
  const { hook: compiled, problems } = compileHook({
    source,
    name,
    file: `hooks/${name}.yaml`,
    line: 1,
    registry: new EventRegistry(),
    catalog: {
      service: () => ({ problem: 'none' }),
      scripts: {},
      taskTypes: { 'system.echo': { tier: 'read_only' } },
      instances: [],
      llms: ['default'],
    },
  });
  if (!compiled) throw new Error(JSON.stringify(problems));
  return compiled;
}

const echoHook = (name: string, extra: Record<string, unknown> = {}) =>
  hook(name, {
    on: 'task.done',
    when: { task_type: 'build' },
    // biome-ignore lint/suspicious/noThenProperty: a hook's `then:`, as people write it
    then: [{ enqueue: { type: 'system.echo', payload: { text: `${name} {{event.data.task}}` } } }],
    ...extra,
  });

async function start(hooks: CompiledHook[], extra: Partial<HookRunnerOptions> = {}): Promise<HookRunner> {
  const runner = new HookRunner({
    dataDir,
    hooks,
    ledger,
    queue,
    notes: new FileNoteStore({ root: path.join(dataDir, 'notes') }),
    humanLog: new FileHumanLog({ directory: path.join(dataDir, 'logs') }),
    approvalExpiresMs: 86_400_000,
    timeZone: 'UTC',
    logger: { info: () => {}, warn: () => {} },
    ticks: false,
    ...extra,
  });
  runners.push(runner);
  await runner.start();
  return runner;
}

async function emit(task: string, taskType = 'build'): Promise<EventRecord> {
  return (
    await ledger.emit({
      type: 'task.done',
      source: 'test',
      nativeId: task,
      data: { task, task_type: taskType, attempts: 1 },
    })
  ).event;
}

async function echoTexts(): Promise<string[]> {
  const texts: string[] = [];
  for (const entry of await queue.list({ state: 'pending' })) {
    const record = entry.name ? await queue.get(entry.name.id) : undefined;
    texts.push(String((record?.task?.payload as { text?: string } | undefined)?.text));
  }
  return texts.sort();
}

async function until<T>(check: () => Promise<T | undefined | false>, what: string): Promise<T> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const value = await check();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`waited 10 s for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** Waits until the runner's cursor is at the ledger's end: every event so far is handled. */
async function caughtUp(): Promise<void> {
  await until(async () => {
    const saved = await readFile(path.join(dataDir, 'hooks', 'cursor.json'), 'utf8').catch(() => '{}');
    return (JSON.parse(saved) as { cursor?: string }).cursor === (await ledger.end());
  }, 'the runner to reach the end of the ledger');
}

describe('HookRunner', () => {
  it('fires once per matching event, records it, writes hook.fired, and fires nothing again when the ledger is read again', async () => {
    const built = echoHook('built');
    const runner = await start([built]);
    const event = await emit('t1');
    await emit('t2', 'other');
    await until(async () => (await echoTexts()).length === 1, 'one echo');
    await caughtUp();
    expect(await echoTexts()).toEqual(['built t1']);
    const record = JSON.parse(
      await readFile(path.join(dataDir, 'hooks', 'firings', 'built', `${firingIdOf(built, event)}.json`), 'utf8'),
    );
    expect(record).toMatchObject({ hook: 'built', event: event.id, state: 'done', tasks: [{ type: 'system.echo' }] });
    const fired = (await ledger.list({ types: ['hook.fired'] })).events;
    expect(fired).toEqual([
      expect.objectContaining({ caused_by: [event.id], data: expect.objectContaining({ hook: 'built' }) }),
    ]);

    // The cursor lost (it is saved without fsync): the ledger is read again from the start, and nothing fires twice.
    await runner.stop();
    await writeJsonAtomic(path.join(dataDir, 'hooks', 'cursor.json'), { cursor: `${(await ledger.days())[0]}:0` });
    await start([built]);
    await caughtUp();
    expect(await echoTexts()).toEqual(['built t1']);
  });

  it('fires a one-shot hook once, through once.json, and shows it spent', async () => {
    const first = echoHook('first', { once: true });
    await start([first]);
    for (const task of ['a', 'b', 'c']) await emit(task);
    await caughtUp();
    expect(await echoTexts()).toEqual(['first a']);
    const [state] = await readHookStates({ dataDir, hooks: [first] });
    expect(state).toMatchObject({ name: 'first', once: true, firedOnce: true, enabled: false, firings: 1 });
  });

  it('performs a firing a crash left planned, without enqueueing again what it had enqueued', async () => {
    const built = echoHook('built');
    const event = await emit('t1');
    // What a crash leaves: the record planned, and its task already in the queue.
    const firing = firingIdOf(built, event);
    await writeJsonAtomic(path.join(dataDir, 'hooks', 'firings', 'built', `${firing}.json`), {
      hook: 'built',
      version: built.version,
      firing,
      event: event.id,
      event_type: event.type,
      state: 'planned',
      planned_at: new Date(Date.now() - 1_000).toISOString(),
    });
    const enqueued = await queue.enqueue({ type: 'system.echo', payload: { text: 'built t1' }, source: 'automation' });
    if (enqueued.status !== 'enqueued') throw new Error('not enqueued');
    const claimed = await queue.consumer({ pollIntervalMs: 50 });
    await claimed.start();
    const task = await claimed.claim();
    if (!task) throw new Error('not claimed');
    await claimed.complete(task, null);
    await claimed.close();
    await writeJsonAtomic(path.join(dataDir, 'hooks', 'cursor.json'), { cursor: await ledger.end() });
    await start([built]);
    const record = JSON.parse(
      await readFile(path.join(dataDir, 'hooks', 'firings', 'built', `${firing}.json`), 'utf8'),
    ) as { state: string; tasks: { task: string }[] };
    expect(record.state).toBe('done');
    expect(record.tasks.map((entry) => entry.task)).toEqual([enqueued.task.id]);
    expect(await echoTexts()).toEqual([]);
    expect(await queue.stats()).toMatchObject({ pending: 0, done: 1 });
  });

  it('fires a count: hook on the event that reaches the threshold, per key', async () => {
    const burst = echoHook('burst', { when: {}, count: { at_least: 3, within: '1h', per: 'task_type' } });
    await start([burst]);
    for (const [task, type] of [
      ['a1', 'a'],
      ['b1', 'b'],
      ['a2', 'a'],
      ['a3', 'a'],
      ['a4', 'a'],
      ['b2', 'b'],
    ] as const) {
      await emit(task, type);
    }
    await caughtUp();
    expect(await echoTexts()).toEqual(['burst a3']);
  });

  it('counts in ledger order, so a burst whose times were stamped out of order still reaches the threshold', async () => {
    const burst = echoHook('burst', { when: {}, count: { at_least: 3, within: '1h', per: 'task_type' } });
    await start([burst]);
    // Three writers stamp their events' times, then append in a different order (as concurrent workers can).
    const base = Date.now();
    for (const [task, offsetMs] of [
      ['c1', 0],
      ['c3', 2],
      ['c2', 1],
    ] as const) {
      await ledger.emit({
        type: 'task.done',
        source: 'test',
        nativeId: task,
        at: new Date(base + offsetMs).toISOString(),
        data: { task, task_type: 'c', attempts: 1 },
      });
    }
    await caughtUp();
    expect(await echoTexts()).toEqual(['burst c2']);
  });

  it('debounces a burst into one firing with its last event, from a timer file', async () => {
    const quiet = echoHook('quiet', { debounce: '300ms' });
    await start([quiet]);
    await emit('t1');
    await emit('t2');
    await until(async () => (await echoTexts()).length === 1, 'the debounced echo');
    await caughtUp();
    expect(await echoTexts()).toEqual(['quiet t2']);
    // The timer is removed once its firing is recorded.
    await until(
      async () => (await readHookStates({ dataDir, hooks: [quiet] }))[0]?.timers.length === 0,
      'the timer removed',
    );
  });

  it('tries again, after a wait, the timers and firings whose actions failed, without stopping the others', async () => {
    // The queue refuses the first enqueue of each text (a full disk, say), then takes them.
    const refused = new Set<string>();
    const warnings: string[] = [];
    const flaky: HookRunnerOptions['queue'] = {
      list: (options) => queue.list(options),
      enqueue: async (options) => {
        const text = String((options.payload as { text?: unknown } | undefined)?.text);
        if (!refused.has(text)) {
          refused.add(text);
          throw new Error(`no space left on device (${text})`);
        }
        return queue.enqueue(options);
      },
    };
    const burst = (name: string) =>
      echoHook(name, { debounce: '100ms', count: { at_least: 1, within: '1h', per: 'task' } });
    const plain = echoHook('plain');
    await start([burst('first'), burst('second'), plain], {
      queue: flaky,
      logger: { info: () => {}, warn: (message) => warnings.push(message) },
    });
    await emit('t1');
    // Both timers fail at their first try, and the plain hook's firing too: each is done once the wait is over,
    // with no new event and no restart.
    await until(async () => (await echoTexts()).length === 3, 'every firing done after its failure');
    expect(await echoTexts()).toEqual(['first t1', 'plain t1', 'second t1']);
    expect([...refused].sort()).toEqual(['first t1', 'plain t1', 'second t1']);
    expect(warnings.join('\n')).toMatch(/a hook timer failed; trying it again later/);
    expect(warnings.join('\n')).toMatch(/hook plain failed on task\.done/);
    await until(
      async () =>
        (await readHookStates({ dataDir, hooks: [burst('first'), burst('second')] })).every(
          (state) => state.timers.length === 0,
        ),
      'the timers removed',
    );
    // Nothing twice: one firing record each, all done.
    for (const name of ['first', 'second', 'plain']) {
      const states = await readdir(path.join(dataDir, 'hooks', 'firings', name));
      const records = await Promise.all(
        states.map(
          async (file) =>
            JSON.parse(await readFile(path.join(dataDir, 'hooks', 'firings', name, file), 'utf8')) as {
              state: string;
            },
        ),
      );
      expect(records.map((record) => record.state)).toEqual(['done']);
    }
  });

  it('follows catch_up for timers that came due while it was down, and records the ones it does not fire', async () => {
    const skipped = echoHook('skipped', {
      debounce: '1s',
      catch_up: 'skip',
      count: { at_least: 1, within: '1h', per: 'task' },
    });
    const latest = echoHook('latest', {
      debounce: '1s',
      catch_up: 'once',
      count: { at_least: 1, within: '1h', per: 'task' },
    });
    const events = [await emit('t1'), await emit('t2')];
    const old = new Date(Date.now() - 60_000).toISOString();
    for (const target of [skipped, latest]) {
      for (const event of events) {
        const key = `task=${JSON.stringify(event.data.task)}`;
        await writeJsonAtomic(path.join(dataDir, 'hooks', 'timers', `${target.name}--${event.data.task}.json`), {
          hook: target.name,
          version: target.version,
          kind: 'debounce',
          key,
          event: event.id,
          since: old,
          due_at: old,
        });
      }
    }
    await writeJsonAtomic(path.join(dataDir, 'hooks', 'cursor.json'), { cursor: await ledger.end() });
    await start([skipped, latest]);
    expect(await echoTexts()).toEqual(['latest t2']);
    const states = await readHookStates({ dataDir, hooks: [skipped, latest] });
    expect(states.map((state) => [state.name, state.missed, state.timers.length])).toEqual([
      ['skipped', 2, 0],
      ['latest', 1, 0],
    ]);
    const [log] = await import('node:fs/promises').then((fs) => fs.readdir(path.join(dataDir, 'logs')));
    expect(await readFile(path.join(dataDir, 'logs', log ?? ''), 'utf8')).toContain(
      'came due while Assistant was down',
    );
  });

  it('opens a hook’s breaker after five errors in a row and keeps the other hooks going', async () => {
    const failing = echoHook('failing');
    const fine = hook('fine', {
      on: 'task.done',
      // biome-ignore lint/suspicious/noThenProperty: a hook's `then:`, as people write it
      then: [{ enqueue: { type: 'system.echo', payload: { text: 'fine {{event.data.task}}' } } }],
    });
    await start([failing, fine], {
      queue: {
        list: (options) => queue.list(options),
        enqueue: async (options) => {
          if (String((options.payload as { text?: string }).text).startsWith('failing')) throw new Error('disk full');
          return queue.enqueue(options);
        },
      },
    });
    for (let index = 0; index < 6; index++) await emit(`t${index}`);
    await caughtUp();
    const [state, other] = await readHookStates({ dataDir, hooks: [failing, fine] });
    expect(state?.breaker).toMatchObject({ state: 'open', failures: 5 });
    expect(other?.breaker).toMatchObject({ state: 'closed', failures: 0 });
    expect((await echoTexts()).filter((text) => text.startsWith('fine'))).toHaveLength(6);
  });
});
