// `assistant start`'s supervisor with real child processes (plain `node -e` programs): a child that crashes is
// started again with a doubling delay while the other keeps running (issue 30, item 8), and one that cannot be
// started at all stops the rest.
import { type RestartEvent, superviseProcesses } from '@assistant/cli';
import { describe, expect, it } from 'vitest';

describe('superviseProcesses', () => {
  it('starts a process that crashes again with a doubling delay, says why, and keeps the other running', {
    timeout: 60_000,
  }, async () => {
    const restarts: RestartEvent[] = [];
    const spawned: string[] = [];
    const controller = new AbortController();
    const output = { text: '', write: (text: string) => (output.text += text) };
    const errors = { text: '', write: (text: string) => (errors.text += text) };
    const result = superviseProcesses({
      processes: [
        // Stays up until told to stop.
        { name: 'steady', command: process.execPath, args: ['-e', 'setInterval(() => {}, 1000)'] },
        {
          name: 'crasher',
          command: process.execPath,
          args: ['-e', "setTimeout(() => { throw new TypeError('boom ' + process.pid); }, 0)"],
        },
      ],
      env: {},
      stdout: output,
      stderr: errors,
      signal: controller.signal,
      graceMs: 5_000,
      restart: { firstDelayMs: 10, maxDelayMs: 40, stableMs: 60_000 },
      onSpawn: (name) => spawned.push(name),
      onRestart: (event) => {
        restarts.push(event);
        if (event.restarts === 4) controller.abort('SIGTERM');
      },
    });
    const { unexpected, exits } = await result;
    expect(unexpected).toBeUndefined();
    expect(restarts.map((event) => [event.exit.name, event.restarts, event.delayMs])).toEqual([
      ['crasher', 1, 10],
      ['crasher', 2, 20],
      ['crasher', 3, 40],
      ['crasher', 4, 40],
    ]);
    for (const event of restarts) {
      expect(event.exit).toMatchObject({ code: 1, signal: null, lastError: `TypeError: boom ${event.exit.pid}` });
    }
    expect(spawned.filter((name) => name === 'steady')).toHaveLength(1);
    expect(spawned.filter((name) => name === 'crasher')).toHaveLength(4);
    // The crasher was waiting to be started again at the stop: only the steady one was stopped.
    expect(exits).toEqual([expect.objectContaining({ name: 'steady', signal: 'SIGTERM' })]);
    expect(errors.text).toMatch(/^\[crasher\] TypeError: boom \d+$/m);
  });

  it('stops everything when a process cannot be started at all', async () => {
    const controller = new AbortController();
    const sink = { write: () => true };
    const { unexpected } = await superviseProcesses({
      processes: [
        { name: 'steady', command: process.execPath, args: ['-e', 'setInterval(() => {}, 1000)'] },
        { name: 'missing', command: '/nonexistent/program', args: [] },
      ],
      env: {},
      stdout: sink,
      stderr: sink,
      signal: controller.signal,
      graceMs: 5_000,
    });
    expect(unexpected).toMatchObject({ name: 'missing', pid: undefined, error: expect.any(Error) });
  });
});
