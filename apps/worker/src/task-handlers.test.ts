import { type Task, UnrecoverableError } from '@assistant/queue';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { builtinHandlers, type TaskContext } from './task-handlers.ts';

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

function context(payload: TaskContext['payload'], signal = new AbortController().signal): TaskContext {
  return { task: { ...task, payload }, payload, signal, logger: pino({ level: 'silent' }), human: async () => {} };
}

describe('builtin handlers', () => {
  const handlers = builtinHandlers();

  it('system.echo returns its payload and writes a human log line', async () => {
    const lines: string[] = [];
    const echo = handlers.get('system.echo');
    const result = await echo?.({ ...context({ a: [1, 'two'] }), human: async (message) => void lines.push(message) });
    expect(result).toEqual({ a: [1, 'two'] });
    expect(lines).toEqual([`echoed task ${task.id}`]);
  });

  it('system.sleep waits, and stops when its signal aborts', async () => {
    const sleep = handlers.get('system.sleep');
    expect(await sleep?.(context({ ms: 5 }))).toEqual({ sleptMs: 5 });
    const controller = new AbortController();
    const running = sleep?.(context({ ms: 600_000 }, controller.signal));
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
    const sleep = handlers.get('system.sleep');
    await expect(sleep?.(context({ seconds: 5 }))).rejects.toThrow(UnrecoverableError);
    await expect(sleep?.(context({ seconds: 5 }))).rejects.toThrow(
      /^system\.sleep expects a payload like \{"ms": 1000\}/,
    );
    await expect(sleep?.(context({ ms: -1 }))).rejects.toThrow(/payload\.ms: /);
    await expect(sleep?.(context(null))).rejects.toThrow(UnrecoverableError);
  });
});
