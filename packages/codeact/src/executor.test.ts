import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createExecutor, type Executor } from './executor.ts';
import type { JSONValue } from './json-value.ts';
import type { Primitives } from './primitives.ts';

const primitives: Primitives = {
  math: {
    add: async ({ args }) => (args[0] as number) + (args[1] as number),
  },
  echo: async ({ args }) => args,
};

describe('createExecutor', () => {
  let executor: Executor;
  beforeAll(async () => {
    executor = createExecutor({ timeoutMs: 2_000, maxCalls: 5, maxOutputBytes: 1_000 });
    await executor.warm();
  });
  afterAll(() => executor.close());

  it('returns the value of an async function body, with top-level await and captured logs', async () => {
    const result = await executor.run({
      code: 'const sum = await tools.math.add(1, 2);\nconsole.log("sum", sum, { n: 1 });\nreturn { sum };',
      primitives,
    });
    expect(result).toEqual({
      ok: true,
      value: { sum: 3 },
      logs: ['sum 3 {"n":1}'],
      calls: [{ index: 0, path: ['math', 'add'], args: [1, 2], status: 'ok', result: 3 }],
    });
  });

  it('gives undefined as null and numbers each call in the order the cell made it', async () => {
    const result = await executor.run({
      code: 'await Promise.all([tools.echo("a"), tools.echo("b"), tools.math.add(2, 2)]);',
      primitives,
    });
    expect(result.ok && result.value).toBe(null);
    expect(result.calls.map((call) => [call.index, call.path.join('.'), call.args])).toEqual([
      [0, 'echo', ['a']],
      [1, 'echo', ['b']],
      [2, 'math.add', [2, 2]],
    ]);
  });

  it('passes the call index, path and a signal to the host callback', async () => {
    const seen: { path: readonly string[]; index: number; aborted: boolean }[] = [];
    const result = await executor.run({
      code: 'await tools.a.b(1); return await tools.a.b(2);',
      primitives: {
        a: {
          b: async ({ path, index, signal, args }) => {
            seen.push({ path, index, aborted: signal.aborted });
            return args[0] as JSONValue;
          },
        },
      },
    });
    expect(result.ok && result.value).toBe(2);
    expect(seen).toEqual([
      { path: ['a', 'b'], index: 0, aborted: false },
      { path: ['a', 'b'], index: 1, aborted: false },
    ]);
  });

  it("keeps its deadline on the worker's own clock: a host whose Date is faked still runs cells", async () => {
    // A test that pins the date (the recorded-provider suite does) once made every cell time out at once.
    vi.useFakeTimers({ toFake: ['Date'] });
    try {
      vi.setSystemTime(new Date('2020-01-01T00:00:00Z'));
      const result = await executor.run({ code: 'return await tools.math.add(2, 3);', primitives });
      expect(result).toMatchObject({ ok: true, value: 5 });
    } finally {
      vi.useRealTimers();
    }
  });

  it('reports a syntax error with the cell line', async () => {
    const result = await executor.run({ code: 'const x = 1;\nreturn (;' });
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.error.kind).toBe('syntax');
    expect(result.error.message).toMatch(/^SyntaxError: .*\n\s+at cell:2/);
  });

  it('reports a thrown error with its message and the cell line', async () => {
    const result = await executor.run({ code: 'console.log("before");\nthrow new RangeError("bad range");' });
    expect(result).toMatchObject({
      ok: false,
      error: { kind: 'thrown', message: expect.stringMatching(/^RangeError: bad range\n\s+at .*cell:2/) },
      logs: ['before'],
    });
  });

  it('turns a primitive failure into a PrimitiveError the cell can catch, or primitive_error when it does not', async () => {
    const failing: Primitives = {
      mail: {
        send: async () => {
          throw new Error('SMTP refused');
        },
      },
    };
    const caught = await executor.run({
      code: 'try { await tools.mail.send("x"); } catch (error) { return error.name + ": " + error.message; }',
      primitives: failing,
    });
    expect(caught.ok && caught.value).toBe('PrimitiveError: tools.mail.send failed: SMTP refused');
    const uncaught = await executor.run({ code: 'await tools.mail.send("x");', primitives: failing });
    expect(uncaught).toMatchObject({
      ok: false,
      error: { kind: 'primitive_error', message: expect.stringContaining('tools.mail.send failed: SMTP refused') },
      calls: [
        {
          index: 0,
          path: ['mail', 'send'],
          args: ['x'],
          status: 'error',
          error: 'tools.mail.send failed: SMTP refused',
        },
      ],
    });
  });

  it('stops a cell at its call limit', async () => {
    const result = await executor.run({ code: 'for (let i = 0; ; i++) await tools.echo(i);', primitives });
    expect(result).toMatchObject({ ok: false, error: { kind: 'too_many_calls' } });
    expect(result.calls).toHaveLength(5);
  });

  it('refuses a call whose arguments pass the size limit, before it reaches the host', async () => {
    await using small = createExecutor({ maxCallBytes: 100 });
    let reached = false;
    const result = await small.run({
      code: 'try { await tools.big.send("x".repeat(200)); } catch (error) { return error.name + ": " + error.message; }',
      primitives: {
        big: {
          send: async () => {
            reached = true;
            return null;
          },
        },
      },
    });
    expect(result.ok && result.value).toBe(
      'TypeError: tools.big.send: its arguments are at least 204 bytes as JSON, more than the limit of 100',
    );
    expect(reached).toBe(false);
  });

  it('accepts a per-cell call limit', async () => {
    const result = await executor.run({ code: 'await tools.echo(1); await tools.echo(2);', primitives, maxCalls: 1 });
    expect(result).toMatchObject({ ok: false, error: { kind: 'too_many_calls' } });
  });

  it('refuses a value over the output limit, counting the logs with it', async () => {
    const value = await executor.run({ code: 'return "x".repeat(2000);' });
    expect(value).toMatchObject({ ok: false, error: { kind: 'output_too_large' } });
    const logs = await executor.run({ code: 'for (let i = 0; i < 100; i++) console.log("y".repeat(50));' });
    expect(logs).toMatchObject({ ok: false, error: { kind: 'output_too_large' } });
    expect(logs.logs.join('\n').length).toBeLessThanOrEqual(1_000);
    const both = await executor.run({ code: 'console.log("z".repeat(600)); return "w".repeat(600);' });
    expect(both).toMatchObject({ ok: false, error: { kind: 'output_too_large' } });
  });

  it('refuses a cell value that is not JSON, saying where', async () => {
    const result = await executor.run({ code: 'return { when: new Date(0) };' });
    expect(result).toMatchObject({
      ok: false,
      error: { kind: 'thrown', message: expect.stringContaining('non-plain object at .when') },
    });
    const nan = await executor.run({ code: 'return [1, NaN];' });
    expect(nan).toMatchObject({ ok: false, error: { message: expect.stringContaining('NaN at [1]') } });
  });

  it('reports a cell that waits on a promise nothing can settle instead of hanging', async () => {
    const result = await executor.run({ code: 'await new Promise(() => {});' });
    expect(result).toMatchObject({
      ok: false,
      error: { kind: 'thrown', message: expect.stringContaining('nothing can settle') },
    });
  });

  it('stops a cell when its signal aborts, and runs the next cell', async () => {
    const controller = new AbortController();
    let started!: () => void;
    const callStarted = new Promise<void>((resolve) => {
      started = resolve;
    });
    const running = executor.run({
      code: 'await tools.wait();',
      signal: controller.signal,
      primitives: {
        wait: ({ signal }) =>
          new Promise((resolve) => {
            started();
            signal.addEventListener('abort', () => resolve(null), { once: true });
          }),
      },
    });
    await callStarted;
    controller.abort();
    expect(await running).toMatchObject({
      ok: false,
      error: { kind: 'aborted' },
      calls: [{ status: 'unfinished' }],
    });
    expect(await executor.run({ code: 'return 7;' })).toMatchObject({ ok: true, value: 7 });
  });

  it('ends a cell whose primitive outlives the deadline, aborting the primitive and marking the call unfinished', async () => {
    let callSignal: AbortSignal | undefined;
    const result = await executor.run({
      code: 'return await tools.slow();',
      timeoutMs: 300,
      primitives: {
        slow: ({ signal }) => {
          callSignal = signal;
          return new Promise((resolve) => signal.addEventListener('abort', () => resolve('too late'), { once: true }));
        },
      },
    });
    expect(result).toMatchObject({
      ok: false,
      error: { kind: 'timeout' },
      calls: [{ index: 0, path: ['slow'], args: [], status: 'unfinished' }],
    });
    expect(callSignal?.aborted).toBe(true);
    expect(await executor.run({ code: 'return 8;' })).toMatchObject({ ok: true, value: 8 });
  });

  it('ends a cell aborted while it waits for a worker without running it, and the line moves on', async () => {
    await using single = createExecutor({ maxWorkers: 1 });
    let release!: () => void;
    const held = new Promise<JSONValue>((resolve) => {
      release = () => resolve('held');
    });
    let entered!: () => void;
    const holding = new Promise<void>((resolve) => {
      entered = resolve;
    });
    const first = single.run({
      code: 'return await tools.hold();',
      primitives: {
        hold: () => {
          entered();
          return held;
        },
      },
    });
    await holding;
    const controller = new AbortController();
    let ran = false;
    const waitingCell = single.run({
      code: 'await tools.mark();',
      signal: controller.signal,
      primitives: {
        mark: async () => {
          ran = true;
          return null;
        },
      },
    });
    const third = single.run({ code: 'return 3;' });
    controller.abort();
    expect(await waitingCell).toMatchObject({
      ok: false,
      error: { kind: 'aborted', message: 'the cell was aborted before it started' },
    });
    release();
    expect(await first).toMatchObject({ ok: true, value: 'held' });
    expect(await third).toMatchObject({ ok: true, value: 3 });
    expect(ran).toBe(false);
  });

  it('returns internal for unusable primitive names instead of throwing', async () => {
    const result = await executor.run({ code: 'return 1;', primitives: { 'bad-name': async () => null } });
    expect(result).toMatchObject({
      ok: false,
      error: { kind: 'internal', message: expect.stringContaining('bad-name') },
    });
  });

  it('keeps a cell running on another worker untouched when one cell is terminated at its deadline', async () => {
    let release!: () => void;
    const released = new Promise<JSONValue>((resolve) => {
      release = () => resolve('released');
    });
    let entered!: () => void;
    const waiting = new Promise<void>((resolve) => {
      entered = resolve;
    });
    const patient = executor.run({
      code: 'const answer = await tools.hold();\nreturn answer + " after " + (await tools.math.add(1, 1));',
      primitives: {
        ...primitives,
        hold: () => {
          entered();
          return released;
        },
      },
    });
    await waiting;
    const runaway = await executor.run({
      code: 'const items = Array.from({ length: 300000 }, (_, i) => "k" + i);\nfor (;;) items.sort().reverse();',
      timeoutMs: 300,
    });
    expect(runaway).toMatchObject({ ok: false, error: { kind: 'timeout' } });
    release();
    expect(await patient).toMatchObject({ ok: true, value: 'released after 2' });
  });

  it('runs cells concurrently up to its worker count and queues the rest', async () => {
    const results = await Promise.all(
      Array.from({ length: 6 }, (_unused, index) =>
        executor.run({ code: `return await tools.math.add(${index}, 1);`, primitives }),
      ),
    );
    expect(results.map((result) => result.ok && result.value)).toEqual([1, 2, 3, 4, 5, 6]);
  });
});

describe('createExecutor options', () => {
  it('refuses a limit that is not a positive integer', () => {
    expect(() => createExecutor({ timeoutMs: 0 })).toThrow('Expected `timeoutMs` to be a positive integer, got `0`');
  });

  it('says the executor is closed after close', async () => {
    const executor = createExecutor();
    await executor.close();
    await executor.close();
    expect(await executor.run({ code: 'return 1;' })).toMatchObject({
      ok: false,
      error: { kind: 'internal', message: 'the executor is closed' },
    });
  });

  it('logs an escape attempt at WARN with what it tried, and still answers the cell', async () => {
    const lines: { level: number; msg: string; escapeSignals?: string[] }[] = [];
    const logger = pino(
      { level: 'info' },
      new Writable({
        write(chunk: Buffer, _encoding, callback) {
          lines.push(JSON.parse(chunk.toString()) as (typeof lines)[number]);
          callback();
        },
      }),
    );
    await using executor = createExecutor({ logger });
    const result = await executor.run({ code: 'return typeof process + typeof require;' });
    expect(result).toMatchObject({ ok: true, value: 'undefinedundefined' });
    await expect
      .poll(() => lines, { timeout: 5_000 })
      .toContainEqual(expect.objectContaining({ level: 40, escapeSignals: ['process'] }));
    const quiet = await executor.run({ code: 'return "process the inbox";' });
    expect(quiet.ok).toBe(true);
    expect(lines).toHaveLength(1);
  });
});
