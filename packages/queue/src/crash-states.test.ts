// Power cuts, in the manner of ALICE and CrashMonkey: the file operations of enqueue, claim, complete, requeue and
// recovery are recorded through a layer over node:fs/promises, every crash state a file system may leave is built
// from them in a fresh directory, and recovery and a worker's drain must then lose no acknowledged task, leave no
// task in two files, and finish every task. Two models of what survives a power cut:
// - ext4 (data=ordered): metadata operations reach the disk in order, in journal commits, and every fsync commits
//   all of them before it: a crash state is any prefix of the operations.
// - independent: a file system that persists each directory's operations on its own. What an fsync of the directory
//   (or, for a file's content, of the file) started after an operation covers persists; every other operation may
//   each be lost. All subsets are built when they are few, else a fixed-seed sample.
import type { FileHandle } from 'node:fs/promises';
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import type { Durability } from './durable-write.ts';
import { decodeStateName } from './file-layout.ts';
import { FileTaskConsumer } from './file-task-consumer.ts';
import { FileTaskQueue } from './file-task-queue.ts';
import { taskIdPattern } from './task-id.ts';

/** One recorded step. Inodes tell files apart across renames; `sync` steps are recorded when they start and end. */
type Step =
  | { kind: 'create'; path: string; inode: number }
  | { kind: 'write'; inode: number; text: string }
  | { kind: 'rename'; from: string; to: string; inode: number }
  | { kind: 'unlink'; path: string; inode: number }
  | { kind: 'syncStart'; sync: number; directory?: string; inode?: number }
  | { kind: 'syncEnd'; sync: number }
  | { kind: 'ack'; id: string; outcome: 'enqueued' | 'done' };

const recording = vi.hoisted(() => ({
  /** Operations under this directory are recorded; nothing is while it is undefined. */
  root: undefined as string | undefined,
  steps: [] as unknown[],
  /** The live file system as the recording knows it: path → inode. */
  live: new Map<string, number>(),
  directories: new Set<string>(),
  nextInode: 1,
  nextSync: 1,
}));

vi.mock('node:fs/promises', async (importOriginal) => {
  const actual = await importOriginal<typeof import('node:fs/promises')>();
  const { sep } = await import('node:path');
  const { constants } = await import('node:fs');
  const under = (file: unknown): file is string =>
    typeof file === 'string' && recording.root !== undefined && file.startsWith(recording.root + sep);
  const record = (step: unknown) => recording.steps.push(step);
  const open: typeof actual.open = async (file, flags, mode) => {
    const handle = await actual.open(file, flags, mode);
    if (!under(file)) return handle;
    const creates =
      typeof flags === 'string' ? /[wa]/.test(flags) : typeof flags === 'number' && (flags & constants.O_CREAT) !== 0;
    let inode = recording.live.get(file);
    if (creates && inode === undefined) {
      inode = recording.nextInode++;
      recording.live.set(file, inode);
      record({ kind: 'create', path: file, inode });
    }
    const isDirectory = recording.directories.has(file);
    return new Proxy(handle, {
      get(target, property) {
        if (property === 'writeFile') {
          return async (data: string, options?: Parameters<FileHandle['writeFile']>[1]) => {
            await target.writeFile(data, options);
            record({ kind: 'write', inode, text: String(data) });
          };
        }
        if (property === 'sync') {
          return async () => {
            const sync = recording.nextSync++;
            record(isDirectory ? { kind: 'syncStart', sync, directory: file } : { kind: 'syncStart', sync, inode });
            await target.sync();
            record({ kind: 'syncEnd', sync });
          };
        }
        const value = Reflect.get(target, property, target);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
  };
  const rename: typeof actual.rename = async (from, to) => {
    await actual.rename(from, to);
    if (!under(from) || !under(to)) return;
    const inode = recording.live.get(from);
    if (inode === undefined) return;
    recording.live.delete(from);
    recording.live.set(to, inode);
    record({ kind: 'rename', from, to, inode });
  };
  const unlink: typeof actual.unlink = async (file) => {
    await actual.unlink(file);
    const inode = under(file) ? recording.live.get(file) : undefined;
    if (inode === undefined || !under(file)) return;
    recording.live.delete(file);
    record({ kind: 'unlink', path: file, inode });
  };
  const rmRecorded: typeof actual.rm = async (file, options) => {
    const inode = under(file) ? recording.live.get(file) : undefined;
    await actual.rm(file, options);
    if (inode === undefined || !under(file)) return;
    recording.live.delete(file);
    record({ kind: 'unlink', path: file, inode });
  };
  const replaced = { open, rename, unlink, rm: rmRecorded };
  return { ...actual, ...replaced, default: { ...actual, ...replaced } };
});

/** Tmpfs when there is one: fsync costs nothing there, and the states are many. */
const base = await (async () => {
  try {
    return await mkdtemp(path.join('/dev/shm', 'assistant-crash-'));
  } catch {
    return mkdtemp(path.join(os.tmpdir(), 'assistant-crash-'));
  }
})();
afterAll(() => rm(base, { recursive: true, force: true }));

/** A day on: every lease has run out, every backoff has passed, every tmp/ file is old. */
const later = () => Date.now() + 86_400_000;
const idle = { heartbeatMs: 3_600_000, sweepIntervalMs: 3_600_000, rescanIntervalMs: 3_600_000 };

interface Recording {
  /** Relative path → content of every file on disk when recording started: all of it durable. */
  initialFiles: Map<string, { inode: number; text: string }>;
  directories: string[];
  steps: Step[];
  /** Tasks on disk before recording started: acknowledged from the first step. */
  initialIds: string[];
}

/** Runs enqueue, claim, complete, requeue and recovery against a real directory, recording every file operation. */
async function recordScenario(durability: Durability): Promise<Recording> {
  const directory = await mkdtemp(path.join(base, 'recorded-'));
  const queue = await FileTaskQueue.open({ directory, settings: { durability } });
  const initialIds: string[] = [];
  for (const n of [0, 1]) {
    const outcome = await queue.enqueue({ type: 'test.crash', payload: { n }, source: 'api' });
    if (outcome.status === 'enqueued') initialIds.push(outcome.task.id);
  }
  // A claim by a worker that is gone (it never wrote a heartbeat): the worker below recovers it as it starts.
  const gone = new FileTaskConsumer(queue, { owner: { id: 'gone-1-aaaaaa', pid: 1, host: 'elsewhere' } });
  await gone.rescan();
  expect(await gone.claim()).toBeDefined();

  const directories = [directory, ...Object.values(queue.paths).filter((value) => value !== directory)];
  const initialFiles = new Map<string, { inode: number; text: string }>();
  recording.live.clear();
  recording.directories = new Set(directories);
  for (const state of directories) {
    for (const entry of await readdir(state, { withFileTypes: true })) {
      if (!entry.isFile()) continue;
      const file = path.join(state, entry.name);
      const inode = recording.nextInode++;
      recording.live.set(file, inode);
      initialFiles.set(path.relative(directory, file), { inode, text: await readFile(file, 'utf8') });
    }
  }
  recording.steps = [];
  recording.root = directory;
  const ack = (id: string, outcome: 'enqueued' | 'done') => recording.steps.push({ kind: 'ack', id, outcome });
  const worker = new FileTaskConsumer(queue, idle);
  try {
    await worker.start();
    // Three producers at once, as the server's requests come: they may share the directory's fsync.
    await Promise.all(
      [2, 3, 4].map(async (n) => {
        const outcome = await queue.enqueue({ type: 'test.crash', payload: { n }, source: 'api' });
        if (outcome.status === 'enqueued') ack(outcome.task.id, 'enqueued');
      }),
    );
    const first = await worker.claim();
    if (!first) throw new Error('nothing to claim');
    await worker.complete(first, 'ok');
    ack(first.id, 'done');
    const second = await worker.claim();
    if (!second) throw new Error('nothing to claim');
    await worker.fail(second, new Error('try again'));
    // Held when the power goes.
    expect(await worker.claim()).toBeDefined();
    const fourth = await worker.claim();
    if (!fourth) throw new Error('nothing to claim');
    await worker.complete(fourth, 'ok');
    ack(fourth.id, 'done');
  } finally {
    recording.root = undefined;
    await worker.close();
  }
  return {
    initialFiles,
    directories: directories.map((state) => path.relative(directory, state)),
    steps: (recording.steps as Step[]).map((step) => relativeStep(step, directory)),
    initialIds,
  };
}

function relativeStep(step: Step, directory: string): Step {
  const relative = (file: string) => path.relative(directory, file);
  switch (step.kind) {
    case 'create':
    case 'unlink':
      return { ...step, path: relative(step.path) };
    case 'rename':
      return { ...step, from: relative(step.from), to: relative(step.to) };
    case 'syncStart':
      return step.directory === undefined ? step : { ...step, directory: relative(step.directory) };
    default:
      return step;
  }
}

/** A crash state: the files on disk (relative path → content), and the acknowledgements made before the crash. */
interface CrashState {
  files: Map<string, string>;
  acks: Extract<Step, { kind: 'ack' }>[];
  /** How it came about, for the failure message. */
  description: string;
}

function isNameStep(step: Step): step is Extract<Step, { kind: 'create' | 'rename' | 'unlink' }> {
  return step.kind === 'create' || step.kind === 'rename' || step.kind === 'unlink';
}

/** The directory whose fsync makes a name step durable: for a rename, the one it lands in. */
function directoryOf(step: Extract<Step, { kind: 'create' | 'rename' | 'unlink' }>): string {
  return path.dirname(step.kind === 'rename' ? step.to : step.path);
}

/** The files that result from applying `kept` name steps (in order) to the initial files, with inode contents. */
function filesOf(
  recorded: Recording,
  steps: readonly Step[],
  kept: (index: number) => boolean,
  content: (inode: number) => string,
): Map<string, string> {
  const names = new Map<string, number>();
  for (const [file, { inode }] of recorded.initialFiles) names.set(file, inode);
  steps.forEach((step, index) => {
    if (!isNameStep(step) || !kept(index)) return;
    if (step.kind === 'create') names.set(step.path, step.inode);
    else if (step.kind === 'unlink') {
      if (names.get(step.path) === step.inode) names.delete(step.path);
    } else {
      // The rename moved this inode, wherever the step that named it so persisted or not.
      if (names.get(step.from) === step.inode) names.delete(step.from);
      names.set(step.to, step.inode);
    }
  });
  const files = new Map<string, string>();
  for (const [file, inode] of names) files.set(file, content(inode));
  return files;
}

function initialContent(recorded: Recording): Map<number, string> {
  return new Map([...recorded.initialFiles.values()].map(({ inode, text }) => [inode, text]));
}

/** ext4, data=ordered: every prefix, with the acknowledgements made before the crash could have come. */
function* ext4States(recorded: Recording): Generator<CrashState> {
  const { steps } = recorded;
  const ends = new Map<number, number>();
  steps.forEach((step, index) => {
    if (step.kind === 'syncEnd') ends.set(step.sync, index);
  });
  for (let prefix = 0; prefix <= steps.length; prefix++) {
    // A sync that started after the prefix and ended would have committed more: the crash came before its end.
    let crashBy = steps.length;
    steps.forEach((step, index) => {
      if (step.kind === 'syncStart' && index > prefix) crashBy = Math.min(crashBy, ends.get(step.sync) ?? crashBy);
    });
    const contents = initialContent(recorded);
    steps.slice(0, prefix).forEach((step) => {
      if (step.kind === 'write') contents.set(step.inode, step.text);
    });
    yield {
      files: filesOf(
        recorded,
        steps.slice(0, prefix),
        () => true,
        (inode) => contents.get(inode) ?? '',
      ),
      acks: steps.slice(0, crashBy).filter((step) => step.kind === 'ack'),
      description: `ext4: the first ${prefix} of ${steps.length} steps`,
    };
  }
}

/** A small fixed-seed generator (mulberry32): the sample is the same on every run. */
function random(seed: number): () => number {
  let state = seed;
  return () => {
    state = (state + 0x6d2b79f5) | 0;
    let value = Math.imul(state ^ (state >>> 15), 1 | state);
    value = (value + Math.imul(value ^ (value >>> 7), 61 | value)) ^ value;
    return ((value ^ (value >>> 14)) >>> 0) / 4_294_967_296;
  };
}

/** Directories persisting independently: at each crash point, what was synced stays and the rest may each go. */
function* independentStates(recorded: Recording, samplesPerCrash: number): Generator<CrashState> {
  const { steps } = recorded;
  const next = random(20261127);
  for (let crash = 0; crash <= steps.length; crash++) {
    const before = steps.slice(0, crash);
    const ended = new Set(before.flatMap((step) => (step.kind === 'syncEnd' ? [step.sync] : [])));
    const syncs = before.flatMap((step, index) =>
      step.kind === 'syncStart' && ended.has(step.sync) ? [{ index, step }] : [],
    );
    const coveredName = (index: number, step: Extract<Step, { kind: 'create' | 'rename' | 'unlink' }>) =>
      syncs.some((sync) => sync.index > index && sync.step.directory === directoryOf(step));
    // A file's content is what its last fsync (started after the write) covers; otherwise nothing: a torn write.
    const contents = initialContent(recorded);
    before.forEach((step, index) => {
      if (step.kind !== 'write') return;
      if (syncs.some((sync) => sync.index > index && sync.step.inode === step.inode)) {
        contents.set(step.inode, step.text);
      }
    });
    const loose = before.flatMap((step, index) => (isNameStep(step) && !coveredName(index, step) ? [index] : []));
    const acks = before.filter((step) => step.kind === 'ack');
    const choices: Set<number>[] = [];
    if (loose.length <= 6) {
      for (let mask = 0; mask < 1 << loose.length; mask++) {
        choices.push(new Set(loose.filter((_, bit) => (mask & (1 << bit)) === 0)));
      }
    } else {
      // Every step lost alone, everything lost, nothing lost, and a sample of the rest.
      choices.push(new Set(loose), new Set());
      for (const lost of loose) choices.push(new Set(loose.filter((index) => index !== lost)));
      for (let sample = 0; sample < samplesPerCrash; sample++) {
        choices.push(new Set(loose.filter(() => next() < 0.5)));
      }
    }
    for (const kept of choices) {
      const lost = loose.filter((index) => !kept.has(index));
      yield {
        files: filesOf(
          recorded,
          before,
          (index) => !loose.includes(index) || kept.has(index),
          (inode) => contents.get(inode) ?? '',
        ),
        acks,
        description: `independent: crash after ${crash} of ${steps.length} steps, lost ${
          lost.map((index) => JSON.stringify(before[index])).join(', ') || 'nothing'
        }`,
      };
    }
  }
}

/** The distinct states, each with the most acknowledgements any crash leading to it had made. */
function distinct(states: Iterable<CrashState>): CrashState[] {
  const byKey = new Map<string, CrashState>();
  for (const state of states) {
    const key = JSON.stringify([...state.files].sort(([left], [right]) => (left < right ? -1 : 1)));
    const known = byKey.get(key);
    if (!known || known.acks.length < state.acks.length) byKey.set(key, state);
  }
  return [...byKey.values()];
}

const taskStates = ['pending', 'active', 'done', 'failed'] as const;

/** Task ids by state directory, from the names alone. */
async function filesById(directory: string): Promise<Map<string, string[]>> {
  const byId = new Map<string, string[]>();
  for (const state of taskStates) {
    for (const fileName of await readdir(path.join(directory, state))) {
      const name = decodeStateName(state, fileName);
      if (!name) continue;
      byId.set(name.id, [...(byId.get(name.id) ?? []), `${state}/${fileName}`]);
    }
  }
  return byId;
}

interface Problem {
  kind:
    | 'acknowledged task lost'
    | 'completed task not in done/'
    | 'complete task file in tmp/ lost'
    | 'two files of one task'
    | 'worker does not drain';
  detail: string;
}

/** The names in the queue's directories: what a drain's outcome depends on. */
async function namesIn(directory: string, directories: readonly string[]): Promise<string> {
  const names: string[] = [];
  for (const relative of directories) {
    for (const name of await readdir(path.join(directory, relative))) names.push(path.join(relative, name));
  }
  return names.sort().join('\n');
}

/**
 * Builds the state in a fresh directory, recovers it and checks what recovery left; then, unless a state recovered
 * to the same names was drained already, drains it with a worker and checks that every task finished.
 */
async function problemsOf(
  recorded: Recording,
  state: CrashState,
  durability: Durability,
  drained: Set<string>,
): Promise<Problem[]> {
  const directory = await mkdtemp(path.join(base, 'state-'));
  try {
    for (const relative of recorded.directories) await mkdir(path.join(directory, relative), { recursive: true });
    for (const [file, text] of state.files) await writeFile(path.join(directory, file), text);
    const acknowledged = new Set([...recorded.initialIds, ...state.acks.map((ack) => ack.id)]);
    // Every complete task file in the state (tmp/ included) is a task that must not be lost, acknowledged or not.
    const expected = new Set(acknowledged);
    for (const text of state.files.values()) {
      const id = /^id: (\S+)$/m.exec(text)?.[1];
      if (id !== undefined && taskIdPattern.test(id)) expected.add(id);
    }
    const queue = await FileTaskQueue.open({ directory, settings: { durability }, now: later });
    await queue.recover();
    const problems: Problem[] = [];
    const recovered = await filesById(directory);
    for (const [id, files] of recovered) {
      if (files.length > 1) problems.push({ kind: 'two files of one task', detail: `${id}: ${files.join(' and ')}` });
    }
    for (const id of expected) {
      if (recovered.has(id)) continue;
      problems.push({
        kind: acknowledged.has(id) ? 'acknowledged task lost' : 'complete task file in tmp/ lost',
        detail: id,
      });
    }
    for (const ack of state.acks) {
      const files = recovered.get(ack.id) ?? [];
      if (ack.outcome === 'done' && !files.some((file) => file.startsWith('done/'))) {
        problems.push({ kind: 'completed task not in done/', detail: `${ack.id}: ${files.join(' and ') || 'none'}` });
      }
    }
    const key = `${[...expected].sort().join()}\n${await namesIn(directory, recorded.directories)}`;
    if (drained.has(key)) return problems;
    drained.add(key);
    // What `work --exit-when-idle` does: claim and finish until nothing is left, then find active/ empty.
    const worker = new FileTaskConsumer(queue, idle);
    await worker.rescan();
    try {
      const claims = [];
      for (;;) {
        if (claims.length > 20) throw new Error('it claims without end');
        const claimed = await worker.claim();
        if (!claimed) break;
        claims.push(claimed);
      }
      // All at once, as a worker with room for them runs them: two claims of one task must both be recorded.
      for (const claimed of claims) await worker.complete(claimed, 'ok');
    } catch (error) {
      problems.push({ kind: 'worker does not drain', detail: (error as Error).message });
    }
    if (!(await queue.isIdle())) problems.push({ kind: 'worker does not drain', detail: 'the queue is not idle' });
    const finished = await filesById(directory);
    for (const [id, files] of finished) {
      if (files.length > 1 || !/^(done|failed)\//.test(files[0] ?? '')) {
        problems.push({ kind: 'worker does not drain', detail: `${id} is in ${files.join(' and ')}` });
      }
    }
    for (const id of recovered.keys()) {
      if (!finished.has(id)) problems.push({ kind: 'worker does not drain', detail: `${id} is lost` });
    }
    return problems;
  } finally {
    await rm(directory, { recursive: true, force: true });
  }
}

async function check(durability: Durability): Promise<void> {
  const recorded = await recordScenario(durability);
  const states = distinct([...ext4States(recorded), ...independentStates(recorded, 4)]);
  const failures: string[] = [];
  const kinds = new Map<string, number>();
  const drained = new Set<string>();
  // A few at a time: most of a state's time is waiting on the file system.
  const queued = [...states];
  const run = async () => {
    for (let state = queued.shift(); state !== undefined; state = queued.shift()) {
      const problems = await problemsOf(recorded, state, durability, drained);
      if (problems.length === 0) continue;
      for (const kind of new Set(problems.map((problem) => problem.kind))) kinds.set(kind, (kinds.get(kind) ?? 0) + 1);
      failures.push(
        `${state.description}:\n${problems.map((problem) => `  ${problem.kind}: ${problem.detail}`).join('\n')}`,
      );
    }
  };
  await Promise.all([run(), run(), run(), run()]);
  const summary = [...kinds].map(([kind, count]) => `${kind} in ${count}`).join('; ');
  expect(failures.slice(0, 3), `${failures.length} of ${states.length} crash states fail (${summary})`).toEqual([]);
}

describe('the file backend after a power cut', () => {
  it('loses no acknowledged task, leaves one file per task, and drains, with durability os', async () => {
    await check('os');
  }, 120_000);

  it('does the same with durability strict', async () => {
    await check('strict');
  }, 120_000);
});
