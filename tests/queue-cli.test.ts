// The queue through the `assistant` command, as a person uses it: enqueue, run a worker until the queue is idle,
// look at the results, retry what failed, and stop a worker in the middle of a task.
import { readdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import * as z from 'zod';
import { cliMain, runCli, startNode } from './helpers/node-process.ts';
import { type TempDir, tempDir } from './helpers/temp-dir.ts';

const config = (grace = '5s') => `data_dir: ./data
worker:
  concurrency: 2
  poll_interval: 100ms
  shutdown_grace: ${grace}
`;

async function cli(dir: TempDir, args: readonly string[]) {
  return runCli(args, { cwd: dir.path, env: { ASSISTANT_LOG_FORMAT: 'json' } });
}

async function enqueue(dir: TempDir, args: readonly string[]): Promise<string> {
  const run = await cli(dir, ['enqueue', ...args]);
  expect(run.stderr).toBe('');
  expect(run.code).toBe(0);
  return run.stdout.trim();
}

const showSchema = z.object({
  id: z.string(),
  state: z.enum(['pending', 'active', 'done', 'failed']),
  path: z.string(),
  task: z
    .object({
      attempts: z.number(),
      payload: z.unknown(),
      result: z.unknown().optional(),
      error: z.object({ type: z.string(), message: z.string() }).optional(),
    })
    .optional(),
  problem: z.string().optional(),
});

async function show(dir: TempDir, id: string) {
  const run = await cli(dir, ['task', 'show', id, '--json']);
  expect(run.code).toBe(0);
  return showSchema.parse(JSON.parse(run.stdout));
}

const queueDir = (dir: TempDir, state: string) => path.join(dir.path, 'data', 'queue', state);

describe('assistant enqueue, work, queue and task', () => {
  it('runs tasks to done/ and failed/, shows them, and retries a failed one', async () => {
    await using dir = await tempDir();
    await dir.write('config.yaml', config());
    await dir.write('payload.json', '{"from": "a file"}');
    const echo = await enqueue(dir, ['system.echo', '--payload', '{"hello": "world"}']);
    const fromFile = await enqueue(dir, ['system.echo', '--payload', '@payload.json', '--priority', '1']);
    const sleep = await enqueue(dir, ['system.sleep', '--payload', '{"ms": 20}']);
    // A payload the handler refuses for good: the task fails without retries.
    const badPayload = await enqueue(dir, ['system.sleep', '--payload', '{"seconds": 1}']);
    expect(echo).toMatch(/^[0-9a-z]{26}$/);
    const refused = await cli(dir, ['enqueue', 'no.such.handler']);
    expect(refused.stderr).toMatch(
      /^assistant: no integration handles task type `no\.such\.handler`\nhint: known task types: .*system\.echo/,
    );
    expect(refused.code).toBe(2);

    const listed = await cli(dir, ['queue', 'ls', '--json']);
    const entries = z
      .array(z.object({ state: z.string(), id: z.string().nullable(), type: z.string().nullable() }))
      .parse(JSON.parse(listed.stdout));
    // Run order: the priority-1 task first, then the rest in the order they were added.
    expect(entries.map((entry) => entry.id)).toEqual([fromFile, echo, sleep, badPayload]);
    expect(entries.every((entry) => entry.state === 'pending')).toBe(true);

    const work = await cli(dir, ['work', '--exit-when-idle', '--concurrency', '3']);
    expect(work.stderr).toBe('');
    expect(work.code).toBe(0);
    expect(work.stdout).toContain('queue idle; exiting');

    expect(await show(dir, echo)).toMatchObject({ state: 'done', task: { result: { hello: 'world' }, attempts: 1 } });
    // Handlers write the human log; the day's file has a line per echo.
    const log = await cli(dir, ['log']);
    expect(log.stdout).toMatch(
      new RegExp(
        `^- \\d\\d:\\d\\d:\\d\\d \\*\\*system\\.echo\\*\\* echoed task ${echo} \\(system\\.echo returns its payload\\)$`,
        'm',
      ),
    );
    expect(await show(dir, fromFile)).toMatchObject({ state: 'done', task: { result: { from: 'a file' } } });
    expect(await show(dir, sleep)).toMatchObject({ state: 'done', task: { result: { sleptMs: 20 } } });
    expect(await show(dir, badPayload)).toMatchObject({
      state: 'failed',
      task: {
        error: { type: 'UnrecoverableError', message: expect.stringMatching(/^system\.sleep expects a payload/) },
      },
    });

    const stats = await cli(dir, ['queue', 'stats', '--json']);
    expect(JSON.parse(stats.stdout)).toMatchObject({ pending: 0, ready: 0, active: 0, done: 3, failed: 1 });

    const retry = await cli(dir, ['task', 'retry', badPayload]);
    expect(retry.stdout).toMatch(new RegExp(`^${badPayload} is pending again: `));
    expect(retry.code).toBe(0);
    expect(await show(dir, badPayload)).toMatchObject({ state: 'pending', task: { attempts: 0 } });

    const again = await cli(dir, ['task', 'retry', echo]);
    expect(again.stderr).toBe(`assistant: task ${echo} is done; only failed tasks can be retried\n`);
    expect(again.code).toBe(1);
    const missing = await cli(dir, ['task', 'show', '01m81zbz7e0rvw1d46qzvhsksj']);
    expect(missing.stderr).toMatch(/^assistant: no task with id 01m81zbz7e0rvw1d46qzvhsksj\nhint: /);
    expect(missing.code).toBe(1);
  });

  it('retries failed tasks in bulk by type and age, and lists them first with --dry-run', async () => {
    await using dir = await tempDir();
    await dir.write('config.yaml', config());
    // Two tasks the handler refuses for good, and a success that must stay where it is.
    const sleeps = [
      await enqueue(dir, ['system.sleep', '--payload', '{"seconds": 1}']),
      await enqueue(dir, ['system.sleep', '--payload', '{"seconds": 2}']),
    ];
    const done = await enqueue(dir, ['system.echo', '--payload', '{"ok": true}']);
    const work = await cli(dir, ['work', '--exit-when-idle']);
    expect(work.code).toBe(0);
    for (const id of sleeps) expect(await show(dir, id)).toMatchObject({ state: 'failed' });

    const needsState = await cli(dir, ['task', 'retry', '--type', 'system.*']);
    expect(needsState.stderr).toMatch(/needs `--state failed`/);
    expect(needsState.code).toBe(2);
    const badSince = await cli(dir, ['task', 'retry', '--state', 'failed', '--since', 'yesterday-ish']);
    expect(badSince.stderr).toMatch(/--since expects a duration/);
    expect(badSince.code).toBe(2);

    // Nothing failed in the future: --since a time to come matches nothing.
    const none = await cli(dir, ['task', 'retry', '--state', 'failed', '--since', '2999-01-01T00:00:00Z', '--json']);
    expect(JSON.parse(none.stdout)).toEqual({ dry_run: false, retried: [], problems: [] });

    const dry = await cli(dir, [
      'task',
      'retry',
      '--state',
      'failed',
      '--type',
      'system.*',
      '--since',
      '1h',
      '--dry-run',
    ]);
    expect(dry.code).toBe(0);
    expect(dry.stdout).toContain('2 failed tasks would be pending again');
    for (const id of sleeps) expect(await show(dir, id)).toMatchObject({ state: 'failed' });

    const other = await cli(dir, ['task', 'retry', '--state', 'failed', '--type', 'email.*', '--json']);
    expect(JSON.parse(other.stdout).retried).toEqual([]);

    const bulk = await cli(dir, [
      'task',
      'retry',
      '--state',
      'failed',
      '--type',
      'system.*',
      '--since',
      '1h',
      '--json',
    ]);
    expect(bulk.code).toBe(0);
    const retried = z
      .object({ retried: z.array(z.object({ id: z.string(), type: z.string() })), problems: z.array(z.unknown()) })
      .parse(JSON.parse(bulk.stdout));
    expect(retried.retried.map((task) => task.id).sort()).toEqual([...sleeps].sort());
    expect(retried.problems).toEqual([]);
    for (const id of sleeps) expect(await show(dir, id)).toMatchObject({ state: 'pending', task: { attempts: 0 } });
    expect(await show(dir, done)).toMatchObject({ state: 'done' });
  });

  it('deletes failed tasks, one or in bulk, and refuses to delete a task that is not failed', async () => {
    await using dir = await tempDir();
    await dir.write('config.yaml', config());
    const sleeps = [
      await enqueue(dir, ['system.sleep', '--payload', '{"seconds": 1}']),
      await enqueue(dir, ['system.sleep', '--payload', '{"seconds": 2}']),
      await enqueue(dir, ['system.sleep', '--payload', '{"seconds": 3}']),
    ];
    const done = await enqueue(dir, ['system.echo', '--payload', '{"ok": true}']);
    expect((await cli(dir, ['work', '--exit-when-idle'])).code).toBe(0);

    const notFailed = await cli(dir, ['task', 'delete', done]);
    expect(notFailed.stderr).toBe(`assistant: task ${done} is done, not failed: only failed tasks are deleted\n`);
    expect(notFailed.code).toBe(1);
    const one = await cli(dir, ['task', 'delete', sleeps[0] ?? '']);
    expect(one.stdout).toBe(`${sleeps[0]} is deleted\n`);

    const dry = await cli(dir, ['task', 'delete', '--state', 'failed', '--type', 'system.*', '--dry-run']);
    expect(dry.stdout).toContain('2 failed tasks would be deleted');
    const bulk = await cli(dir, ['task', 'delete', '--state', 'failed', '--type', 'system.*', '--json']);
    expect(bulk.code).toBe(0);
    const deleted = z
      .object({ deleted: z.array(z.object({ id: z.string() })), problems: z.array(z.unknown()) })
      .parse(JSON.parse(bulk.stdout));
    expect(deleted.deleted.map((task) => task.id).sort()).toEqual(sleeps.slice(1).sort());
    // What is left: the done task, nothing failed.
    const left = await cli(dir, ['queue', 'ls', '--json']);
    expect(JSON.parse(left.stdout).map((task: { id: string; state: string }) => [task.id, task.state])).toEqual([
      [done, 'done'],
    ]);
  }, 90_000);

  it('refuses bad arguments with exit 2 and a hint, writing nothing', async () => {
    await using dir = await tempDir();
    await dir.write('config.yaml', config());
    for (const args of [
      ['enqueue', 'system.echo', '--payload', '{not json'],
      ['enqueue', 'System Echo'],
      ['enqueue', 'system.echo', '--priority', '12'],
      ['enqueue', 'system.echo', '--delay', 'soon'],
      ['enqueue', 'system.echo', '--payload', '@missing.json'],
      ['queue', 'ls', '--state', 'lost'],
      ['work', '--concurrency', '0'],
    ]) {
      const run = await cli(dir, args);
      expect(run.stderr, args.join(' ')).toMatch(/^assistant: .+\n/);
      expect(run.code, args.join(' ')).toBe(2);
    }
    const pending = await readdir(queueDir(dir, 'pending')).catch(() => []);
    expect(pending).toEqual([]);
  });

  it('sets a corrupt hand-dropped file aside with its reason and runs the good tasks', async () => {
    await using dir = await tempDir();
    await dir.write('config.yaml', config());
    const good = await enqueue(dir, ['system.echo', '--payload', '1']);
    const corrupt = '5_20261122T000000000Z_01m81zbz7e0rvw1d46qzvhsksj--0000000000000000--system.echo.yaml';
    await writeFile(path.join(queueDir(dir, 'pending'), corrupt), 'payload: [unclosed\n');
    const work = await cli(dir, ['work', '--exit-when-idle']);
    expect(work.code).toBe(0);
    expect(work.stdout).toContain('moved to failed/: YAML syntax at line 2');
    expect(await show(dir, good)).toMatchObject({ state: 'done', task: { result: 1 } });
    expect(await readFile(path.join(queueDir(dir, 'failed'), corrupt), 'utf8')).toBe('payload: [unclosed\n');
    expect(await readFile(path.join(queueDir(dir, 'failed'), `${corrupt}.error.txt`), 'utf8')).toMatch(/^YAML syntax/);
    const record = await show(dir, '01m81zbz7e0rvw1d46qzvhsksj');
    expect(record).toMatchObject({ state: 'failed', problem: expect.stringMatching(/^YAML syntax/) });
  });

  it('fails a task that outlives its timeout, after its attempts', async () => {
    await using dir = await tempDir();
    await dir.write(
      'config.yaml',
      `${config()}queue:\n  policies:\n    overrides:\n      system.sleep: {timeout: 200ms, max_attempts: 1}\n`,
    );
    const id = await enqueue(dir, ['system.sleep', '--payload', '{"ms": 600000}']);
    const work = await cli(dir, ['work', '--exit-when-idle']);
    expect(work.code).toBe(0);
    expect(await show(dir, id)).toMatchObject({
      state: 'failed',
      task: { attempts: 1, error: { message: 'timed out after 200ms' } },
    });
  });

  it('returns a running task to pending, attempt not counted, when stopped past the grace period', async () => {
    await using dir = await tempDir();
    await dir.write('config.yaml', config('200ms'));
    const id = await enqueue(dir, ['system.sleep', '--payload', '{"ms": 600000}']);
    // At debug: the test waits for the task's own "started" line, which the default level leaves out.
    const worker = startNode({
      args: [cliMain, 'work'],
      cwd: dir.path,
      env: { ASSISTANT_LOG_FORMAT: 'json', ASSISTANT_LOG_LEVEL: 'debug' },
    });
    await worker.waitForOutput(/\(system\.sleep\) started, attempt 1 of 3/);
    worker.child.kill('SIGTERM');
    const run = await worker.exited;
    expect(run.stdout).toContain('stopped by shutdown; back in pending/');
    expect(run.code).toBe(0);
    expect(await show(dir, id)).toMatchObject({ state: 'pending', task: { attempts: 0 } });
    expect(await readdir(queueDir(dir, 'active'))).toEqual([]);
  });
});
