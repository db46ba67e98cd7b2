// What a person reads from the queue and task commands (the JSON shapes are covered in queue-cli.test.ts):
// aligned listings, a task's summary, unreadable files, and the maintenance commands' reports.
import { utimes, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import * as z from 'zod';
import { runCli } from './helpers/node-process.ts';
import { type TempDir, tempDir } from './helpers/temp-dir.ts';

const config = 'data_dir: ./data\nworker:\n  poll_interval: 100ms\n';

async function cli(dir: TempDir, args: readonly string[]) {
  return runCli(args, { cwd: dir.path, env: { ASSISTANT_LOG_FORMAT: 'json' } });
}

async function enqueue(dir: TempDir, args: readonly string[]): Promise<string> {
  const run = await cli(dir, ['enqueue', ...args]);
  expect(run.stderr).toBe('');
  expect(run.code).toBe(0);
  return run.stdout.trim();
}

const queueDir = (dir: TempDir, state: string) => path.join(dir.path, 'data', 'queue', state);

describe('queue and task commands for a person', () => {
  it('lists tasks in aligned columns, an unreadable file by its name, and shows a task and a broken file', async () => {
    await using dir = await tempDir();
    await dir.write('config.yaml', config);
    const echo = await enqueue(dir, ['system.echo', '--payload', '{"hello": "world"}', '--priority', '3']);
    const later = await enqueue(dir, ['system.sleep', '--payload', '{"ms": 1}', '--delay', '1h']);
    const work = await cli(dir, ['work', '--exit-when-idle']);
    expect(work.code).toBe(0);
    // Set aside by hand the way the worker does it: the file as it was, and its reason beside it.
    await writeFile(path.join(queueDir(dir, 'failed'), 'stray.bin'), 'not a task');
    await writeFile(path.join(queueDir(dir, 'failed'), 'stray.bin.error.txt'), 'the file name is not a task name\n');

    const listed = await cli(dir, ['queue', 'ls']);
    expect(listed.code).toBe(0);
    const rows = listed.stdout.trimEnd().split('\n');
    expect(rows[0]).toMatch(/^STATE {4}P {2}READY {23}ID {26}TYPE$/);
    expect(rows[1]).toMatch(
      new RegExp(`^pending  5  \\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d:\\d\\d [+-]\\d\\d:\\d\\d  ${later}  system\\.sleep$`),
    );
    expect(rows.slice(2).sort()).toEqual(
      [
        expect.stringMatching(new RegExp(`^done     3  .{26}  ${echo}  system\\.echo$`)),
        expect.stringMatching(/^failed {3}- {2}- {27}\(unreadable\) {16}stray\.bin$/),
      ].sort(),
    );
    expect(rows).toHaveLength(4);

    const shown = await cli(dir, ['task', 'show', echo]);
    expect(shown.code).toBe(0);
    expect(shown.stdout).toMatch(new RegExp(`^id {8}${echo}\\ntype {6}system\\.echo\\nstate {5}done\\npriority  3\\n`));
    expect(shown.stdout).toContain('\nattempts  1 of 3\n');
    expect(shown.stdout).toMatch(/\nfinished {2}.+ \(took \d+ms\)\n/);
    expect(shown.stdout).toContain('\n\npayload:\n  {"hello":"world"}\n\nresult:\n  {"hello":"world"}\n');

    const corrupt = '5_20261122T000000000Z_01m81zbz7e0rvw1d46qzvhsksj--0000000000000000--system.echo.yaml';
    await writeFile(path.join(queueDir(dir, 'failed'), corrupt), 'payload: [unclosed\n');
    await writeFile(path.join(queueDir(dir, 'failed'), `${corrupt}.error.txt`), 'YAML syntax at line 2, column 1\n');
    const broken = await cli(dir, ['task', 'show', '01m81zbz7e0rvw1d46qzvhsksj']);
    expect(broken.code).toBe(0);
    expect(broken.stdout).toBe(
      // The file relative to the data directory, as the API shows it.
      `state    failed\nfile     queue/failed/${corrupt}\nproblem  YAML syntax at line 2, column 1\n`,
    );
  });

  it('refuses a malformed id with exit 2, and an unknown one with exit 1 and a hint', async () => {
    await using dir = await tempDir();
    await dir.write('config.yaml', config);
    for (const command of ['show', 'retry']) {
      const malformed = await cli(dir, ['task', command, 'latest']);
      expect(malformed.stderr).toMatch(/^assistant: `latest` is not a task id\nhint: .+\n$/);
      expect(malformed.code).toBe(2);
      const unknown = await cli(dir, ['task', command, '01m81zbz7e0rvw1d46qzvhsksj']);
      expect(unknown.stderr).toMatch(/^assistant: no task with id 01m81zbz7e0rvw1d46qzvhsksj\nhint: .+\n$/);
      expect(unknown.code).toBe(1);
    }
  });

  it('refuses a payload number that JSON cannot hold with exit 2 and a hint', async () => {
    await using dir = await tempDir();
    await dir.write('config.yaml', config);
    const run = await cli(dir, ['enqueue', 'system.echo', '--payload', '{"big": 1e999}']);
    expect(run.stderr).toBe(
      'assistant: --payload holds a number too large for JSON (it reads as Infinity)\nhint: write very large numbers as strings\n',
    );
    expect(run.code).toBe(2);
  });

  it('prunes and recovers on demand and says what it did', async () => {
    await using dir = await tempDir();
    await dir.write('config.yaml', config);
    const old = await enqueue(dir, ['system.echo']);
    expect((await cli(dir, ['work', '--exit-when-idle'])).code).toBe(0);
    // Past the default retention of done tasks (7 days), and a tmp/ leftover past its hour.
    const longAgo = new Date(Date.now() - 8 * 86_400_000);
    const listed = await cli(dir, ['queue', 'ls', '--state', 'done', '--json']);
    const [done] = z.array(z.object({ id: z.string(), path: z.string() })).parse(JSON.parse(listed.stdout));
    expect(done?.id).toBe(old);
    // `path` is relative to the data directory.
    const donePath = path.join(dir.path, 'data', z.string().parse(done?.path));
    await utimes(donePath, longAgo, longAgo);
    const leftover = path.join(queueDir(dir, 'tmp'), 'interrupted-write');
    await writeFile(leftover, 'half a task');
    await utimes(leftover, longAgo, longAgo);

    const recovered = await cli(dir, ['queue', 'recover']);
    expect(recovered.code).toBe(0);
    expect(recovered.stdout).toContain('\nstale tmp/ files removed: 1\n');
    const again = await cli(dir, ['queue', 'recover', '--json']);
    expect(JSON.parse(again.stdout)).toEqual({
      requeued: [],
      failed: [],
      removedDuplicates: [],
      quarantined: [],
      removedTmp: 0,
    });

    const pruned = await cli(dir, ['queue', 'prune']);
    expect(pruned.stdout).toBe('pruned 1 done and 0 failed tasks\n');
    const stats = await cli(dir, ['queue', 'stats', '--json']);
    expect(JSON.parse(stats.stdout)).toMatchObject({ pending: 0, active: 0, done: 0, failed: 0 });
  });
});
