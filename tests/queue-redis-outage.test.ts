// "Outages strand nothing" on the Redis backend: a real `assistant work` and `assistant serve` on a persistent
// Redis that is SIGKILLed while tasks run, kept down for several seconds and started again with its data. The worker
// survives, says once that Redis is gone and once that it is back, and every task ends done exactly once, those
// that were running when Redis died included; the server's /health answers throughout.
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { openRedisTaskQueue, type RedisTaskQueue } from '@assistant/queue-redis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as z from 'zod';
import { freePort } from './helpers/free-port.ts';
import { cliMain, type NodeProcess, startNode } from './helpers/node-process.ts';
import { type RedisServer, startRedis } from './helpers/redis.ts';
import { tempDir } from './helpers/temp-dir.ts';
import { waitUntil } from './helpers/wait-until.ts';

const type = 'system.sleep';
const taskCount = 24;
/** Longer than two leases (2 s each): every lock held when Redis died has run out by the time it is back. */
const outageMs = 6_000;

let redis: RedisServer;
beforeAll(async () => {
  redis = await startRedis({ persistence: true });
});
afterAll(async () => {
  await redis?.[Symbol.asyncDispose]();
});

const logLineSchema = z.looseObject({ level: z.number(), msg: z.string() });

function logLines(process: NodeProcess): { level: number; msg: string }[] {
  return process
    .stdout()
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => logLineSchema.parse(JSON.parse(line)));
}

async function stop(process: NodeProcess | undefined): Promise<void> {
  if (!process || process.child.exitCode !== null || process.child.signalCode !== null) return;
  process.child.kill('SIGTERM');
  await process.exited;
}

function running(process: NodeProcess): boolean {
  return process.child.exitCode === null && process.child.signalCode === null;
}

describe('the Redis backend when Redis is down for a while', () => {
  it('strands nothing: the worker waits, resumes, and every task is done once', { timeout: 120_000 }, async () => {
    await using dir = await tempDir();
    const port = await freePort();
    const token = randomBytes(24).toString('hex');
    const prefix = `outage-${randomBytes(4).toString('hex')}`;
    const configFile = await dir.write(
      'config.yaml',
      `data_dir: ./data
server: {port: ${port}, token: "${token}"}
worker: {concurrency: 4, poll_interval: 100ms, shutdown_grace: 1s}
queue:
  backend: redis
  redis: {url: "${redis.url}", prefix: ${prefix}}
  lease: 2s
`,
    );
    const processes: NodeProcess[] = [];
    const start = (args: string[]) => {
      const started = startNode({
        args: [cliMain, ...args],
        env: {
          ASSISTANT_CONFIG: configFile,
          ASSISTANT_DATA: path.join(dir.path, 'data'),
          ASSISTANT_TOKEN: token,
          ASSISTANT_LOG_FORMAT: 'json',
        },
      });
      processes.push(started);
      return started;
    };
    const health = async (authorized: boolean) => {
      const response = await fetch(`http://127.0.0.1:${port}/health`, {
        headers: authorized ? { authorization: `Bearer ${token}` } : {},
        // Bounded: a /health that hangs while Redis is down fails the test instead of holding it.
        signal: AbortSignal.timeout(15_000),
      });
      return { status: response.status, body: (await response.json()) as Record<string, unknown> };
    };
    const api = async (method: 'GET' | 'POST', url: string, body?: unknown) => {
      const response = await fetch(`http://127.0.0.1:${port}${url}`, {
        method,
        headers: {
          authorization: `Bearer ${token}`,
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        // Bounded: a call that waits for Redis fails the test instead of holding it.
        signal: AbortSignal.timeout(15_000),
      });
      return { status: response.status, body: (await response.json()) as Record<string, unknown> };
    };
    let queue: RedisTaskQueue | undefined;
    try {
      const serve = start(['serve']);
      await serve.waitForOutput(/listening on/, { timeoutMs: 30_000 });
      const worker = start(['work']);
      await worker.waitForOutput(/worker ready/, { timeoutMs: 30_000 });

      queue = await openRedisTaskQueue({ url: redis.url, prefix });
      const ids: string[] = [];
      for (let index = 0; index < taskCount; index += 1) {
        const outcome = await queue.enqueue({ type, payload: { ms: 300 } });
        if (outcome.status !== 'enqueued') throw new Error(`enqueue refused: ${outcome.status}`);
        ids.push(outcome.task.id);
      }
      // Redis dies while the worker holds tasks, and with tasks still pending behind them.
      const activeAtKill = await waitUntil(
        async () => {
          const active = (await queue?.list({ state: 'active', type }))?.flatMap((entry) => entry.name?.id ?? []);
          return active !== undefined && active.length > 0 ? active : undefined;
        },
        { what: 'a task to be running' },
      );
      await redis.kill();
      const outageEnds = Date.now() + outageMs;

      await worker.waitForOutput(/Redis at \S+ is unreachable/, { timeoutMs: 15_000 });
      await serve.waitForOutput(/Redis at \S+ is unreachable/, { timeoutMs: 15_000 });
      // The server answers at once, with and without the token, and says what is wrong.
      for (const authorized of [false, true]) {
        const during = await health(authorized);
        expect(during.status).toBe(503);
        expect(during.body).toMatchObject({ error: { code: 'QUEUE_UNAVAILABLE' } });
        expect(JSON.stringify(during.body)).toContain(`Redis at redis://127.0.0.1:${redis.port} is unreachable`);
      }
      // So does a REST call that needs the queue, rather than waiting for Redis until its client gives up.
      for (const during of [
        await api('POST', '/api/tasks', { type: 'system.echo', payload: { during: true } }),
        await api('GET', `/api/tasks/${ids[0]}`),
      ]) {
        expect(during.status).toBe(503);
        expect(during.body).toMatchObject({ error: { code: 'QUEUE_UNAVAILABLE' } });
      }
      // Several seconds down: longer than two leases, so the locks of the tasks that were running have run out.
      await delay(Math.max(0, outageEnds - Date.now()));
      expect(running(worker)).toBe(true);
      expect(running(serve)).toBe(true);

      await redis.restart();
      await worker.waitForOutput(/Redis at \S+ is reachable again/, { timeoutMs: 30_000 });
      await serve.waitForOutput(/Redis at \S+ is reachable again/, { timeoutMs: 30_000 });
      // This test's own connection comes back on its own reconnect schedule; stats() refuses until it has.
      await waitUntil(() => queue?.outage.down === false, { what: "the test's own connection to be back" });

      const final = await waitUntil(
        async () => {
          const stats = await queue?.stats();
          const finished = (stats?.typesByState.done[type] ?? 0) + (stats?.typesByState.failed[type] ?? 0);
          return finished === taskCount && (stats?.byType[type]?.active ?? 0) === 0 ? stats : undefined;
        },
        { what: 'every task to finish', timeoutMs: 60_000 },
      );
      expect(final.typesByState.done[type]).toBe(taskCount);
      expect(final.typesByState.failed[type] ?? 0).toBe(0);
      expect(final.byType[type] ?? { pending: 0, active: 0 }).toEqual({ pending: 0, active: 0 });
      for (const id of ids) expect((await queue.get(id))?.state).toBe('done');
      // The tasks that were running when Redis died kept their outcome: done on their first attempt, not run again.
      for (const id of activeAtKill) {
        const record = await queue.get(id);
        expect(record?.state).toBe('done');
        expect(record?.task?.attempts).toBe(1);
      }
      // Each completed once: the stream of the queue's events (kept by the append-only file) has one completion each.
      const completions = new Map<string, number>();
      for (const [, fields] of await queue.client.xrange(queue.key('events'), '-', '+')) {
        const event = JSON.parse(fields[1] ?? '{}') as { kind?: string; id?: string };
        if (event.kind === 'completed' && event.id) completions.set(event.id, (completions.get(event.id) ?? 0) + 1);
      }
      expect(ids.map((id) => completions.get(id) ?? 0)).toEqual(ids.map(() => 1));

      expect(running(worker)).toBe(true);
      // Said once each, not once per reconnect attempt and task type; nothing else complained meanwhile.
      for (const process of [worker, serve]) {
        const lines = logLines(process);
        expect(lines.filter((line) => /is unreachable/.test(line.msg))).toHaveLength(1);
        expect(lines.filter((line) => /is reachable again/.test(line.msg))).toHaveLength(1);
        expect(
          lines.filter((line) =>
            /ECONNREFUSED|lost its lease|could not record|claiming a task failed|maintenance failed/.test(line.msg),
          ),
        ).toEqual([]);
      }

      const after = await waitUntil(
        async () => {
          const answer = await health(true);
          return answer.status === 200 ? answer : undefined;
        },
        { what: '/health to answer 200 again' },
      );
      expect(after.body).toMatchObject({ status: 'ok', worker: { alive: true } });
      const posted = await api('POST', '/api/tasks', { type: 'system.echo', payload: { after: true } });
      expect(posted.status).toBe(201);
    } finally {
      for (const process of processes.reverse()) await stop(process);
      await queue?.close();
    }
  });

  it('lets a worker stopped during the outage exit; its tasks run again once Redis is back', {
    timeout: 120_000,
  }, async () => {
    await using dir = await tempDir();
    const prefix = `stopped-${randomBytes(4).toString('hex')}`;
    const configFile = await dir.write(
      'config.yaml',
      `data_dir: ./data
worker: {concurrency: 2, poll_interval: 100ms, shutdown_grace: 1s}
queue:
  backend: redis
  redis: {url: "${redis.url}", prefix: ${prefix}}
  lease: 2s
`,
    );
    const start = () =>
      startNode({
        args: [cliMain, 'work'],
        env: {
          ASSISTANT_CONFIG: configFile,
          ASSISTANT_DATA: path.join(dir.path, 'data'),
          ASSISTANT_LOG_FORMAT: 'json',
          // The test waits for the task's own "started" line, which the default level leaves out.
          ASSISTANT_LOG_LEVEL: 'debug',
        },
      });
    const queue = await openRedisTaskQueue({ url: redis.url, prefix });
    let second: NodeProcess | undefined;
    try {
      const ids: string[] = [];
      for (let index = 0; index < 4; index += 1) {
        const outcome = await queue.enqueue({ type, payload: { ms: 3_000 } });
        if (outcome.status !== 'enqueued') throw new Error(`enqueue refused: ${outcome.status}`);
        ids.push(outcome.task.id);
      }
      const first = start();
      await first.waitForOutput(/system\.sleep\) started/, { timeoutMs: 30_000 });
      await redis.kill();
      await first.waitForOutput(/Redis at \S+ is unreachable/, { timeoutMs: 15_000 });
      // Its running tasks cannot be put back and its claim loop waits for Redis: the shutdown grace still ends it.
      first.child.kill('SIGTERM');
      const ended = await first.exited;
      expect(ended.signal ?? ended.code).not.toBeNull();

      await redis.restart();
      second = start();
      await waitUntil(
        async () => {
          const records = await Promise.all(ids.map((id) => queue.get(id)));
          return records.every((record) => record?.state === 'done') ? records : undefined;
        },
        { what: 'every task to be done by the second worker', timeoutMs: 60_000 },
      );
      expect((await queue.stats()).typesByState.failed[type] ?? 0).toBe(0);
    } finally {
      if (second && running(second)) {
        second.child.kill('SIGTERM');
        await second.exited;
      }
      await queue.close();
    }
  });

  it("leaves another worker's tasks alone right after an outage: every heartbeat is late then, and only for it", {
    timeout: 60_000,
  }, async () => {
    // Long enough that the sweep right after Redis is back falls within the lease that follows, however loaded the
    // machine; the heartbeat is set two seconds old so the outage lasts only the rest of a lease.
    const leaseMs = 8_000;
    const shared = `grace-${randomBytes(4).toString('hex')}`;
    // Two connections, as two workers on two machines have: one holds a task, the other sweeps.
    const holder = await openRedisTaskQueue({ url: redis.url, prefix: shared, leaseMs });
    const sweeper = await openRedisTaskQueue({ url: redis.url, prefix: shared, leaseMs });
    try {
      // The holder's timers neither beat nor sweep during the test: its heartbeat stays as the test sets it.
      const consumer = holder.consumer({ heartbeatMs: 3_600_000, sweepIntervalMs: 3_600_000, pollIntervalMs: 20 });
      await consumer.start();
      const outcome = await holder.enqueue({ type: 'outage.grace', payload: { n: 1 } });
      if (outcome.status !== 'enqueued') throw new Error(`enqueue refused: ${outcome.status}`);
      const claimed = await consumer.claim();
      expect(claimed?.id).toBe(outcome.task.id);
      if (!claimed) return;
      const beat = async (id: string, host: string, heartbeatAtMs: number, pid = process.pid) => {
        const heartbeatAt = new Date(heartbeatAtMs).toISOString();
        await holder.client.hset(
          holder.key('workers'),
          id,
          JSON.stringify({ id, pid, host, startedAt: heartbeatAt, heartbeatAt }),
        );
      };
      // Its last heartbeat was on time when Redis went down, and is more than a lease old when Redis is back.
      const heartbeatAtMs = Date.now() - 2_000;
      await beat(consumer.owner.id, 'another-machine', heartbeatAtMs);
      await redis.kill();
      await waitUntil(() => sweeper.outage.down, { what: 'the sweeper to see Redis gone' });
      await waitUntil(() => Date.now() > heartbeatAtMs + leaseMs + 100, { what: 'the heartbeat to be a lease old' });
      await redis.restart();
      const outage = await waitUntil(() => sweeper.outage.last, { what: 'the sweeper to see Redis back' });

      // The sweep in another process right after: the holder has not had a lease to beat again, so it is alive.
      expect((await sweeper.recover()).requeued).toEqual([]);
      expect(await sweeper.workers.livenessById(consumer.owner.id, outage.backAtMs)).toBe('alive');
      // A lease after Redis is back without a new heartbeat, it is gone.
      expect(await sweeper.workers.livenessById(consumer.owner.id, outage.backAtMs + leaseMs + 1)).toBe('gone');
      // One already late when Redis went down is gone at once: the outage excuses only itself.
      await beat('late-before', 'another-machine', outage.downSinceMs - leaseMs - 1);
      expect(await sweeper.workers.livenessById('late-before', outage.backAtMs)).toBe('gone');
      // On this machine, a worker whose process is gone is gone whatever its heartbeat.
      const exited = spawnSync(process.execPath, ['-e', '']);
      await beat('exited', os.hostname(), outage.downSinceMs, exited.pid);
      expect(await sweeper.workers.livenessById('exited', outage.backAtMs)).toBe('gone');

      // The holder keeps its task and records its outcome, on the task's first attempt.
      expect(await consumer.complete(claimed, { ok: true })).toMatchObject({ state: 'done', recorded: true });
      expect((await holder.get(claimed.id))?.task?.attempts).toBe(1);
    } finally {
      await holder.close();
      await sweeper.close();
    }
  });

  it('returns a task whose outcome could not be written to pending, through its own worker', async () => {
    const queue = await openRedisTaskQueue({
      url: redis.url,
      prefix: `unwritten-${randomBytes(4).toString('hex')}`,
      leaseMs: 2_000,
    });
    const consumer = queue.consumer({ heartbeatMs: 500, sweepIntervalMs: 100, pollIntervalMs: 100 });
    try {
      await consumer.start();
      const outcome = await queue.enqueue({ type: 'outage.write.fails', payload: { n: 1 } });
      if (outcome.status !== 'enqueued') throw new Error(`enqueue refused: ${outcome.status}`);
      const claimed = await consumer.claim();
      expect(claimed?.id).toBe(outcome.task.id);
      if (!claimed) return;
      // A write Redis refuses for a reason other than the lock (out of memory, a read-only replica after a failover).
      queue.finishDone = async () => {
        throw new Error('OOM command not allowed when used memory > maxmemory');
      };
      await expect(consumer.complete(claimed, { ok: true })).rejects.toThrow(/OOM/);
      Reflect.deleteProperty(queue, 'finishDone');
      // The worker is alive and its heartbeat current, yet its own sweep takes the claim back: it no longer holds it.
      const record = await waitUntil(
        async () => {
          const found = await queue.get(claimed.id);
          return found?.state === 'pending' ? found : undefined;
        },
        { what: 'the task to be back in pending' },
      );
      expect(record.task?.history.map((attempt) => attempt.error.type)).toEqual(['WorkerDied']);
      const again = await consumer.claim();
      expect(again?.id).toBe(claimed.id);
      if (!again) return;
      expect(await consumer.complete(again, { ok: true })).toMatchObject({ state: 'done', recorded: true });
      expect((await queue.get(claimed.id))?.state).toBe('done');
    } finally {
      await consumer.close();
      await queue.close();
    }
  });
});
