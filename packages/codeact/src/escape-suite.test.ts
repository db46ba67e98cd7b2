// The escape suite (issue 36): each probe is a cell that tries to get out of the sandbox, to take the host down,
// or to leave something behind for the next cell. Each must end as a readable result, and after each one the
// executor must still run an ordinary cell correctly.
import path from 'node:path';
import { Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type CellResult, createExecutor, type Executor } from './executor.ts';
import type { JSONValue } from './json-value.ts';
import type { PrimitiveCall, Primitives } from './primitives.ts';

const packageRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const repoRoot = path.resolve(packageRoot, '..', '..');

/** What the host primitives saw, per probe: a refused argument must never reach the host. */
let hostCalls: PrimitiveCall[] = [];

const primitives: Primitives = {
  echo: async (call) => {
    hostCalls.push(call);
    return call.args;
  },
  math: {
    add: async (call) => {
      hostCalls.push(call);
      return (call.args[0] as number) + (call.args[1] as number);
    },
  },
  bad: {
    fn: async () => (() => 1) as unknown as JSONValue,
    date: async () => new Date(0) as unknown as JSONValue,
    nan: async () => Number.NaN,
    cycle: async () => {
      const value: Record<string, unknown> = {};
      value.self = value;
      return value as JSONValue;
    },
    undefined: async () => undefined as unknown as JSONValue,
  },
};

/** Short enough that the loop probes finish quickly, long enough for an ordinary cell on a loaded machine. */
const loopTimeoutMs = 600;

interface Probe {
  name: string;
  code: string;
  timeoutMs?: number;
  /** The escape signals the WARN line must name (docs/codeact.md): a probe of the walls is seen by the owner. */
  warns?: string[];
  check: (result: CellResult) => void;
}

function failedAs(kind: string, message?: RegExp): (result: CellResult) => void {
  return (result) => {
    expect(result.ok, JSON.stringify(result)).toBe(false);
    if (result.ok) return;
    expect(result.error.kind).toBe(kind);
    if (message !== undefined) expect(result.error.message).toMatch(message);
  };
}

function valued(value: JSONValue): (result: CellResult) => void {
  return (result) => {
    expect(result, JSON.stringify(result)).toMatchObject({ ok: true, value });
  };
}

/** The names a fresh context may have on its global object: the language's own, plus `tools` and `console`. */
const languageGlobals = new Set([
  ...'Error EvalError RangeError ReferenceError SyntaxError TypeError URIError InternalError AggregateError Array Object Function Iterator parseInt parseFloat isNaN isFinite decodeURI decodeURIComponent encodeURI encodeURIComponent escape unescape Infinity NaN undefined eval Number Boolean String Math Reflect Symbol globalThis BigInt Date RegExp JSON Proxy Map Set WeakMap WeakSet ArrayBuffer Uint8ClampedArray Int8Array Uint8Array Int16Array Uint16Array Int32Array Uint32Array BigInt64Array BigUint64Array Float16Array Float32Array Float64Array DataView Promise WeakRef FinalizationRegistry'.split(
    ' ',
  ),
  'tools',
  'console',
]);

const probes: Probe[] = [
  {
    name: 'process is not defined',
    warns: ['process'],
    code: 'return process.env;',
    check: failedAs('thrown', /ReferenceError: 'process' is not defined/),
  },
  {
    name: 'require is not defined',
    warns: ['require'],
    code: 'return require("node:fs").readFileSync("/etc/passwd", "utf8");',
    check: failedAs('thrown', /ReferenceError: 'require' is not defined/),
  },
  {
    name: 'dynamic import loads no module',
    warns: ['import'],
    code: 'const fs = await import("node:fs"); return fs.readFileSync("/etc/passwd", "utf8");',
    check: failedAs('thrown', /could not load module 'node:fs'/),
  },
  {
    name: 'static import is a syntax error in a cell',
    warns: ['import'],
    code: 'import { readFileSync } from "node:fs";\nreturn readFileSync("/etc/passwd", "utf8");',
    check: failedAs('syntax'),
  },
  {
    name: 'the Function constructor reaches only the sandbox global',
    warns: ['process', 'Function constructor'],
    code:
      'const global = Function("return this")();\n' +
      'return [typeof global.process, typeof global.require, typeof Function("return process")];',
    check: valued(['undefined', 'undefined', 'function']),
  },
  {
    name: 'code built by the Function constructor still finds no process',
    warns: ['process', 'Function constructor'],
    code: 'return new Function("return process.pid")();',
    check: failedAs('thrown', /'process' is not defined/),
  },
  {
    name: 'constructor.constructor of a bridged value is the sandbox Function',
    warns: ['Function constructor'],
    code:
      'const [value] = await tools.echo({ a: 1 });\n' +
      'const F = value.constructor.constructor;\n' +
      'return [F === Function, F("return typeof process + typeof require + typeof Buffer")()];',
    check: valued([true, 'undefinedundefinedundefined']),
  },
  {
    name: "constructor.constructor of a primitive's returned array is the sandbox Function",
    code: 'const result = await tools.echo([1]);\nreturn result.constructor.constructor("return Object.keys(this)")();',
    check: valued(['tools', 'console']),
  },
  {
    name: 'constructor.constructor of a primitive function itself is the sandbox Function',
    code:
      'const AsyncFunction = tools.echo.constructor;\n' +
      'const F = AsyncFunction.constructor;\n' +
      'return [await new AsyncFunction("return typeof process")(), F("return typeof globalThis.require")()];',
    check: valued(['undefined', 'undefined']),
  },
  {
    name: 'prototype pollution through a bridged object stays in the cell',
    warns: ['prototype pollution'],
    code:
      'const [value] = await tools.echo({});\n' +
      'value.__proto__.polluted = "yes";\n' +
      'Object.prototype.toJSON = () => "hijacked";\n' +
      'const echoed = await tools.echo({ clean: true });\n' +
      'delete Object.prototype.toJSON;\n' +
      'return [({}).polluted, echoed];',
    check: (result) => {
      valued(['yes', [{ clean: true }]])(result);
      expect(({} as Record<string, unknown>).polluted).toBeUndefined();
      expect(hostCalls.at(-1)?.args).toEqual([{ clean: true }]);
    },
  },
  {
    name: "replacing JSON and Array methods does not change the bridge's copies",
    code:
      'JSON.parse = () => ({ forged: true });\n' +
      'JSON.stringify = () => "{\\"forged\\":true}";\n' +
      'Array.prototype.map = () => [];\n' +
      'Object.keys = () => ["forged"];\n' +
      'return await tools.echo({ real: [1, 2] });',
    check: (result) => {
      valued([{ real: [1, 2] }])(result);
      expect(hostCalls.at(-1)?.args).toEqual([{ real: [1, 2] }]);
    },
  },
  {
    name: 'a global left behind is gone in the next cell',
    code: 'globalThis.leftBehind = 1; Object.prototype.inherited = 2; Array.prototype.push = null; return "set";',
    check: valued('set'),
  },
  {
    name: 'an infinite loop ends at the deadline',
    code: 'for (;;) {}',
    timeoutMs: loopTimeoutMs,
    check: failedAs('timeout'),
  },
  {
    name: "an infinite loop inside a primitive's promise callback ends at the deadline",
    code: 'await tools.echo(1).then(() => { for (;;) {} });',
    timeoutMs: loopTimeoutMs,
    check: failedAs('timeout'),
  },
  {
    name: 'a flood of promise jobs ends at the deadline',
    code: 'const again = () => Promise.resolve().then(again);\nagain();\nawait tools.echo(1);',
    timeoutMs: loopTimeoutMs,
    check: failedAs('timeout'),
  },
  {
    name: 'an endless chain of awaits ends at the deadline',
    code: 'for (;;) await null;',
    timeoutMs: loopTimeoutMs,
    check: failedAs('timeout'),
  },
  {
    name: 'CPU in native code, where the interrupt is not polled, ends at the deadline by terminating the worker',
    code:
      'const items = Array.from({ length: 300000 }, (_, i) => "k" + ((i * 7919) % 300000));\n' +
      'for (;;) items.sort().reverse();',
    timeoutMs: loopTimeoutMs,
    check: failedAs('timeout', /ran past its deadline of 600 ms/),
  },
  {
    name: 'deep recursion stops at the stack limit',
    code: 'function down(n) { return down(n + 1) + 1; }\nreturn down(0);',
    check: failedAs('memory', /stack/),
  },
  {
    name: 'a string memory bomb stops at the memory limit',
    code: 'let text = "x";\nfor (;;) text = text + text;',
    check: failedAs('memory'),
  },
  {
    name: 'an array memory bomb stops at the memory limit',
    code: 'const items = [];\nfor (let i = 0; ; i++) items.push(i, i, i, i);',
    check: failedAs('memory'),
  },
  {
    name: 'one huge allocation is refused',
    code: 'return new ArrayBuffer(2 ** 30).byteLength;',
    check: failedAs('memory'),
  },
  {
    name: 'Atomics is absent, so Atomics.wait cannot block the worker',
    warns: ['shared memory'],
    code: 'Atomics.wait(new Int32Array(new ArrayBuffer(4)), 0, 0);',
    check: failedAs('thrown', /'Atomics' is not defined/),
  },
  {
    name: 'SharedArrayBuffer is absent',
    warns: ['shared memory'],
    code: 'return new SharedArrayBuffer(8).byteLength;',
    check: failedAs('thrown', /'SharedArrayBuffer' is not defined/),
  },
  {
    name: 'WebAssembly is absent',
    warns: ['WebAssembly'],
    code: 'return WebAssembly.compile(new Uint8Array([0, 97, 115, 109, 1, 0, 0, 0]));',
    check: failedAs('thrown', /'WebAssembly' is not defined/),
  },
  {
    name: 'timers are absent',
    code: 'return [typeof setTimeout, typeof setInterval, typeof setImmediate, typeof queueMicrotask, typeof fetch];',
    check: valued(['undefined', 'undefined', 'undefined', 'undefined', 'undefined']),
  },
  {
    name: 'a promise that nothing can settle is reported, not waited on forever',
    code: 'await new Promise((resolve) => { globalThis.later = resolve; });',
    check: failedAs('thrown', /nothing can settle/),
  },
  {
    name: 'a huge value is refused as output_too_large',
    code: 'return "v".repeat(200000);',
    check: failedAs('output_too_large'),
  },
  {
    name: 'huge logs are cut at the limit and refused as output_too_large',
    code: 'for (let i = 0; i < 100000; i++) console.log("line " + i + " " + "l".repeat(100));',
    check: (result) => {
      failedAs('output_too_large')(result);
      expect(Buffer.byteLength(result.logs.join('\n'))).toBeLessThanOrEqual(64 * 1024);
    },
  },
  {
    name: 'a catastrophic regular expression ends at the deadline',
    code: 'return /^(a+)+$/.test("a".repeat(40) + "!");',
    timeoutMs: loopTimeoutMs,
    check: failedAs('timeout'),
  },
  {
    name: 'errors and their stacks show no host paths',
    code:
      'const stacks = [];\n' +
      'try { null.x; } catch (error) { stacks.push(String(error.stack)); }\n' +
      'try { await import("node:x"); } catch (error) { stacks.push(String(error.stack), String(error.message)); }\n' +
      'try { await tools.bad.fn(); } catch (error) { stacks.push(String(error.stack), String(error.message)); }\n' +
      'try { tools.echo(Symbol()); } catch (error) { stacks.push(String(error.stack)); }\n' +
      'Error.prepareStackTrace = (error, frames) => frames;\n' +
      'try { undefinedName; } catch (error) { stacks.push(String(error.stack)); }\n' +
      'return stacks.join("\\n");',
    check: (result) => {
      expect(result.ok).toBe(true);
      const text = JSON.stringify(result);
      for (const hostText of [repoRoot, 'node_modules', 'file:', '.ts', 'cell-worker', '/work', process.cwd()]) {
        expect(text).not.toContain(hostText);
      }
    },
  },
  {
    name: 'a thrown error whose message getter loops ends at the deadline',
    code: 'throw { get message() { for (;;) {} } };',
    timeoutMs: loopTimeoutMs,
    check: failedAs('timeout'),
  },
  {
    name: 'the global object has only the language, tools and console',
    code: 'return Object.getOwnPropertyNames(globalThis);',
    check: (result) => {
      expect(result.ok).toBe(true);
      const names = result.ok ? (result.value as string[]) : [];
      expect(names.filter((name) => !languageGlobals.has(name))).toEqual([]);
      expect(names).not.toContain('hostCall');
    },
  },
  {
    name: 'eval runs in the sandbox, contained',
    code: 'return [eval("typeof process"), (0, eval)("typeof this.tools"), eval("typeof require")];',
    check: valued(['undefined', 'object', 'undefined']),
  },
  {
    name: 'a function argument to a primitive is refused before it reaches the host',
    code: 'return await tools.echo({ callback: () => 1 });',
    check: (result) => {
      failedAs('thrown', /tools\.echo: a function at argument 0\.callback cannot cross/)(result);
      expect(hostCalls).toEqual([]);
      expect(result.calls).toEqual([]);
    },
  },
  {
    name: 'non-JSON arguments (NaN, cycles, class instances, symbols) are refused',
    code:
      'const refused = [];\n' +
      'const cycle = {}; cycle.self = cycle;\n' +
      'for (const value of [NaN, cycle, new Map(), Symbol("s"), 10n, [undefined]]) {\n' +
      '  try { await tools.echo(value); } catch (error) { refused.push(error.name); }\n' +
      '}\n' +
      'return refused;',
    check: (result) => {
      valued(['TypeError', 'TypeError', 'TypeError', 'TypeError', 'TypeError', 'TypeError'])(result);
      expect(hostCalls).toEqual([]);
    },
  },
  {
    name: 'a primitive that returns non-JSON is refused with a PrimitiveError',
    code:
      'const answers = [];\n' +
      'for (const name of ["fn", "date", "nan", "cycle", "undefined"]) {\n' +
      '  try { answers.push(await tools.bad[name]()); } catch (error) { answers.push(error.name); }\n' +
      '}\n' +
      'return answers;',
    check: (result) => {
      valued(['PrimitiveError', 'PrimitiveError', 'PrimitiveError', 'PrimitiveError', 'PrimitiveError'])(result);
      expect(result.calls.map((call) => call.status)).toEqual(['error', 'error', 'error', 'error', 'error']);
    },
  },
  {
    name: 'calls past the limit stop the cell',
    code: 'for (;;) { try { await tools.echo(1); } catch {} }',
    check: (result) => {
      failedAs('too_many_calls')(result);
      expect(hostCalls).toHaveLength(50);
    },
  },
  {
    name: 'a Proxy posing as a plain object crosses only as the JSON it yields once',
    code:
      'let reads = 0;\n' +
      'const sneaky = new Proxy({}, {\n' +
      '  getPrototypeOf: () => Object.prototype,\n' +
      '  ownKeys: () => ["a"],\n' +
      '  getOwnPropertyDescriptor: () => ({ value: 1, enumerable: true, configurable: true }),\n' +
      '  get: () => { reads += 1; return reads === 1 ? "first" : () => "swapped"; },\n' +
      '});\n' +
      'return [await tools.echo(sneaky), reads];',
    check: (result) => {
      valued([[{ a: 'first' }], 1])(result);
      expect(hostCalls.at(-1)?.args).toEqual([{ a: 'first' }]);
    },
  },
  {
    name: 'a Proxy whose trap loops ends at the deadline',
    code: 'const trap = new Proxy({}, { ownKeys() { for (;;) {} } });\nawait tools.echo(trap);',
    timeoutMs: loopTimeoutMs,
    check: failedAs('timeout'),
  },
  {
    name: 'a Proxy whose trap returns a function is refused',
    code: 'return await tools.echo(new Proxy({ a: 1 }, { get: () => () => "host?" }));',
    check: (result) => {
      failedAs('thrown', /a function at argument 0\.a cannot cross/)(result);
      expect(hostCalls).toEqual([]);
    },
  },
  {
    name: 'a trap cannot climb the call stack to the bridge',
    code:
      'let climbed = "nothing";\n' +
      'const probe = new Proxy({}, { ownKeys: function trap() {\n' +
      '  try { climbed = typeof trap.caller; } catch (error) { climbed = error.name; }\n' +
      '  return [];\n' +
      '} });\n' +
      'await tools.echo(probe);\n' +
      'return climbed;',
    check: (result) => {
      expect(result.ok).toBe(true);
      expect(result.ok && result.value).not.toBe('function');
    },
  },
  {
    name: 'tools cannot be replaced or extended',
    code:
      'tools.math.add = async () => 99;\n' +
      'tools.extra = async () => "mine";\n' +
      'return [await tools.math.add(1, 1), typeof tools.extra, Object.isFrozen(tools.math)];',
    check: valued([2, 'undefined', true]),
  },
  {
    name: 'console cannot be used to smuggle host objects, and a replaced console only fools the cell',
    code: 'console.log(globalThis, tools, Symbol("s"), () => 1);\nconsole = { log() {} };\nconsole.log("lost");\nreturn 1;',
    check: (result) => {
      valued(1)(result);
      expect(result.logs).toHaveLength(1);
      expect(result.logs[0]).not.toMatch(/process|require|\/work/);
    },
  },
];

describe('escape suite', () => {
  let executor: Executor;
  let warnings: { escapeSignals: string[]; outcome: string }[] = [];
  beforeAll(async () => {
    const logger = pino(
      { level: 'warn' },
      new Writable({
        write(chunk: Buffer, _encoding, callback) {
          warnings.push(JSON.parse(chunk.toString()) as (typeof warnings)[number]);
          callback();
        },
      }),
    );
    executor = createExecutor({ timeoutMs: 5_000, logger });
    await executor.warm();
  });
  afterAll(() => executor.close());

  for (const probe of probes) {
    it(`contains: ${probe.name}`, async () => {
      hostCalls = [];
      warnings = [];
      const result = await executor.run({
        code: probe.code,
        primitives,
        ...(probe.timeoutMs === undefined ? {} : { timeoutMs: probe.timeoutMs }),
      });
      probe.check(result);
      hostCalls = [];
      if (probe.warns !== undefined) {
        const expected = probe.warns;
        await expect
          .poll(() => warnings, { timeout: 5_000 })
          .toContainEqual(expect.objectContaining({ escapeSignals: expect.arrayContaining(expected) }));
      }

      // The executor still runs an ordinary cell correctly, in a clean context.
      const after = await executor.run({
        code:
          'const sum = await tools.math.add(2, 3);\n' +
          'console.log("after");\n' +
          'return [sum, typeof leftBehind, ({}).inherited === undefined, ({}).polluted === undefined, [].push(1)];',
        primitives,
      });
      expect(after).toEqual({
        ok: true,
        value: [5, 'undefined', true, true, 1],
        logs: ['after'],
        calls: [{ index: 0, path: ['math', 'add'], args: [2, 3], status: 'ok', result: 5 }],
      });
      expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    });
  }

  it('has at least 25 probes', () => {
    expect(probes.length).toBeGreaterThanOrEqual(25);
  });
});
