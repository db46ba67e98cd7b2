import { Worker } from 'node:worker_threads';
import type { Logger } from 'pino';
import { escapeSignals } from './escape-signals.ts';
import type { ErrorKind, HostToWorker, WorkerToHost } from './internal/protocol.ts';
import { type JSONValue, whyNotJson } from './json-value.ts';
import { flattenPrimitives, type Primitives } from './primitives.ts';

export type CellErrorKind = ErrorKind;

/** One primitive call a cell made, in the order it made them. */
export type CallRecord = {
  index: number;
  path: string[];
  args: JSONValue[];
  /** Answered from the cell's call log (a logged cell run again), not run. */
  replayed?: true;
} & (
  | { status: 'ok'; result: JSONValue }
  | { status: 'error'; error: string }
  /** Still running on the host when the cell ended (deadline, abort, or the cell did not wait for it). */
  | { status: 'unfinished' }
);

/** What `run` returns, never throws: the model reads `error.message` as it is. */
export type CellResult =
  | { ok: true; value: JSONValue; logs: string[]; calls: CallRecord[] }
  | { ok: false; error: { kind: CellErrorKind; message: string }; logs: string[]; calls: CallRecord[] };

export interface ExecutorOptions {
  /** Where escape attempts (WARN) and sandbox failures (ERROR) are logged. */
  logger?: Logger;
  /** Cells that run at once, each in its own worker thread; more wait in order. @default 2 */
  maxWorkers?: number;
  /** Wall-clock limit per cell, from when it starts in a worker; the worker is terminated at it. @default 5000 */
  timeoutMs?: number;
  /** QuickJS heap limit per cell. @default 33554432 (32 MiB) */
  memoryLimitBytes?: number;
  /** QuickJS stack limit per cell. @default 262144 (256 KiB) */
  maxStackBytes?: number;
  /** The cell's value (as JSON) and logs together, in UTF-8 bytes. @default 65536 */
  maxOutputBytes?: number;
  /** Primitive calls per cell; the next one stops the cell. @default 50 */
  maxCalls?: number;
  /** One call's arguments as JSON, in bytes; a larger call is refused with a TypeError in the cell. @default 1048576 */
  maxCallBytes?: number;
  /** The worker thread's V8 old-generation heap, a backstop under the QuickJS limit. @default 64 */
  workerHeapMb?: number;
}

export interface RunCellOptions {
  /** The body of an async function: `return` gives the value, `await` works at the top. */
  code: string;
  /** What the cell sees as `tools`. @default {} */
  primitives?: Primitives;
  /** Overrides the executor's `timeoutMs` for this cell. */
  timeoutMs?: number;
  /** Overrides the executor's `maxCalls` for this cell. */
  maxCalls?: number;
  /** Aborting stops the cell (its worker is terminated) with an `aborted` error. */
  signal?: AbortSignal;
}

export interface Executor {
  run(options: RunCellOptions): Promise<CellResult>;
  /** Starts the first worker and resolves when its QuickJS module is loaded, so the first cell pays no start-up. */
  warm(): Promise<void>;
  /** Terminates every worker; cells still running end as `internal`. Idempotent. */
  close(): Promise<void>;
  [Symbol.asyncDispose](): Promise<void>;
}

const defaults = {
  maxWorkers: 2,
  timeoutMs: 5_000,
  memoryLimitBytes: 32 * 1024 * 1024,
  maxStackBytes: 256 * 1024,
  maxOutputBytes: 64 * 1024,
  maxCalls: 50,
  maxCallBytes: 1024 * 1024,
  workerHeapMb: 64,
} satisfies Required<Omit<ExecutorOptions, 'logger'>>;

/** The engine's interrupt fires this long before the deadline, so a CPU loop it stops keeps the warm worker. */
function interruptMarginMs(timeoutMs: number): number {
  return Math.min(25, Math.floor(timeoutMs / 10));
}

const workerUrl = new URL('./internal/cell-worker.ts', import.meta.url);

interface PooledWorker {
  worker: Worker;
  ready: Promise<void>;
  busy: boolean;
  dead: boolean;
}

function checkPositiveInteger(name: string, value: unknown): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value <= 0) {
    throw new TypeError(`Expected \`${name}\` to be a positive integer, got \`${String(value)}\` (${typeof value})`);
  }
  return value;
}

/**
 * Makes an executor of JavaScript cells in QuickJS inside worker threads (docs/codeact.md). Throws only for invalid
 * options; `run` never throws.
 */
export function createExecutor(options: ExecutorOptions = {}): Executor {
  const { logger } = options;
  const settings = { ...defaults };
  for (const key of Object.keys(defaults) as (keyof typeof defaults)[]) {
    if (options[key] !== undefined) settings[key] = checkPositiveInteger(key, options[key]);
  }
  const pool: PooledWorker[] = [];
  const waiting: (() => void)[] = [];
  let closed: Promise<void> | undefined;
  let nextCellId = 1;

  function spawn(): PooledWorker {
    const worker = new Worker(workerUrl, {
      resourceLimits: {
        maxOldGenerationSizeMb: settings.workerHeapMb,
        maxYoungGenerationSizeMb: 16,
        stackSizeMb: 4,
      },
    });
    const pooled: PooledWorker = { worker, busy: false, dead: false, ready: Promise.resolve() };
    pooled.ready = new Promise<void>((resolve, reject) => {
      const onMessage = (message: WorkerToHost) => {
        if (message.type !== 'ready') return;
        worker.off('message', onMessage);
        worker.off('error', onError);
        resolve();
      };
      const onError = (error: Error) => {
        worker.off('message', onMessage);
        reject(error);
      };
      worker.on('message', onMessage);
      worker.once('error', onError);
    });
    // A start-up failure is reported by the cell that waits on it; this keeps it from being unhandled meanwhile.
    pooled.ready.catch(() => {});
    // An 'error' with no listener would throw in the host process; a cell running at the time reports it too.
    worker.on('error', (error) => {
      logger?.error({ err: error }, 'codeact sandbox worker failed');
    });
    worker.once('exit', () => {
      pooled.dead = true;
      const at = pool.indexOf(pooled);
      if (at >= 0) pool.splice(at, 1);
      waiting.shift()?.();
    });
    worker.unref();
    pool.push(pooled);
    return pooled;
  }

  /** Retires a worker and starts its replacement at once, so the next cell finds a warm one. */
  async function kill(pooled: PooledWorker): Promise<void> {
    pooled.dead = true;
    const at = pool.indexOf(pooled);
    if (at >= 0) pool.splice(at, 1);
    if (closed === undefined && pool.length < settings.maxWorkers) spawn();
    await pooled.worker.terminate();
  }

  /** A free worker, or why there is none: the executor closed, or the cell was aborted while it waited. */
  async function acquire(signal: AbortSignal | undefined): Promise<PooledWorker | 'closed' | 'aborted'> {
    for (;;) {
      if (closed !== undefined) return 'closed';
      if (signal?.aborted) return 'aborted';
      const idle = pool.find((candidate) => !candidate.busy && !candidate.dead);
      const pooled = idle ?? (pool.length < settings.maxWorkers ? spawn() : undefined);
      if (pooled !== undefined) {
        pooled.busy = true;
        pooled.worker.ref();
        return pooled;
      }
      await new Promise<void>((resolve) => {
        const wake = () => {
          signal?.removeEventListener('abort', onAbort);
          resolve();
        };
        // An aborted waiter leaves the line, so a later wake-up goes to a cell that still wants a worker.
        const onAbort = () => {
          const at = waiting.indexOf(wake);
          if (at >= 0) waiting.splice(at, 1);
          resolve();
        };
        waiting.push(wake);
        signal?.addEventListener('abort', onAbort, { once: true });
      });
    }
  }

  function release(pooled: PooledWorker): void {
    pooled.busy = false;
    if (!pooled.dead) pooled.worker.unref();
    waiting.shift()?.();
  }

  async function runCell(run: RunCellOptions): Promise<CellResult> {
    const logs: string[] = [];
    const calls: CallRecord[] = [];
    const fail = (kind: CellErrorKind, message: string): CellResult => ({
      ok: false,
      error: { kind, message },
      logs,
      calls,
    });
    if (typeof run.code !== 'string')
      return fail('internal', `Expected \`code\` to be a string, got ${typeof run.code}`);
    const flattened = flattenPrimitives(run.primitives ?? {});
    if (!flattened.ok) return fail('internal', flattened.message);
    const flat = flattened.flat;
    const timeoutMs = run.timeoutMs ?? settings.timeoutMs;
    const maxCalls = run.maxCalls ?? settings.maxCalls;
    if (!Number.isInteger(timeoutMs) || timeoutMs <= 0 || !Number.isInteger(maxCalls) || maxCalls < 0) {
      return fail(
        'internal',
        `Expected \`timeoutMs\` to be a positive integer and \`maxCalls\` a non-negative one, got ${timeoutMs} and ${maxCalls}`,
      );
    }

    const pooled = await acquire(run.signal);
    if (pooled === 'closed') return fail('internal', 'the executor is closed');
    if (pooled === 'aborted') return fail('aborted', 'the cell was aborted before it started');
    try {
      await pooled.ready;
    } catch (error) {
      await kill(pooled);
      release(pooled);
      return fail('internal', `the sandbox worker did not start: ${(error as Error).message}`);
    }

    const cellId = nextCellId;
    nextCellId += 1;
    const cellEnded = new AbortController();
    const { worker } = pooled;
    return await new Promise<CellResult>((resolve) => {
      let finished = false;
      const finish = (result: CellResult, options: { terminate: boolean }) => {
        if (finished) return;
        finished = true;
        clearTimeout(timer);
        run.signal?.removeEventListener('abort', onAbort);
        worker.off('message', onMessage);
        worker.off('error', onError);
        worker.off('exit', onExit);
        cellEnded.abort();
        const settle = () => {
          release(pooled);
          resolve(result);
        };
        if (options.terminate && !pooled.dead) {
          kill(pooled).then(settle, settle);
        } else {
          settle();
        }
      };
      const onAbort = () => finish(fail('aborted', 'the cell was aborted'), { terminate: true });
      const onError = (error: Error & { code?: string }) => {
        if (error.code === 'ERR_WORKER_OUT_OF_MEMORY') {
          finish(fail('memory', 'the cell used more memory than its worker may have, and the worker was stopped'), {
            terminate: true,
          });
        } else {
          logger?.error({ err: error }, 'codeact sandbox worker failed');
          finish(fail('internal', `the sandbox worker failed: ${error.message}`), { terminate: true });
        }
      };
      const onExit = (exitCode: number) => {
        finish(fail('internal', `the sandbox worker stopped unexpectedly (exit code ${exitCode})`), {
          terminate: false,
        });
      };
      const reply = (message: HostToWorker) => {
        if (!finished) worker.postMessage(message);
      };
      const onCall = async (message: Extract<WorkerToHost, { type: 'call' }>) => {
        const primitive = flat[message.pathIndex];
        let args: JSONValue[] | undefined;
        try {
          const parsed: unknown = JSON.parse(message.argsText);
          if (Array.isArray(parsed) && whyNotJson(parsed) === undefined) args = parsed as JSONValue[];
        } catch {
          // The prelude writes this text; if it did not arrive as a JSON array, the call is refused below.
        }
        const record: CallRecord = {
          index: message.index,
          path: primitive?.path ?? [],
          args: args ?? [],
          status: 'unfinished',
        };
        calls.push(record);
        const answer = (outcome: { ok: true; value: JSONValue } | { ok: false; message: string }) => {
          if (finished) return;
          if (outcome.ok) {
            Object.assign(record, { status: 'ok', result: outcome.value });
            reply({
              type: 'call-result',
              cellId,
              index: message.index,
              ok: true,
              valueText: JSON.stringify(outcome.value),
            });
          } else {
            Object.assign(record, { status: 'error', error: outcome.message });
            reply({ type: 'call-result', cellId, index: message.index, ok: false, message: outcome.message });
          }
        };
        if (primitive === undefined) {
          answer({ ok: false, message: `no primitive number ${message.pathIndex}` });
          return;
        }
        const name = `tools.${primitive.path.join('.')}`;
        if (args === undefined) {
          answer({ ok: false, message: `${name}: its arguments did not arrive as a JSON array; the call was refused` });
          return;
        }
        try {
          const value: unknown = await primitive.handler({
            path: primitive.path,
            args,
            index: message.index,
            signal: cellEnded.signal,
          });
          const reason = whyNotJson(value);
          if (reason === undefined) answer({ ok: true, value: value as JSONValue });
          else answer({ ok: false, message: `${name} returned a value that is not JSON (${reason}); it was refused` });
        } catch (error) {
          answer({ ok: false, message: `${name} failed: ${error instanceof Error ? error.message : String(error)}` });
        }
      };
      const onMessage = (message: WorkerToHost) => {
        if (message.type === 'ready' || message.cellId !== cellId) return;
        if (message.type === 'log') {
          logs.push(message.text);
        } else if (message.type === 'call') {
          void onCall(message);
        } else if (message.outcome.ok) {
          let value: JSONValue = null;
          try {
            value = JSON.parse(message.outcome.valueText) as JSONValue;
          } catch {
            finish(fail('internal', 'the sandbox returned a value that is not JSON'), { terminate: true });
            return;
          }
          finish({ ok: true, value, logs, calls }, { terminate: message.retire });
        } else {
          finish(fail(message.outcome.kind, message.outcome.message), { terminate: message.retire });
        }
      };
      worker.on('message', onMessage);
      worker.on('error', onError);
      worker.on('exit', onExit);
      run.signal?.addEventListener('abort', onAbort, { once: true });
      const timer = setTimeout(() => {
        finish(fail('timeout', `the cell ran past its deadline of ${timeoutMs} ms and was stopped`), {
          terminate: true,
        });
      }, timeoutMs);
      worker.postMessage({
        type: 'run',
        cellId,
        code: run.code,
        paths: flat.map((primitive) => primitive.path),
        limits: {
          interruptAfterMs: timeoutMs - interruptMarginMs(timeoutMs),
          memoryLimitBytes: settings.memoryLimitBytes,
          maxStackBytes: settings.maxStackBytes,
          maxOutputBytes: settings.maxOutputBytes,
          maxCalls,
          maxCallBytes: settings.maxCallBytes,
        },
      } satisfies HostToWorker);
    });
  }

  const executor: Executor = {
    async run(run) {
      const signals = typeof run.code === 'string' ? escapeSignals(run.code) : [];
      let result: CellResult;
      try {
        result = await runCell(run);
      } catch (error) {
        logger?.error({ err: error }, 'codeact executor failed');
        result = {
          ok: false,
          error: { kind: 'internal', message: `the executor failed: ${(error as Error).message}` },
          logs: [],
          calls: [],
        };
      }
      if (signals.length > 0) {
        logger?.warn(
          { escapeSignals: signals, outcome: result.ok ? 'ok' : result.error.kind },
          'codeact cell tried to reach outside the sandbox',
        );
      }
      return result;
    },
    async warm() {
      if (closed !== undefined) return;
      const pooled = pool[0] ?? spawn();
      // An unreferenced worker that is still loading would let the process exit under this await.
      pooled.worker.ref();
      try {
        await pooled.ready;
      } finally {
        if (!pooled.busy && !pooled.dead) pooled.worker.unref();
      }
    },
    close() {
      closed ??= (async () => {
        for (const resolve of waiting.splice(0)) resolve();
        await Promise.allSettled(pool.splice(0).map((pooled) => pooled.worker.terminate()));
      })();
      return closed;
    },
    [Symbol.asyncDispose]() {
      return executor.close();
    },
  };
  return executor;
}
