// Scale-out as docs/scale-out.md sets it up: one Redis, one server, two workers in process trees and data
// directories of their own (standing in for two machines) that reach notes only through the server's API. 5,000
// tasks drain while one worker is SIGKILLed 20 times in the middle of tasks: every task completes exactly once, none
// fails, and each task's note (written through the server) is there once, on the server's disk.
import { randomBytes } from 'node:crypto';
import { readdir } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { TaskEvent, TaskQueue } from '@assistant/queue';
import { openRedisTaskQueue } from '@assistant/queue-redis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from './helpers/free-port.ts';
import { cliMain, type NodeProcess, startNode } from './helpers/node-process.ts';
import { type RedisServer, startRedis } from './helpers/redis.ts';
import { tempDir } from './helpers/temp-dir.ts';
import { waitUntil } from './helpers/wait-until.ts';

const tally = fileURLToPath(new URL('./fixtures/integrations/scale-out/tally', import.meta.url));
const taskCount = 5_000;
const kills = 20;
const type = 'tally.items.record';

let redis: RedisServer;
beforeAll(async () => {
  redis = await startRedis();
});
afterAll(async () => {
  await redis?.[Symbol.asyncDispose]();
});

async function stop(process: NodeProcess | undefined): Promise<void> {
  if (!process || process.child.exitCode !== null || process.child.signalCode !== null) return;
  process.child.kill('SIGTERM');
  await process.exited;
}

describe('scale-out: two remote workers on one Redis', () => {
  it('drains 5,000 tasks exactly once while one worker is SIGKILLed 20 times mid-task', {
    timeout: 420_000,
  }, async () => {
    await using server = await tempDir();
    await using machineA = await tempDir();
    await using machineB = await tempDir();
    const port = await freePort();
    const token = randomBytes(24).toString('hex');
    const prefix = `scale-${randomBytes(4).toString('hex')}`;
    const configFile = await server.write(
      'config.yaml',
      `data_dir: ./data
integration_dirs: [${JSON.stringify(tally)}]
integrations:
  - {type: tally, name: counts}
server: {port: ${port}, token: "${token}"}
worker: {concurrency: 8, poll_interval: 100ms, shutdown_grace: 1s}
queue:
  backend: redis
  redis: {url: "${redis.url}", prefix: ${prefix}}
  lease: 2s
  policies:
    defaults: {max_attempts: 10, backoff: {type: fixed, delay: 100ms}}
`,
    );
    const processes: NodeProcess[] = [];
    const start = (args: string[], dataDir: string) => {
      const started = startNode({
        args: [cliMain, ...args],
        env: {
          ASSISTANT_CONFIG: configFile,
          ASSISTANT_DATA: dataDir,
          ASSISTANT_TOKEN: token,
          ASSISTANT_LOG_FORMAT: 'json',
          // The test waits for tasks' own "started" lines, which the default level leaves out.
          ASSISTANT_LOG_LEVEL: 'debug',
        },
      });
      processes.push(started);
      return started;
    };
    const serverUrl = `http://127.0.0.1:${port}`;
    let queue: TaskQueue | undefined;
    try {
      const serve = start(['serve'], path.join(server.path, 'data'));
      await serve.waitForOutput(/listening on/, { timeoutMs: 30_000 });

      queue = await openRedisTaskQueue({ url: redis.url, prefix });
      const completed = new Map<string, number>();
      const failed = new Set<string>();
      const events = queue.events();
      const unsubscribe = events.subscribe((event: TaskEvent) => {
        if (event.type !== type) return;
        if (event.kind === 'completed') completed.set(event.id, (completed.get(event.id) ?? 0) + 1);
        if (event.kind === 'failed') failed.add(event.id);
      });
      const ids: string[] = [];
      for (let index = 0; index < taskCount; index += 100) {
        const batch = await Promise.all(
          Array.from({ length: 100 }, (_, offset) =>
            queue?.enqueue({
              type: 'tally.items.record',
              integration: 'counts',
              payload: { n: index + offset, ms: 30 },
            }),
          ),
        );
        for (const outcome of batch) {
          if (outcome?.status !== 'enqueued') throw new Error(`enqueue refused: ${outcome?.status}`);
          ids.push(outcome.task.id);
        }
      }

      // Machine A works steadily, one task at a time, so the drain outlasts the kills on a slow machine.
      start(['work', '--server', serverUrl, '--concurrency', '1'], path.join(machineA.path, 'data'));
      // Machine B is killed 20 times, each time while it runs a task it claimed.
      for (let kill = 0; kill < kills; kill += 1) {
        const worker = start(['work', '--server', serverUrl], path.join(machineB.path, 'data'));
        await worker.waitForOutput(/"msg":"task \w+ \(tally\.items\.record\) started/, { timeoutMs: 60_000 });
        worker.child.kill('SIGKILL');
        const ended = await worker.exited;
        expect(ended.signal).toBe('SIGKILL');
      }
      const stats = await queue.stats();
      // The kills were in the middle of the run, not after it.
      expect(stats.byType[type]?.pending ?? 0).toBeGreaterThan(0);
      start(['work', '--server', serverUrl], path.join(machineB.path, 'data'));

      // Waits on the queue's own events: every task completed, or failed for good (which the checks below report).
      await waitUntil(() => completed.size + failed.size === taskCount, {
        what: 'every task to complete or fail',
        timeoutMs: 300_000,
      });
      // The server's own schedules (housekeeping) add tasks of other types: only the tally's are counted.
      const final = await queue.stats();
      expect(final.typesByState.done[type]).toBe(taskCount);
      expect(final.typesByState.failed[type] ?? 0).toBe(0);
      expect(final.byType[type] ?? { pending: 0, active: 0 }).toEqual({ pending: 0, active: 0 });
      // Completed once each: a task taken back from a killed worker and run again is not completed twice.
      expect([...completed.values()].every((count) => count === 1)).toBe(true);
      unsubscribe();
      await events.close();

      const retried: string[] = [];
      for (const id of ids) {
        const record = await queue.get(id);
        expect(record?.state).toBe('done');
        if (record?.task?.history.some((attempt) => attempt.error.type === 'WorkerDied')) retried.push(id);
      }
      // The kills hit running tasks, and those were taken back and completed.
      expect(retried.length).toBeGreaterThanOrEqual(kills);

      // Every note is on the server's disk, once per task; the workers' own data directories hold none.
      const notes = await readdir(path.join(server.path, 'data', 'notes', 'tally'));
      expect(notes.sort()).toEqual(ids.map((id) => `${id}.md`).sort());
      for (const machine of [machineA, machineB]) {
        await expect(readdir(path.join(machine.path, 'data', 'notes', 'tally'))).rejects.toMatchObject({
          code: 'ENOENT',
        });
      }
    } finally {
      for (const process of processes.reverse()) await stop(process);
      await queue?.close();
    }
  });
});
