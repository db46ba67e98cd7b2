import os from 'node:os';
import type { JsonValue, TaskOwner, WorkerDirectory, WorkerInfo } from '@assistant/queue';
import { jsonValueSchema } from '@assistant/queue';
import type { Redis } from 'ioredis';
import * as z from 'zod';
import type { PastOutage } from './internal/redis-outage.ts';

const recordSchema = z.object({
  id: z.string(),
  pid: z.int(),
  host: z.string(),
  startedAt: z.string(),
  heartbeatAt: z.string(),
});

/**
 * Workers' heartbeats and published metrics in two Redis hashes of the prefix (`workers`, `metrics`), keyed by
 * worker id. A worker is alive while its heartbeat is within the lease; on this host, also while its pid runs.
 *
 * Nobody can beat while Redis is down, so after an outage every heartbeat is late at once: a worker whose heartbeat
 * was on time when Redis went down still counts as alive for one lease after Redis is back (as this process saw the
 * outage), long enough for it to beat again. Otherwise the first sweep after an outage, in whichever process ran it
 * first, took every running task of every other worker for a dead worker's and ran it a second time.
 */
export class RedisWorkerDirectory implements WorkerDirectory {
  readonly leaseMs: number;
  readonly #client: Redis;
  readonly #workersKey: string;
  readonly #metricsKey: string;
  readonly #lastOutage: () => PastOutage | undefined;

  constructor(options: {
    client: Redis;
    workersKey: string;
    metricsKey: string;
    leaseMs: number;
    /** The most recent outage of Redis this process saw end. @default none */
    lastOutage?: () => PastOutage | undefined;
  }) {
    this.#client = options.client;
    this.#workersKey = options.workersKey;
    this.#metricsKey = options.metricsKey;
    this.leaseMs = options.leaseMs;
    this.#lastOutage = options.lastOutage ?? (() => undefined);
  }

  async heartbeat(owner: TaskOwner, startedAt: string): Promise<void> {
    const record = { id: owner.id, pid: owner.pid, host: owner.host, startedAt, heartbeatAt: new Date().toISOString() };
    await this.#client.hset(this.#workersKey, owner.id, JSON.stringify(record));
  }

  async list(nowMs: number = Date.now()): Promise<WorkerInfo[]> {
    const all = await this.#client.hgetall(this.#workersKey);
    const workers: WorkerInfo[] = [];
    for (const text of Object.values(all)) {
      const record = parseRecord(text);
      if (record) workers.push({ ...record, alive: this.#isAlive(record, nowMs) });
    }
    return workers.sort((left, right) => (left.id < right.id ? -1 : left.id > right.id ? 1 : 0));
  }

  async liveness(owner: TaskOwner, nowMs: number = Date.now()): Promise<'alive' | 'gone'> {
    return this.livenessById(owner.id, nowMs);
  }

  async livenessById(ownerId: string, nowMs: number = Date.now()): Promise<'alive' | 'gone'> {
    const record = parseRecord(await this.#client.hget(this.#workersKey, ownerId));
    return record && this.#isAlive(record, nowMs) ? 'alive' : 'gone';
  }

  #isAlive(record: z.infer<typeof recordSchema>, nowMs: number): boolean {
    const heartbeatMs = Date.parse(record.heartbeatAt);
    if (!Number.isFinite(heartbeatMs)) return false;
    if (nowMs - heartbeatMs > this.leaseMs && !this.#excusedByOutage(heartbeatMs, nowMs)) return false;
    return record.host !== os.hostname() || pidRuns(record.pid);
  }

  /** A heartbeat on time when Redis went down, judged within one lease of its return: late only for the outage. */
  #excusedByOutage(heartbeatMs: number, nowMs: number): boolean {
    const outage = this.#lastOutage();
    return (
      outage !== undefined &&
      outage.downSinceMs - heartbeatMs <= this.leaseMs &&
      nowMs >= outage.backAtMs &&
      nowMs - outage.backAtMs <= this.leaseMs
    );
  }

  async publishMetrics(ownerId: string, snapshot: JsonValue): Promise<void> {
    await this.#client.hset(this.#metricsKey, ownerId, JSON.stringify(snapshot));
  }

  async readMetrics(): Promise<JsonValue[]> {
    const all = await this.#client.hgetall(this.#metricsKey);
    const snapshots: JsonValue[] = [];
    for (const id of Object.keys(all).sort()) {
      const value = parseJson(all[id]);
      const checked = jsonValueSchema.safeParse(value);
      if (checked.success) snapshots.push(checked.data);
    }
    return snapshots;
  }

  async remove(ownerId: string): Promise<void> {
    await this.#client.multi().hdel(this.#workersKey, ownerId).hdel(this.#metricsKey, ownerId).exec();
  }

  /** Forgets workers gone for longer than ten leases, so the hashes do not grow with every restart. */
  async pruneGone(nowMs: number = Date.now()): Promise<void> {
    for (const worker of await this.list(nowMs)) {
      if (nowMs - Date.parse(worker.heartbeatAt) > 10 * this.leaseMs) await this.remove(worker.id);
    }
  }
}

function parseRecord(text: string | null | undefined): z.infer<typeof recordSchema> | undefined {
  const checked = recordSchema.safeParse(parseJson(text));
  return checked.success ? checked.data : undefined;
}

function parseJson(text: string | null | undefined): unknown {
  if (text === null || text === undefined) return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

function pidRuns(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: it runs, as another user.
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
