// A cell worker: a worker_threads Worker that loads QuickJS's WebAssembly module once and runs one cell at a time,
// each in a fresh QuickJS runtime and context, so nothing a cell leaves behind reaches the next one. The executor on
// the main thread owns the wall clock and terminates this thread at the deadline; the limits here (interrupt
// handler, memory limit, stack size, output and call counts) are the first line, which lets a well-stopped cell
// keep the warm worker.
import { parentPort } from 'node:worker_threads';
import {
  getQuickJS,
  type QuickJSContext,
  type QuickJSDeferredPromise,
  type QuickJSHandle,
  type QuickJSRuntime,
} from 'quickjs-emscripten';
import { prelude } from './prelude.ts';
import type { CellLimits, CellOutcome, ErrorKind, HostToWorker, WorkerToHost } from './protocol.ts';

if (parentPort === null) throw new Error('cell-worker.ts runs only as a worker thread');
const port = parentPort;
const quickJs = await getQuickJS();

/** The longest error message passed back: a stack through deep recursion would otherwise be megabytes. */
const maxMessageChars = 4_000;
/** Promise jobs run between checks of the deadline and of whether the cell has settled. */
const jobsPerSlice = 1_000;

type CallResult = Extract<HostToWorker, { type: 'call-result' }>;
/** Set when a runtime could not be disposed: the worker asks to be replaced rather than run more cells. */
let runtimeLeaked = false;
let current: { cellId: number; deliver: (result: CallResult) => void } | undefined;

function send(message: WorkerToHost): void {
  port.postMessage(message);
}

function truncate(text: string): string {
  return text.length > maxMessageChars ? `${text.slice(0, maxMessageChars)}… (truncated)` : text;
}

interface RunCellInput {
  cellId: number;
  code: string;
  paths: string[][];
  limits: CellLimits;
}

/** Runs a cell to its outcome; never throws (an engine failure is an `internal` outcome that retires the worker). */
async function runCell(input: RunCellInput): Promise<CellOutcome> {
  const { cellId, code, paths, limits } = input;
  const interruptAt = performance.now() + limits.interruptAfterMs;
  let runtime: QuickJSRuntime | undefined;
  let context: QuickJSContext | undefined;
  const handles: QuickJSHandle[] = [];
  const pending = new Map<number, QuickJSDeferredPromise>();
  const arrived: CallResult[] = [];
  let wake: (() => void) | undefined;
  let stop: { kind: ErrorKind; message: string } | undefined;
  /** `stop` as it is now: TypeScript narrows the variable across calls that set it through closures. */
  const stopReason = () => stop;
  let callCount = 0;
  let outputBytes = 0;
  current = {
    cellId,
    deliver: (result) => {
      arrived.push(result);
      wake?.();
    },
  };
  try {
    runtime = quickJs.newRuntime();
    runtime.setMemoryLimit(limits.memoryLimitBytes);
    runtime.setMaxStackSize(limits.maxStackBytes);
    runtime.setInterruptHandler(() => {
      if (stop !== undefined) return true;
      if (performance.now() >= interruptAt) {
        stop = { kind: 'timeout', message: 'the cell reached its deadline and was stopped' };
        return true;
      }
      return false;
    });
    const vm = runtime.newContext();
    context = vm;
    /** A sandbox string's length in UTF-16 units, a lower bound of its UTF-8 bytes, without copying it out. */
    const stringLength = (handle: QuickJSHandle): number => vm.getProp(handle, 'length').consume(vm.getNumber);
    const keep = (handle: QuickJSHandle): QuickJSHandle => {
      handles.push(handle);
      return handle;
    };

    const hostCall = keep(
      vm.newFunction('hostCall', (pathIndexHandle, argsHandle) => {
        const pathIndex = vm.getNumber(pathIndexHandle);
        // Measured before copying out of the sandbox: a string can be as large as the QuickJS heap.
        const argsLength = stringLength(argsHandle);
        if (argsLength > limits.maxCallBytes) {
          throw new TypeError(
            `tools.${paths[pathIndex]?.join('.') ?? '?'}: its arguments are at least ${argsLength} bytes as JSON, more than the limit of ${limits.maxCallBytes}`,
          );
        }
        const argsText = vm.getString(argsHandle);
        if (callCount >= limits.maxCalls) {
          stop ??= {
            kind: 'too_many_calls',
            message: `the cell made more than ${limits.maxCalls} tool calls; it was stopped at call ${callCount + 1}`,
          };
          throw new Error(stop.message);
        }
        const index = callCount;
        callCount += 1;
        const deferred = vm.newPromise();
        pending.set(index, deferred);
        send({ type: 'call', cellId, index, pathIndex, argsText });
        return deferred.handle;
      }),
    );
    const hostLog = keep(
      vm.newFunction('hostLog', (textHandle) => {
        if (outputBytes + stringLength(textHandle) > limits.maxOutputBytes) {
          stop ??= {
            kind: 'output_too_large',
            message: `the cell's logs passed the output limit of ${limits.maxOutputBytes} bytes`,
          };
          throw new Error(stop.message);
        }
        const text = vm.getString(textHandle);
        outputBytes += Buffer.byteLength(text) + 1;
        if (outputBytes > limits.maxOutputBytes) {
          stop ??= {
            kind: 'output_too_large',
            message: `the cell's logs passed the output limit of ${limits.maxOutputBytes} bytes`,
          };
          throw new Error(stop.message);
        }
        send({ type: 'log', cellId, text });
      }),
    );
    const pathsText = keep(vm.newString(JSON.stringify(paths)));

    const setup = keep(vm.unwrapResult(vm.evalCode(prelude, 'prelude.js')));
    const helpers = keep(vm.unwrapResult(vm.callFunction(setup, vm.undefined, hostCall, hostLog, pathsText)));
    const compile = keep(vm.getProp(helpers, 'compile'));
    const toJsonText = keep(vm.getProp(helpers, 'toJsonText'));
    const describe = keep(vm.getProp(helpers, 'describe'));
    const isPrimitiveError = keep(vm.getProp(helpers, 'isPrimitiveError'));

    const describeError = (error: QuickJSHandle): string => {
      const described = vm.callFunction(describe, vm.undefined, error);
      if (described.error) {
        described.error.dispose();
        return 'the cell threw a value that could not be described';
      }
      const text = String(described.value.consume((handle) => vm.getString(handle)));
      // The cell is compiled as a function body, two lines below its source: positions are given in the cell's lines.
      return truncate(text.replace(/<input>:(\d+)/g, (_match, line: string) => `cell:${Number(line) - 2}`));
    };
    const failedWith = (error: QuickJSHandle, kind: ErrorKind): CellOutcome => {
      if (stop !== undefined) return { ok: false, ...stop };
      const message = describeError(error);
      // Describing ran the cell's own code (a getter on `message`, a Proxy), which the deadline may have stopped.
      const stoppedWhileDescribing = stopReason();
      if (stoppedWhileDescribing !== undefined) return { ok: false, ...stoppedWhileDescribing };
      if (/\bout of memory\b|\bstring too long\b|\binvalid array length\b/.test(message)) {
        return { ok: false, kind: 'memory', message: `the cell ran out of its memory limit: ${message}` };
      }
      if (/\bstack overflow\b/.test(message)) {
        return { ok: false, kind: 'memory', message: `the cell passed its stack limit: ${message}` };
      }
      if (kind === 'thrown') {
        const primitive = vm.callFunction(isPrimitiveError, vm.undefined, error);
        if (!primitive.error && primitive.value.consume((handle) => vm.dump(handle)) === true) {
          return { ok: false, kind: 'primitive_error', message };
        }
        if (primitive.error) primitive.error.dispose();
      }
      return { ok: false, kind, message };
    };

    const codeHandle = keep(vm.newString(code));
    const compiled = vm.callFunction(compile, vm.undefined, codeHandle);
    if (compiled.error) {
      const outcome = failedWith(compiled.error, 'syntax');
      compiled.error.dispose();
      return outcome;
    }
    const cellFunction = keep(compiled.value);
    const started = vm.callFunction(cellFunction, vm.undefined);
    if (started.error) {
      const outcome = failedWith(started.error, 'thrown');
      started.error.dispose();
      return outcome;
    }
    const promise = keep(started.value);

    for (;;) {
      // In slices, so that a cell whose promise jobs never run dry (each job queueing the next) still meets its
      // deadline here even if no single job runs long enough for the interrupt handler to fire.
      const jobs = runtime.executePendingJobs(jobsPerSlice);
      if (jobs.error) jobs.error.dispose();
      if (stop === undefined && performance.now() >= interruptAt) {
        stop = { kind: 'timeout', message: 'the cell reached its deadline and was stopped' };
      }
      if (stop !== undefined) return { ok: false, ...stop };
      const state = vm.getPromiseState(promise);
      if (state.type === 'fulfilled') {
        if (state.notAPromise) return { ok: false, kind: 'internal', message: 'the cell did not return a promise' };
        const converted = state.value.consume((value) => vm.callFunction(toJsonText, vm.undefined, value));
        if (converted.error) {
          const outcome = failedWith(converted.error, 'thrown');
          converted.error.dispose();
          return outcome;
        }
        const valueLength = stringLength(converted.value);
        const valueText = valueLength + outputBytes > limits.maxOutputBytes ? undefined : vm.getString(converted.value);
        converted.value.dispose();
        if (valueText === undefined || Buffer.byteLength(valueText) + outputBytes > limits.maxOutputBytes) {
          const bytes =
            valueText === undefined
              ? `at least ${valueLength + outputBytes}`
              : Buffer.byteLength(valueText) + outputBytes;
          return {
            ok: false,
            kind: 'output_too_large',
            message: `the cell's value and logs (${bytes} bytes) pass the output limit of ${limits.maxOutputBytes} bytes`,
          };
        }
        return { ok: true, valueText };
      }
      if (state.type === 'rejected') {
        const outcome = failedWith(state.error, 'thrown');
        state.error.dispose();
        return outcome;
      }
      if (runtime.hasPendingJob()) continue;
      if (pending.size === 0) {
        return {
          ok: false,
          kind: 'thrown',
          message:
            'the cell is waiting on a promise that nothing can settle (there are no timers here, only tools.* calls)',
        };
      }
      while (arrived.length === 0) {
        await new Promise<void>((resolve) => {
          wake = resolve;
        });
        wake = undefined;
      }
      for (const result of arrived.splice(0)) {
        const deferred = pending.get(result.index);
        if (deferred === undefined) continue;
        pending.delete(result.index);
        if (result.ok) {
          vm.newString(result.valueText).consume((value) => deferred.resolve(value));
        } else {
          vm.newError({ name: 'PrimitiveError', message: result.message }).consume((error) => deferred.reject(error));
        }
        deferred.dispose();
      }
    }
  } catch (error) {
    if (stop !== undefined) return { ok: false, ...stop };
    const message = error instanceof Error ? error.message : String(error);
    if (/\bout of memory\b/.test(message)) {
      return { ok: false, kind: 'memory', message: `the cell ran out of its memory limit: ${truncate(message)}` };
    }
    runtimeLeaked = true;
    return { ok: false, kind: 'internal', message: `the sandbox failed: ${truncate(message)}` };
  } finally {
    current = undefined;
    for (const deferred of pending.values()) deferred.dispose();
    for (const handle of handles) if (handle.alive) handle.dispose();
    try {
      context?.dispose();
      runtime?.dispose();
    } catch {
      // A runtime stopped mid-job may still hold objects; the executor retires this worker (see `done`).
      runtimeLeaked = true;
    }
  }
}

port.on('message', (message: HostToWorker) => {
  if (message.type === 'call-result') {
    if (current?.cellId === message.cellId) current.deliver(message);
    return;
  }
  void runCell(message).then((outcome) => {
    send({ type: 'done', cellId: message.cellId, outcome, retire: runtimeLeaked });
  });
});

send({ type: 'ready' });
