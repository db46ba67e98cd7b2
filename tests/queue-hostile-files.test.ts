// Hostile files in the queue directory, through the real `assistant` command in child processes: FIFOs, links to
// devices, dangling links and directories named like tasks must never wedge a worker, `queue recover` or a
// shutdown. Every wait is bounded; a process still running at the bound is killed and the test fails.
import { execFileSync } from 'node:child_process';
import { lstat, mkdir, readdir, readFile, symlink, utimes } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { cliMain, type NodeRun, startNode } from './helpers/node-process.ts';
import { type TempDir, tempDir } from './helpers/temp-dir.ts';

const config = (grace = '5s') => `data_dir: ./data
worker:
  poll_interval: 100ms
  shutdown_grace: ${grace}
`;

/** A task name that decodes, so the worker and recovery treat whatever carries it as a task. */
const hostileName = '5_20200101T000000000Z_01m81zbz7e0rvw1d46qzvhsksj--0000000000000000--system.echo.yaml';
const queueDir = (dir: TempDir, state: string) => path.join(dir.path, 'data', 'queue', state);

/** Runs `assistant <args>`; a process still running after `timeoutMs` is killed and the call throws. */
async function cli(dir: TempDir, args: readonly string[], timeoutMs = 20_000): Promise<NodeRun> {
  const run = startNode({ args: [cliMain, ...args], cwd: dir.path, env: { ASSISTANT_LOG_FORMAT: 'json' } });
  return exitWithin(run, timeoutMs, `assistant ${args.join(' ')}`);
}

async function exitWithin(run: ReturnType<typeof startNode>, timeoutMs: number, what: string): Promise<NodeRun> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<'late'>((resolve) => {
    timer = setTimeout(() => resolve('late'), timeoutMs);
  });
  const outcome = await Promise.race([run.exited, late]);
  clearTimeout(timer);
  if (outcome === 'late') {
    run.child.kill('SIGKILL');
    await run.exited;
    throw new Error(`${what} did not exit within ${timeoutMs}ms\nstdout:\n${run.stdout()}\nstderr:\n${run.stderr()}`);
  }
  return outcome;
}

async function enqueueEcho(dir: TempDir, payload: string): Promise<string> {
  const run = await cli(dir, ['enqueue', 'system.echo', '--payload', payload]);
  expect(run.stderr).toBe('');
  expect(run.code).toBe(0);
  return run.stdout.trim();
}

async function doneIds(dir: TempDir): Promise<string[]> {
  return (await readdir(queueDir(dir, 'done'))).map((name) => name.split('_')[2]?.split('--')[0] ?? name);
}

/** What sits in failed/ under the hostile name (lstat: never followed) and the reason beside it. */
async function quarantined(dir: TempDir) {
  const file = path.join(queueDir(dir, 'failed'), hostileName);
  return { info: await lstat(file), reason: await readFile(`${file}.error.txt`, 'utf8') };
}

describe('hostile files in the queue', () => {
  it('hole 17: a FIFO named like a task is quarantined and the worker keeps going', async () => {
    await using dir = await tempDir();
    await dir.write('config.yaml', config());
    const before = await enqueueEcho(dir, '1');
    execFileSync('mkfifo', [path.join(queueDir(dir, 'pending'), hostileName)]);
    const after = await enqueueEcho(dir, '2');
    const work = await cli(dir, ['work', '--exit-when-idle']);
    expect(work.code).toBe(0);
    expect(work.stdout).toContain('queue idle; exiting');
    expect((await doneIds(dir)).sort()).toEqual([before, after].sort());
    const { info, reason } = await quarantined(dir);
    expect(info.isFIFO()).toBe(true);
    expect(reason).toBe('a FIFO (named pipe), not a regular file\n');
  });

  it('hole 17: a symlink to /dev/zero named like a task is quarantined without being read', async () => {
    await using dir = await tempDir();
    await dir.write('config.yaml', config());
    const good = await enqueueEcho(dir, '1');
    await symlink('/dev/zero', path.join(queueDir(dir, 'pending'), hostileName));
    const work = await cli(dir, ['work', '--exit-when-idle']);
    expect(work.code).toBe(0);
    expect(await doneIds(dir)).toEqual([good]);
    const { info, reason } = await quarantined(dir);
    expect(info.isSymbolicLink()).toBe(true);
    expect(reason).toBe('a symbolic link, not a regular file; links are never followed\n');
  });

  it('hole 17: a dangling symlink in active/ is moved aside and work --exit-when-idle exits', async () => {
    await using dir = await tempDir();
    await dir.write('config.yaml', config());
    const good = await enqueueEcho(dir, '1');
    await symlink(path.join(dir.path, 'nowhere.yaml'), path.join(queueDir(dir, 'active'), hostileName));
    const work = await cli(dir, ['work', '--exit-when-idle']);
    expect(work.code).toBe(0);
    expect(await doneIds(dir)).toEqual([good]);
    expect(await readdir(queueDir(dir, 'active'))).toEqual([]);
    const { info, reason } = await quarantined(dir);
    expect(info.isSymbolicLink()).toBe(true);
    expect(reason).toBe('a symbolic link, not a regular file; only regular files are tasks\n');
  });

  it('hole 17: a directory named like a task in active/ does not keep the worker from starting', async () => {
    await using dir = await tempDir();
    await dir.write('config.yaml', config());
    const good = await enqueueEcho(dir, '1');
    await mkdir(path.join(queueDir(dir, 'active'), hostileName, 'inside'), { recursive: true });
    const work = await cli(dir, ['work', '--exit-when-idle']);
    expect(work.stderr).toBe('');
    expect(work.code).toBe(0);
    expect(await doneIds(dir)).toEqual([good]);
    const { info, reason } = await quarantined(dir);
    expect(info.isDirectory()).toBe(true);
    expect(reason).toBe('a directory, not a regular file; only regular files are tasks\n');
    // A directory in pending/ under the same name, when failed/ already holds one: set aside under a name of its own.
    await mkdir(path.join(queueDir(dir, 'pending'), hostileName, 'inside'), { recursive: true });
    const again = await cli(dir, ['work', '--exit-when-idle']);
    expect(again.code).toBe(0);
    const failed = await readdir(queueDir(dir, 'failed'));
    const aside = failed.find((name) => /^5_.*\.yaml\.[0-9a-f]{8}\.quarantined$/.test(name));
    expect(aside, failed.join(', ')).toBeDefined();
    expect(failed).toContain(`${aside}.error.txt`);
    // Listed as an unreadable entry of failed/, so `queue ls` shows it.
    const listed = await cli(dir, ['queue', 'ls', '--state', 'failed']);
    expect(listed.stdout).toContain(`${aside}`);
  });

  it('hole 17: queue recover moves a FIFO in active/ aside instead of hanging', async () => {
    await using dir = await tempDir();
    await dir.write('config.yaml', config());
    await enqueueEcho(dir, '1');
    execFileSync('mkfifo', [path.join(queueDir(dir, 'active'), hostileName)]);
    const recover = await cli(dir, ['queue', 'recover']);
    expect(recover.code).toBe(0);
    expect(recover.stdout).toContain('unreadable files moved to failed/: 1');
    expect(recover.stderr).toBe(
      `warning: active/${hostileName} moved to failed/: a FIFO (named pipe), not a regular file; only regular files are tasks\n`,
    );
    expect((await quarantined(dir)).info.isFIFO()).toBe(true);
  });

  it('hole 17: an old directory in workers/ or tmp/ and a FIFO in workers/ do not stop a worker from starting', async () => {
    await using dir = await tempDir();
    await dir.write('config.yaml', config());
    const good = await enqueueEcho(dir, '1');
    const oldDirectory = path.join(queueDir(dir, 'workers'), 'gone-host-1-abcdef.yaml');
    const oldTmp = path.join(queueDir(dir, 'tmp'), 'left-over');
    await mkdir(path.join(oldDirectory, 'inside'), { recursive: true });
    await mkdir(path.join(oldTmp, 'inside'), { recursive: true });
    const twoHoursAgo = new Date(Date.now() - 7_200_000);
    await utimes(oldDirectory, twoHoursAgo, twoHoursAgo);
    await utimes(oldTmp, twoHoursAgo, twoHoursAgo);
    execFileSync('mkfifo', [path.join(queueDir(dir, 'workers'), 'fifo-host-2-abcdef.yaml')]);
    const work = await cli(dir, ['work', '--exit-when-idle']);
    expect(work.stderr).toBe('');
    expect(work.code).toBe(0);
    expect(await doneIds(dir)).toEqual([good]);
    expect(await readdir(queueDir(dir, 'tmp'))).toEqual([]);
  });

  it('hole 17: SIGTERM stops a worker whose handler ignores its AbortSignal, within the grace, and the task goes back to pending/', async () => {
    await using dir = await tempDir();
    // A handler that never settles and keeps a timer alive, so nothing but the process ending stops it.
    await dir.write(
      'integrations/stubborn/manifest.yaml',
      'domain: stubborn\ndescription: Ignores its AbortSignal.\ndefault_instance:\n  name: stubborn\ntasks:\n  hold:\n    handler: ./src/hold.ts#hold\n',
    );
    await dir.write(
      'integrations/stubborn/src/hold.ts',
      'export function hold(): Promise<never> {\n  setInterval(() => {}, 60_000);\n  return new Promise(() => {});\n}\n',
    );
    await dir.write('config.yaml', `${config('500ms')}integration_dirs: [./integrations]\n`);
    const enqueue = await cli(dir, ['enqueue', 'stubborn.hold']);
    expect(enqueue.stderr).toBe('');
    const id = enqueue.stdout.trim();
    // At debug: the test waits for the task's own "started" line, which the default level leaves out.
    const worker = startNode({
      args: [cliMain, 'work'],
      cwd: dir.path,
      env: { ASSISTANT_LOG_FORMAT: 'json', ASSISTANT_LOG_LEVEL: 'debug' },
    });
    await worker.waitForOutput(/\(stubborn\.hold\) started, attempt 1 of 3/);
    worker.child.kill('SIGTERM');
    // Grace 500 ms plus the 3 s margin, and room for a loaded machine: bounded, not timed.
    const run = await exitWithin(worker, 15_000, 'the worker after SIGTERM');
    expect(run.stdout).toContain('stopped by shutdown; back in pending/');
    const pending = await readdir(queueDir(dir, 'pending'));
    expect(pending).toHaveLength(1);
    expect(pending[0]).toContain(`_${id}--`);
    expect(await readdir(queueDir(dir, 'active'))).toEqual([]);
    const file = await readFile(path.join(queueDir(dir, 'pending'), pending[0] ?? ''), 'utf8');
    expect(file).toMatch(/^attempts: 0$/m);
  });

  it('hole 19: enqueue --payload nested deeper than the limit is refused before parsing, with exit 2', async () => {
    await using dir = await tempDir();
    await dir.write('config.yaml', config());
    const deep = `${'['.repeat(65)}${']'.repeat(65)}`;
    const run = await cli(dir, ['enqueue', 'system.echo', '--payload', deep]);
    expect(run.stderr).toMatch(
      /^assistant: --payload is nested more than 64 levels deep; the limit is 64 \(maxTaskNestingDepth\)\nhint: /,
    );
    expect(run.code).toBe(2);
    expect(await readdir(queueDir(dir, 'pending')).catch(() => [])).toEqual([]);
    const atLimit = await cli(dir, ['enqueue', 'system.echo', '--payload', `${'['.repeat(64)}${']'.repeat(64)}`]);
    expect(atLimit.code).toBe(0);
  });
});
