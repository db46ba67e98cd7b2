import { type HandlerContext, type JsonValue, type Task, UnrecoverableError } from '@assistant/sdk';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { echo } from './echo.ts';
import { sleep } from './sleep.ts';

const task: Task = {
  id: '01m81zbz7e0rvw1d46qzvhsksj',
  type: 'system.echo',
  priority: 5,
  createdAt: '2026-11-22T00:00:00.000Z',
  readyAt: '2026-11-22T00:00:00.000Z',
  source: 'cli',
  payload: null,
  attempts: 1,
  maxAttempts: 3,
  history: [],
};

function context(payload: JsonValue, signal = new AbortController().signal, lines: string[] = []): HandlerContext {
  const logger = pino({ level: 'silent' });
  // Only what these handlers use; the worker's tests cover the real context.
  return {
    task: { ...task, payload },
    payload,
    signal,
    logger,
    log: { human: async (message: string) => void lines.push(message), info() {}, warn() {} },
  } as unknown as HandlerContext;
}

describe('system integration handlers', () => {
  const handlers = new Map([
    ['system.echo', echo],
    ['system.sleep', sleep],
  ]);

  it('system.echo returns its payload and writes a human log line', async () => {
    const lines: string[] = [];
    const result = await handlers.get('system.echo')?.(context({ a: [1, 'two'] }, undefined, lines));
    expect(result).toEqual({ a: [1, 'two'] });
    expect(lines).toEqual([`echoed task ${task.id}`]);
  });

  it('system.sleep waits, and stops when its signal aborts', async () => {
    const sleeping = handlers.get('system.sleep');
    expect(await sleeping?.(context({ ms: 5 }))).toEqual({ sleptMs: 5 });
    const controller = new AbortController();
    const running = sleeping?.(context({ ms: 600_000 }, controller.signal));
    controller.abort(new Error('stop now'));
    await expect(running).rejects.toThrow('stop now');
  });

  it('system.sleep does not start when its signal is already aborted', async () => {
    const controller = new AbortController();
    controller.abort(new Error('too late'));
    await expect(handlers.get('system.sleep')?.(context({ ms: 600_000 }, controller.signal))).rejects.toThrow(
      'too late',
    );
  });

  it('system.sleep fails a payload without a sensible ms for good, naming the field', async () => {
    const sleeping = handlers.get('system.sleep');
    await expect(sleeping?.(context({ seconds: 5 }))).rejects.toThrow(UnrecoverableError);
    await expect(sleeping?.(context({ seconds: 5 }))).rejects.toThrow(
      /^system\.sleep expects a payload like \{"ms": 1000\}/,
    );
    await expect(sleeping?.(context({ ms: -1 }))).rejects.toThrow(/payload\.ms: /);
    await expect(sleeping?.(context(null))).rejects.toThrow(UnrecoverableError);
  });
});
