import type { CallLog, CallLogEntry, LoggedOutcome } from './call-log.ts';
import type { CallRecord, CellResult, Executor } from './executor.ts';
import type { JSONValue } from './json-value.ts';
import { namespaceOfPaths, type PrimitiveCall } from './primitives.ts';

/** One call of a cell that is not in the log: the host decides whether it may run, then runs it. */
export interface LiveCall {
  path: readonly string[];
  args: JSONValue[];
  index: number;
}

/** What the cell's calls reach: the gate and the tools, behind the log. */
export interface CallHost {
  /**
   * Whether the call may run. Calls `onWait` first when the owner must decide: the cell is stopped then (it must not
   * hold its deadline or a worker thread for hours), the decision is awaited, and the cell runs again from the start
   * once it is known. Rejects only when the whole run is stopped.
   */
  permit(call: LiveCall, onWait: () => void): Promise<{ run: true } | { run: false; reason: string }>;
  /** Runs a permitted call. Its rejection's message is what the cell's call rejects with. */
  run(call: LiveCall & { signal: AbortSignal }): Promise<JSONValue>;
  /**
   * Whether a call that was started but whose result a crash lost may simply run again (it reads and changes
   * nothing). Any other such call is answered with an error and never run twice.
   */
  rerunnable(path: readonly string[]): boolean;
}

/** Options of {@link runLoggedCell}. */
export interface LoggedCellOptions {
  executor: Executor;
  code: string;
  /** The tools the cell sees, as a namespace of paths (only the shape is used: calls go to `host`). */
  paths: readonly (readonly string[])[];
  log: CallLog;
  host: CallHost;
  /** Stops the run: the cell, a call waiting for the owner, the tools running. */
  signal?: AbortSignal;
  /** Overrides the executor's per-cell deadline. */
  timeoutMs?: number;
  /**
   * How many times the cell runs again after calls that waited for the owner were decided.
   * @default 25
   */
  maxReruns?: number;
}

/** What a logged cell gave: the cell's result, how many times it ran, and how many of its calls came from the log. */
export interface LoggedCellResult {
  result: CellResult;
  runs: number;
  replayed: number;
}

/**
 * Runs a cell whose calls are durable: every call is answered from `log` when the log holds it (same position, same
 * tool, same arguments), and otherwise asks `host.permit`, runs, and is logged before its result returns to the cell.
 * A call that must wait for the owner stops the cell; once every waiting call is decided (and run or refused, and
 * logged), the same code runs again and reaches the point it had come to without repeating a call. A call that differs
 * from the log at its position is a divergence: it is never run, and the cell fails with `replay_divergence`. A
 * call started before a crash whose result was lost runs again only when `host.rerunnable` says so; otherwise it is
 * answered with an error. Never rejects unless `signal` is aborted (then with its reason).
 */
export async function runLoggedCell(options: LoggedCellOptions): Promise<LoggedCellResult> {
  const maxReruns = options.maxReruns ?? 25;
  let replayed = 0;
  for (let runs = 1; ; runs += 1) {
    options.signal?.throwIfAborted();
    const round = await runOnce(options);
    replayed = round.replayed;
    if (round.divergence !== undefined) {
      return {
        result: { ok: false, error: { kind: 'replay_divergence', message: round.divergence }, logs: [], calls: [] },
        runs,
        replayed,
      };
    }
    if (!round.waited) return { result: round.result, runs, replayed };
    if (runs > maxReruns) {
      return {
        result: {
          ok: false,
          error: {
            kind: 'too_many_calls',
            message: `the cell stopped to wait for the owner ${runs} times; split the work into smaller cells`,
          },
          logs: round.result.logs,
          calls: round.result.calls,
        },
        runs,
        replayed,
      };
    }
  }
}

interface Round {
  result: CellResult;
  /** A call waited for the owner: run the cell again. */
  waited: boolean;
  divergence?: string;
  replayed: number;
}

async function runOnce(options: LoggedCellOptions): Promise<Round> {
  const { host, log } = options;
  const logged = await log.read();
  const cell = new AbortController();
  // The tools' own signal: aborted when the cell ends, unless it ended to wait for the owner (the calls under way
  // then finish and are logged, for the next run to find).
  const tools = new AbortController();
  const outer = options.signal;
  const onOuterAbort = (): void => {
    cell.abort(outer?.reason);
    tools.abort(outer?.reason);
  };
  if (outer?.aborted) onOuterAbort();
  else outer?.addEventListener('abort', onOuterAbort, { once: true });
  let waited = false;
  let divergence: string | undefined;
  let replayed = 0;
  const underway = new Set<Promise<unknown>>();

  const answer = (outcome: LoggedOutcome): JSONValue => {
    if (outcome.status === 'ok') return outcome.result;
    throw new Error(outcome.error);
  };

  const live = async (call: LiveCall): Promise<LoggedOutcome> => {
    const decision = await host.permit(call, () => {
      waited = true;
      cell.abort(new Error('a call waits for the owner'));
    });
    if (!decision.run) {
      const outcome: LoggedOutcome = { status: 'error', error: `refused: ${decision.reason}` };
      await log.finished({ ...entryOf(call), outcome });
      return outcome;
    }
    await log.started(entryOf(call));
    let outcome: LoggedOutcome;
    try {
      outcome = { status: 'ok', result: await host.run({ ...call, signal: tools.signal }) };
    } catch (error) {
      // The run is stopped: nothing is logged, and the started line makes the next run refuse to repeat the call.
      outer?.throwIfAborted();
      outcome = { status: 'error', error: error instanceof Error ? error.message : String(error) };
    }
    await log.finished({ ...entryOf(call), outcome });
    return outcome;
  };

  const handler = async (call: PrimitiveCall): Promise<JSONValue> => {
    const { index } = call;
    const asked: LiveCall = { path: [...call.path], args: call.args, index };
    const entry = logged.get(index);
    if (entry !== undefined) {
      const differs = differenceFrom(entry, asked);
      if (differs !== undefined) {
        divergence ??= `replay divergence at call ${index}: ${differs}; the cell's calls must be the same on every run (no Date.now, Math.random or changing order before a call), and nothing was run. Write the cell again to continue.`;
        cell.abort(new Error(divergence));
        throw new Error(divergence);
      }
      if (entry.outcome !== undefined) {
        replayed += 1;
        return answer(entry.outcome);
      }
      if (!host.rerunnable(asked.path)) {
        const outcome: LoggedOutcome = {
          status: 'error',
          error: `${asked.path.join('.')} was started before a restart and its result was lost; it is not run again, so it may or may not have happened`,
        };
        await log.finished({ ...entryOf(asked), outcome });
        return answer(outcome);
      }
    }
    const work = live(asked);
    underway.add(work);
    try {
      return answer(await work);
    } finally {
      underway.delete(work);
    }
  };

  let result: CellResult;
  try {
    result = await options.executor.run({
      code: options.code,
      primitives: namespaceOfPaths(
        options.paths,
        (path) => path,
        () => handler,
      ),
      signal: cell.signal,
      ...(options.timeoutMs === undefined ? {} : { timeoutMs: options.timeoutMs }),
    });
    if (!waited) tools.abort(new Error('the cell ended'));
    // Calls under way finish (and are logged) before the cell runs again or its result is reported.
    while (underway.size > 0) await Promise.allSettled([...underway]);
  } finally {
    outer?.removeEventListener('abort', onOuterAbort);
  }
  outer?.throwIfAborted();
  return {
    result: { ...result, calls: result.calls.map(withReplayMark(logged)) },
    waited: waited && divergence === undefined,
    ...(divergence === undefined ? {} : { divergence }),
    replayed,
  };
}

function entryOf(call: LiveCall): Omit<CallLogEntry, 'outcome'> {
  return { index: call.index, path: [...call.path], args: call.args };
}

/** Why `call` is not the call the log holds at its position, or undefined when it is. */
function differenceFrom(entry: CallLogEntry, call: LiveCall): string | undefined {
  const loggedPath = entry.path.join('.');
  const path = call.path.join('.');
  if (loggedPath !== path) return `the log has tools.${loggedPath} there, this run called tools.${path}`;
  const loggedArgs = JSON.stringify(entry.args);
  const args = JSON.stringify(call.args);
  if (loggedArgs !== args) {
    return `tools.${path} was called with ${clip(loggedArgs)} before and with ${clip(args)} now`;
  }
  return undefined;
}

function clip(text: string): string {
  return text.length <= 200 ? text : `${text.slice(0, 200)}…`;
}

/** Calls are reported as they ran; a call answered from the log says so. */
function withReplayMark(logged: Map<number, CallLogEntry>): (call: CallRecord) => CallRecord {
  return (call) => (logged.get(call.index)?.outcome === undefined ? call : { ...call, replayed: true });
}
