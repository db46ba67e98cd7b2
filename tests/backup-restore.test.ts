// `assistant backup` while a real worker runs real tasks, `assistant restore` elsewhere, and `assistant queue stats`
// on the restored copy: the queue as it was at the backup's moment, each task exactly once.
import { spawnSync } from 'node:child_process';
import { readdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { openFileTaskQueue } from '@assistant/queue';
import { describe, expect, it } from 'vitest';
import * as z from 'zod';
import { cliMain, runCli as runCliProcess, startNode } from './helpers/node-process.ts';
import { tempDir } from './helpers/temp-dir.ts';
import { waitUntil } from './helpers/wait-until.ts';

const countsSchema = z.object({ pending: z.int(), active: z.int(), done: z.int(), failed: z.int() });
const backupSummarySchema = z.object({
  file: z.string(),
  files: z.int(),
  with_secrets: z.boolean(),
  excluded: z.array(z.string()),
  queue: z.object({ included: z.literal(true), counts: countsSchema, claims_held_ms: z.int() }),
});

/** The CLI as a process, with room for a loaded machine (each start of it loads the config and every manifest). */
const runCli = (args: readonly string[], options: Parameters<typeof runCliProcess>[1] = {}) =>
  runCliProcess(args, { timeoutMs: 50_000, ...options });

describe('assistant backup and restore', () => {
  it('backs up while tasks flow, restores elsewhere, and queue stats there equals the counts at the backup moment', async () => {
    await using source = await tempDir();
    await using target = await tempDir();
    await source.write(
      'config.yaml',
      'data_dir: ./data\nworker:\n  concurrency: 2\n  poll_interval: 50ms\n  shutdown_grace: 5s\n',
    );
    await source.write('secrets.yaml', 'unused_secret: hunter2\n', 0o600);
    await source.write('data/api-token', 'a-token-that-stays-home\n', 0o600);
    await source.write('data/notes/hello.md', '---\ntitle: hello\n---\nA note.\n');
    const queue = await openFileTaskQueue({ directory: path.join(source.path, 'data', 'queue') });
    const ids: string[] = [];
    const enqueue = async (readyAtMs?: number) => {
      const outcome = await queue.enqueue({
        type: 'system.sleep',
        payload: { ms: 20 },
        ...(readyAtMs === undefined ? {} : { readyAtMs }),
      });
      if (outcome.status !== 'enqueued') throw new Error(`not enqueued: ${outcome.status}`);
      ids.push(outcome.task.id);
    };
    // A few tasks due only in an hour, so some are surely pending at the backup's moment whatever the machine's speed.
    const scheduled = 5;
    for (let index = 0; index < scheduled; index += 1) await enqueue(Date.now() + 3_600_000);
    for (let index = 0; index < 20; index += 1) await enqueue();
    const worker = startNode({
      args: [cliMain, 'work', '--config', path.join(source.path, 'config.yaml')],
      env: { ASSISTANT_LOG_FORMAT: 'json' },
    });
    // Tasks keep arriving all through the backup, as the server's would, and the worker keeps running them.
    let arriving = true;
    const arrivals = (async () => {
      while (arriving) {
        await enqueue();
        await new Promise((resolve) => setTimeout(resolve, 30));
      }
    })();
    try {
      await waitUntil(async () => (await queue.stats()).done >= 4, { what: 'the worker to finish a few tasks' });
      const enqueuedBefore = [...ids];

      const backupRun = runCli(['backup', '--out', path.join(target.path, 'backup.tar.gz'), '--json'], {
        cwd: source.path,
      });
      const backup = await backupRun.finally(() => {
        arriving = false;
      });
      await arrivals;
      expect(backup.stderr).toBe('');
      expect(backup.code).toBe(0);
      const summary = backupSummarySchema.parse(JSON.parse(backup.stdout));
      const { counts } = summary.queue;
      expect(counts.done).toBeGreaterThanOrEqual(4);
      expect(counts.pending).toBeGreaterThanOrEqual(scheduled);
      const total = counts.pending + counts.active + counts.done + counts.failed;
      // Every task enqueued before the backup began is in it; some of those that came during it are too.
      expect(total).toBeGreaterThanOrEqual(enqueuedBefore.length);
      expect(total).toBeLessThanOrEqual(ids.length);
      expect(summary.with_secrets).toBe(false);
      expect(summary.excluded.sort()).toEqual(['data/api-token', 'secrets.yaml']);

      // GNU tar reads it too: nothing but files and directories, long task names intact.
      const listing = spawnSync('tar', ['tzf', path.join(target.path, 'backup.tar.gz')], { encoding: 'utf8' });
      expect(listing.status).toBe(0);
      const listed = listing.stdout.trim().split('\n');
      expect(listed).toContain('config.yaml');
      expect(listed).toContain('data/notes/hello.md');
      expect(listed).not.toContain('secrets.yaml');
      expect(listed).not.toContain('data/api-token');
      expect(listed.filter((name) => /^data\/queue\/(pending|active|done|failed)\/.*\.yaml$/.test(name))).toHaveLength(
        total,
      );

      const into = path.join(target.path, 'restored dir');
      const restore = await runCli(['restore', path.join(target.path, 'backup.tar.gz'), '--into', into], {
        cwd: target.path,
      });
      expect(restore.stderr).toBe('');
      expect(restore.code).toBe(0);
      expect(restore.stdout).toContain(`restored ${path.join(target.path, 'backup.tar.gz')} into ${into}`);

      const stats = await runCli(
        ['queue', 'stats', '--json', '--config', path.join(into, 'config.yaml'), '--data', path.join(into, 'data')],
        { cwd: target.path },
      );
      expect(stats.code).toBe(0);
      expect(countsSchema.parse(JSON.parse(stats.stdout))).toEqual(counts);
      // Each task exactly once across the restored states, none that was never enqueued, none enqueued before missing.
      const restoredIds: string[] = [];
      for (const state of ['pending', 'active', 'done', 'failed']) {
        for (const name of await readdir(path.join(into, 'data', 'queue', state))) {
          restoredIds.push(/_([0-9a-z]{26})--/.exec(name)?.[1] ?? name);
        }
      }
      expect(new Set(restoredIds).size).toBe(restoredIds.length);
      expect(restoredIds.length).toBe(total);
      expect(restoredIds.filter((id) => !ids.includes(id))).toEqual([]);
      expect(enqueuedBefore.filter((id) => !restoredIds.includes(id))).toEqual([]);
      expect(await readFile(path.join(into, 'data', 'notes', 'hello.md'), 'utf8')).toContain('A note.');

      // The hold was released: the worker goes on to finish everything.
      await waitUntil(async () => (await queue.stats()).done === ids.length - scheduled, {
        what: 'the worker to finish every task that is due',
      });
      await expect(readdir(path.join(source.path, 'data', 'queue'))).resolves.not.toContain('claims-hold.json');
    } finally {
      arriving = false;
      await arrivals;
      worker.child.kill('SIGTERM');
      await worker.exited;
      await queue.close();
    }
    // Four CLI processes and a worker: several seconds each on a loaded machine.
  }, 150_000);

  it('refuses a path-traversal archive through the CLI, exit 1, writing nothing', async () => {
    await using dir = await tempDir();
    await dir.write('escape/placeholder', '');
    // A real tar made by GNU tar with a member named `../escaped.txt` (-P keeps it as written).
    await dir.write('escaped.txt', 'planted');
    const made = spawnSync('tar', ['-czPf', 'evil.tar.gz', '../escaped.txt'], {
      cwd: path.join(dir.path, 'escape'),
      encoding: 'utf8',
    });
    expect(made.status, made.stderr).toBe(0);
    await writeFile(path.join(dir.path, 'escaped.txt'), 'original');
    const into = path.join(dir.path, 'escape', 'target');
    const run = await runCli(['restore', 'evil.tar.gz', '--into', into], { cwd: path.join(dir.path, 'escape') });
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/^assistant: the archive was not restored: entry `\.\.\/escaped\.txt` climbs out/);
    expect(await readFile(path.join(dir.path, 'escaped.txt'), 'utf8')).toBe('original');
    await expect(readdir(into)).rejects.toThrow(/ENOENT/);
  }, 60_000);
});
