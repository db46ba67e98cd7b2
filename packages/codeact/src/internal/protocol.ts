// The messages between the executor (main thread) and a cell worker. Only strings and plain JSON cross: values are
// JSON text produced inside QuickJS, so nothing the host holds is ever handed to the sandbox by reference.

/** The limits a worker applies inside QuickJS; the wall-clock kill is the host's. */
export interface CellLimits {
  /**
   * Milliseconds after the worker receives the cell at which its interrupt handler stops the engine (a little before
   * the host's kill). Relative, and measured on the worker's monotonic clock: an absolute time would compare the
   * host's `Date` with the worker's, which differ when the host's is faked (a test's `vi.setSystemTime`) or the wall
   * clock jumps.
   */
  interruptAfterMs: number;
  memoryLimitBytes: number;
  maxStackBytes: number;
  maxOutputBytes: number;
  maxCalls: number;
  maxCallBytes: number;
}

export type ErrorKind =
  | 'syntax'
  | 'thrown'
  | 'timeout'
  | 'memory'
  | 'output_too_large'
  | 'too_many_calls'
  | 'primitive_error'
  | 'aborted'
  /** A cell run again (after an approval, after a restart) made a call other than the one its log holds there. */
  | 'replay_divergence'
  | 'internal';

export type HostToWorker =
  | { type: 'run'; cellId: number; code: string; paths: string[][]; limits: CellLimits }
  | { type: 'call-result'; cellId: number; index: number; ok: true; valueText: string }
  | { type: 'call-result'; cellId: number; index: number; ok: false; message: string };

export type WorkerToHost =
  | { type: 'ready' }
  | { type: 'log'; cellId: number; text: string }
  | { type: 'call'; cellId: number; index: number; pathIndex: number; argsText: string }
  /** `retire`: the runtime could not be cleaned up, so the host replaces this worker. */
  | { type: 'done'; cellId: number; outcome: CellOutcome; retire: boolean };

export type CellOutcome = { ok: true; valueText: string } | { ok: false; kind: ErrorKind; message: string };
