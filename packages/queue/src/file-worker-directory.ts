import { randomBytes } from 'node:crypto';
import { lstat, readdir, readFile, unlink } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { parse, stringify } from 'yaml';
import * as z from 'zod';
import { type Durability, writeFileDurably } from './durable-write.ts';
import { maxWorkerIdLength } from './file-layout.ts';
import type { WorkerDirectory, WorkerInfo } from './interfaces.ts';
import { readTaskText } from './read-task-text.ts';
import { type JsonValue, TaskFileError, type TaskOwner } from './task-file.ts';

/**
 * Each running worker keeps `data/queue/workers/{id}.yaml` (pid, host, start time) and rewrites it every
 * heartbeat. A task in active/ names its owner; the owner is gone when its file is gone, when it runs on this
 * host and its pid is dead, or when its heartbeat is older than the lease (the only test that works across hosts,
 * and the one that catches a reused pid).
 */
export interface WorkerRecord extends TaskOwner {
  startedAt: string;
  heartbeatAt: string;
}

const recordSchema = z.object({
  id: z.string(),
  pid: z.int(),
  host: z.string(),
  started_at: z.string(),
  heartbeat_at: z.string(),
});

/**
 * A worker's identity: `{host}-{pid}-{random}`, the host cut short so the id fits in an active/ name
 * ({@link maxWorkerIdLength}); `host` keeps the full name.
 */
export function newWorkerOwner(host: string = os.hostname(), pid: number = process.pid): TaskOwner {
  const suffix = `-${pid}-${randomBytes(3).toString('hex')}`;
  const prefix = host.replace(/[^A-Za-z0-9-]/g, '-').replace(/^-+/, '') || 'host';
  return { id: `${prefix.slice(0, maxWorkerIdLength - suffix.length)}${suffix}`, pid, host };
}

export interface FileWorkerDirectoryOptions {
  directory: string;
  tmpDir: string;
  durability: Durability;
  /** A worker whose heartbeat is older than this is gone. @default 60_000 */
  leaseMs?: number;
}

export type OwnerState = 'alive' | 'gone';

export class FileWorkerDirectory implements WorkerDirectory {
  readonly #options: Required<FileWorkerDirectoryOptions>;

  constructor(options: FileWorkerDirectoryOptions) {
    this.#options = { leaseMs: 60_000, ...options };
  }

  get leaseMs(): number {
    return this.#options.leaseMs;
  }

  #file(id: string): string {
    return path.join(this.#options.directory, `${id}.yaml`);
  }

  async heartbeat(owner: TaskOwner, startedAt: string): Promise<void> {
    await writeFileDurably({
      tmpDir: this.#options.tmpDir,
      target: this.#file(owner.id),
      text: stringify({
        id: owner.id,
        pid: owner.pid,
        host: owner.host,
        started_at: startedAt,
        heartbeat_at: new Date().toISOString(),
      }),
    });
  }

  /** Removes a worker's heartbeat file and the metrics file it keeps beside it (`{id}.metrics.json`). */
  async remove(id: string): Promise<void> {
    if (!workerIdPattern.test(id)) return;
    await unlink(this.#file(id)).catch(ignoreMissing);
    await unlink(path.join(this.#options.directory, `${id}${metricsSuffix}`)).catch(ignoreMissing);
  }

  async read(id: string): Promise<WorkerRecord | undefined> {
    // The id comes from a task file, which anyone who can write the queue can write: it names a file in workers/.
    if (!workerIdPattern.test(id)) return undefined;
    let text: string;
    try {
      // The task reader's rules: no links followed, no FIFO waited on, a bounded read.
      text = await readTaskText(this.#file(id), maxWorkerFileBytes);
    } catch (error) {
      if (isMissing(error) || error instanceof TaskFileError) return undefined;
      throw error;
    }
    const parsed = recordSchema.safeParse(safeYaml(text));
    if (!parsed.success) return undefined;
    const value = parsed.data;
    return {
      id: value.id,
      pid: value.pid,
      host: value.host,
      startedAt: value.started_at,
      heartbeatAt: value.heartbeat_at,
    };
  }

  /** Whether the worker that owns a task is still there. */
  async liveness(owner: TaskOwner, nowMs: number = Date.now()): Promise<OwnerState> {
    if (owner.host === os.hostname() && !pidAlive(owner.pid)) return 'gone';
    const record = await this.read(owner.id);
    if (!record) return 'gone';
    const heartbeatMs = Date.parse(record.heartbeatAt);
    if (Number.isNaN(heartbeatMs) || nowMs - heartbeatMs > this.#options.leaseMs) return 'gone';
    return 'alive';
  }

  async list(nowMs: number = Date.now()): Promise<WorkerInfo[]> {
    const workers: WorkerInfo[] = [];
    for (const name of (await this.#names()).sort()) {
      if (!name.endsWith('.yaml')) continue;
      // A heartbeat that cannot be read (a folder named like one, a permission problem) says nothing about anyone.
      const record = await this.read(name.slice(0, -'.yaml'.length)).catch(() => undefined);
      if (!record) continue;
      const heartbeatMs = Date.parse(record.heartbeatAt);
      // As liveness() judges it: on this host a worker whose pid is gone is gone, whatever its last heartbeat.
      const alive =
        !Number.isNaN(heartbeatMs) &&
        nowMs - heartbeatMs <= this.leaseMs &&
        (record.host !== os.hostname() || pidAlive(record.pid));
      workers.push({ ...record, alive });
    }
    return workers;
  }

  async publishMetrics(ownerId: string, snapshot: JsonValue): Promise<void> {
    if (!workerIdPattern.test(ownerId)) throw new RangeError(`Expected a worker id, got \`${ownerId}\``);
    await writeFileDurably({
      tmpDir: this.#options.tmpDir,
      target: path.join(this.#options.directory, `${ownerId}${metricsSuffix}`),
      text: `${JSON.stringify(snapshot)}\n`,
    });
  }

  async readMetrics(): Promise<JsonValue[]> {
    const snapshots: JsonValue[] = [];
    for (const name of (await this.#names()).filter((candidate) => candidate.endsWith(metricsSuffix)).sort()) {
      try {
        const text = await readFile(path.join(this.#options.directory, name), 'utf8');
        snapshots.push(JSON.parse(text) as JsonValue);
      } catch {
        // Gone between the listing and the read, or not JSON: it tells us nothing.
      }
    }
    return snapshots;
  }

  async #names(): Promise<string[]> {
    try {
      return await readdir(this.#options.directory);
    } catch (error) {
      if (isMissing(error)) return [];
      throw error;
    }
  }

  /** Whether the worker of this id is still there, from its heartbeat file alone (a claim's name holds only the id). */
  async livenessById(id: string, nowMs: number = Date.now()): Promise<OwnerState> {
    const record = await this.read(id);
    return record ? this.liveness(record, nowMs) : 'gone';
  }

  /** Removes the files of workers that are gone; they tell nobody anything any more. */
  async pruneGone(nowMs: number = Date.now()): Promise<string[]> {
    const removed: string[] = [];
    let names: string[];
    try {
      names = await readdir(this.#options.directory);
    } catch (error) {
      if (isMissing(error)) return removed;
      throw error;
    }
    for (const name of names) {
      if (!name.endsWith('.yaml')) continue;
      const id = name.slice(0, -'.yaml'.length);
      try {
        if (await this.#pruneOne(id, nowMs)) removed.push(id);
      } catch {
        // Something here that is not a worker file and cannot be removed as one (a directory, no permission):
        // it says nothing about any worker, so it must not stop recovery, nor a worker from starting.
      }
    }
    return removed;
  }

  async #pruneOne(id: string, nowMs: number): Promise<boolean> {
    const record = await this.read(id);
    if (record === undefined) {
      // Unreadable: judge by age alone, so a half-written file of a live worker is not removed.
      const info = await lstat(this.#file(id)).catch(() => undefined);
      if (!info || nowMs - info.mtimeMs <= this.#options.leaseMs) return false;
      await this.remove(id);
      return true;
    }
    if ((await this.liveness(record, nowMs)) !== 'gone') return false;
    await this.remove(id);
    return true;
  }
}

/** What `newWorkerOwner` makes: no path separators, no leading dot. */
const workerIdPattern = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;
const maxWorkerFileBytes = 65_536;
/** Each worker's counters for /metrics, beside its heartbeat file. */
const metricsSuffix = '.metrics.json';

export function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: the process exists but belongs to someone else.
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function safeYaml(text: string): unknown {
  try {
    return parse(text);
  } catch {
    return undefined;
  }
}

export function isMissing(error: unknown): boolean {
  return (error as NodeJS.ErrnoException | undefined)?.code === 'ENOENT';
}

export function ignoreMissing(error: unknown): void {
  if (!isMissing(error)) throw error;
}
