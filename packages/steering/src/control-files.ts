import { randomBytes } from 'node:crypto';
import { watch } from 'node:fs';
import { appendFile, mkdir, open, readdir, readFile, rename, stat, unlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { scrubSecrets } from '@assistant/errors';
import type {
  NewSteeringRequest,
  PendingSteeringRequest,
  SteeringChannel,
  WatchedRequests,
} from './steering-channel.ts';
import {
  type ControlEvent,
  type SteeringOutcome,
  type SteeringRequest,
  type SteeringSettlement,
  steeringOutcomeSchema,
  steeringRequestIdPattern,
  steeringRequestSchema,
} from './steering-request.ts';

/**
 * Steering through files, so the server and the CLI steer work that runs in the worker, across processes and across
 * a worker restart. Per task, under `data/control/<task-id>/`:
 * - `requests/<time>-<sequence>-<random>.json`: one steering request each, written atomically; names sort in the
 *   order they were made, and the worker applies them in that order.
 * - `outcomes/<request-id>.json`: what became of each request (applied, refused, and the answer to an `ask`).
 * - `events.jsonl`: notifications, clarifications, steps and steering as they happen, one JSON object per line.
 * A worker on another machine reaches the same files through the server (HttpSteeringChannel).
 */
let sequence = 0;

/** Steering through the files of one task in `data/control/`, on this machine. */
export class ControlFiles implements SteeringChannel {
  readonly directory: string;
  readonly taskId: string;
  /** The watcher wakes applySteering at once; this look is for file systems where watching does not work. */
  readonly pollMs = 250;

  constructor(options: { root: string; taskId: string }) {
    if (!/^[0-9a-z]{26}$/.test(options.taskId)) throw new Error(`not a task id: ${options.taskId}`);
    this.taskId = options.taskId;
    this.directory = path.join(options.root, options.taskId);
  }

  get requestsDirectory(): string {
    return path.join(this.directory, 'requests');
  }

  get outcomesDirectory(): string {
    return path.join(this.directory, 'outcomes');
  }

  get eventsFile(): string {
    return path.join(this.directory, 'events.jsonl');
  }

  /** Writes a request (temp file, then rename, so the worker never reads half of one); returns it with its id. */
  async request(request: NewSteeringRequest): Promise<SteeringRequest> {
    const now = Date.now();
    sequence = (sequence + 1) % 1_000_000;
    const id = `${String(now).padStart(14, '0')}-${String(sequence).padStart(6, '0')}-${randomBytes(4).toString('hex')}`;
    const full = steeringRequestSchema.parse({ ...request, id, created_at: new Date(now).toISOString() });
    await mkdir(this.requestsDirectory, { recursive: true, mode: 0o700 });
    await atomicWrite(path.join(this.requestsDirectory, `${id}.json`), `${JSON.stringify(full, null, 2)}\n`);
    return full;
  }

  /**
   * Requests not yet applied, in the order they were made. Unreadable files come back with a `problem`, to be settled
   * as refused; files whose names could not be settled by id (only a hand-made one) are left alone.
   */
  async pending(): Promise<(PendingSteeringRequest & { file: string })[]> {
    let names: string[];
    try {
      names = (await readdir(this.requestsDirectory)).filter((name) => name.endsWith('.json')).sort();
    } catch {
      return [];
    }
    const found = [];
    for (const name of names) {
      const id = name.slice(0, -'.json'.length);
      if (!steeringRequestIdPattern.test(id)) continue;
      const file = path.join(this.requestsDirectory, name);
      try {
        const parsed = steeringRequestSchema.safeParse(JSON.parse(await readFile(file, 'utf8')));
        found.push(
          parsed.success
            ? { id, request: parsed.data, file }
            : { id, file, problem: parsed.error.issues[0]?.message ?? 'invalid' },
        );
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'ENOENT') continue;
        found.push({ id, file, problem: `not JSON: ${(error as Error).message}` });
      }
    }
    return found;
  }

  /**
   * Pending requests once one named after `after` (or any, without `after`) is there, or all of them after
   * `timeoutMs`: the server's long poll for a remote worker. Names sort in the order requests were made, so `after`
   * is the last one the caller has seen.
   */
  async waitForRequests(options: {
    after?: string;
    timeoutMs: number;
    signal?: AbortSignal;
  }): Promise<(PendingSteeringRequest & { file: string })[]> {
    const deadline = Date.now() + options.timeoutMs;
    const isNew = (entry: PendingSteeringRequest) => options.after === undefined || entry.id > options.after;
    let wake: (() => void) | undefined;
    let watcher: ReturnType<typeof watch> | undefined;
    const onAbort = () => wake?.();
    options.signal?.addEventListener('abort', onAbort, { once: true });
    try {
      for (;;) {
        const found = await this.pending();
        if (found.some(isNew) || Date.now() >= deadline || options.signal?.aborted) return found;
        // Watched once the folder exists: a long poll for a task never steered does not create its folder.
        if (!watcher) {
          try {
            watcher = watch(this.requestsDirectory, () => wake?.());
            watcher.on('error', () => {});
          } catch {
            // Not there yet, or not watchable: the short look below finds it.
          }
        }
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, Math.min(100, Math.max(0, deadline - Date.now())));
          wake = () => {
            clearTimeout(timer);
            resolve();
          };
        });
        wake = undefined;
      }
    } finally {
      watcher?.close();
      options.signal?.removeEventListener('abort', onAbort);
    }
  }

  /** Whether the request `requestId` is still waiting to be settled. */
  async hasRequest(requestId: string): Promise<boolean> {
    if (!steeringRequestIdPattern.test(requestId)) return false;
    return (
      (await stat(path.join(this.requestsDirectory, `${requestId}.json`)).catch(() => undefined))?.isFile() ?? false
    );
  }

  /** Records what became of a request and removes the request: outcome first, so nothing is applied twice. */
  async settle(requestId: string, outcome: SteeringSettlement): Promise<void> {
    if (!steeringRequestIdPattern.test(requestId)) throw new Error(`not a steering request id: ${requestId}`);
    await mkdir(this.outcomesDirectory, { recursive: true, mode: 0o700 });
    const full = { request_id: requestId, ...outcome, at: new Date().toISOString() };
    await atomicWrite(path.join(this.outcomesDirectory, `${requestId}.json`), `${JSON.stringify(full, null, 2)}\n`);
    await unlink(path.join(this.requestsDirectory, `${requestId}.json`)).catch(() => {});
  }

  /** Wakes `onRequest` as request files appear (the folder is made first, so there is something to watch). */
  watchRequests(onRequest: () => void, options: { logger?: { warn(message: string): void } } = {}): WatchedRequests {
    let closed = false;
    let watcher: ReturnType<typeof watch> | undefined;
    const started = (async () => {
      await mkdir(this.requestsDirectory, { recursive: true, mode: 0o700 });
      if (closed) return;
      try {
        watcher = watch(this.requestsDirectory, () => onRequest());
        watcher.on('error', () => {});
      } catch (error) {
        options.logger?.warn(`cannot watch ${this.requestsDirectory}: ${(error as Error).message}; polling`);
      }
    })();
    return {
      ready: started.catch((error: unknown) => {
        options.logger?.warn(`cannot create ${this.requestsDirectory}: ${(error as Error).message}; polling`);
      }),
      close: async () => {
        closed = true;
        await started.catch(() => {});
        watcher?.close();
      },
    };
  }

  async outcome(requestId: string): Promise<SteeringOutcome | undefined> {
    if (!steeringRequestIdPattern.test(requestId)) return undefined;
    try {
      const parsed = steeringOutcomeSchema.safeParse(
        JSON.parse(await readFile(path.join(this.outcomesDirectory, `${requestId}.json`), 'utf8')),
      );
      return parsed.success ? parsed.data : undefined;
    } catch {
      return undefined;
    }
  }

  /** Waits for a request's outcome (watching the folder, polling as a fallback), up to `timeoutMs`. */
  async waitForOutcome(
    requestId: string,
    options: { timeoutMs: number; signal?: AbortSignal },
  ): Promise<SteeringOutcome | undefined> {
    await mkdir(this.outcomesDirectory, { recursive: true, mode: 0o700 });
    const deadline = Date.now() + options.timeoutMs;
    let wake: (() => void) | undefined;
    let watcher: ReturnType<typeof watch> | undefined;
    try {
      watcher = watch(this.outcomesDirectory, () => wake?.());
      watcher.on('error', () => {});
    } catch {
      // Polling below still finds it.
    }
    try {
      while (Date.now() < deadline && !options.signal?.aborted) {
        const outcome = await this.outcome(requestId);
        if (outcome) return outcome;
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, 100);
          wake = () => {
            clearTimeout(timer);
            resolve();
          };
        });
      }
      return await this.outcome(requestId);
    } finally {
      watcher?.close();
    }
  }

  /** Appends an event line; O_APPEND keeps concurrent writers' lines whole. */
  async event(event: Omit<ControlEvent, 'at'> & { at?: string }): Promise<void> {
    // Events carry error messages and results: an LLM error that echoes the token must not reach the file (or SSE).
    const line = `${scrubSecrets(JSON.stringify({ at: new Date().toISOString(), ...event }))}\n`;
    // The folder is made when the first append finds none (a loop writes an event at every step).
    try {
      await appendFile(this.eventsFile, line, { mode: 0o600 });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
      await mkdir(this.directory, { recursive: true, mode: 0o700 });
      await appendFile(this.eventsFile, line, { mode: 0o600 });
    }
  }

  /**
   * Events from byte `offset` on, each with the offset just after its line (a resume point, the SSE event id), and
   * the offset after the last complete line.
   */
  async eventsFrom(offset: number): Promise<{ events: (ControlEvent & { offset: number })[]; offset: number }> {
    let handle: Awaited<ReturnType<typeof open>> | undefined;
    try {
      handle = await open(this.eventsFile, 'r');
      const { size } = await handle.stat();
      if (size <= offset) return { events: [], offset };
      const buffer = Buffer.alloc(size - offset);
      await handle.read(buffer, 0, buffer.length, offset);
      const text = buffer.toString('utf8');
      const end = text.lastIndexOf('\n') + 1;
      const events: (ControlEvent & { offset: number })[] = [];
      let position = offset;
      for (const line of text.slice(0, end).split('\n').slice(0, -1)) {
        position += Buffer.byteLength(line) + 1;
        if (line.trim() === '') continue;
        try {
          events.push({ ...(JSON.parse(line) as ControlEvent), offset: position });
        } catch {
          // A line a crashed writer left half-written: skip it, keep reading.
        }
      }
      return { events, offset: offset + Buffer.byteLength(text.slice(0, end)) };
    } catch {
      return { events: [], offset };
    } finally {
      await handle?.close();
    }
  }

  async exists(): Promise<boolean> {
    return (await stat(this.directory).catch(() => undefined))?.isDirectory() ?? false;
  }
}

async function atomicWrite(file: string, text: string): Promise<void> {
  const temporary = `${file}.${randomBytes(4).toString('hex')}.tmp`;
  // 0o600: steering messages and answers are the owner's words about their mail and work.
  await writeFile(temporary, scrubSecrets(text), { mode: 0o600 });
  await rename(temporary, file);
}
