import { describe, expect, it } from 'vitest';
import * as z from 'zod';
import { freePort } from './helpers/free-port.ts';
import { cliMain, type NodeProcess, startNode } from './helpers/node-process.ts';
import { type TempDir, tempDir } from './helpers/temp-dir.ts';

const health = z.object({
  status: z.literal('ok'),
  version: z.string(),
  queue: z.object({ pending: z.number(), active: z.number(), done: z.number(), failed: z.number() }),
});

interface RunningAssistant extends AsyncDisposable {
  port: number;
  start: NodeProcess;
  pids: { server: number; worker: number };
}

/** `assistant start` on a fresh data dir and a free port, resolved once both children say they are up. */
async function startAssistant(dir: TempDir): Promise<RunningAssistant> {
  const port = await freePort();
  const config = await dir.write(
    'config.yaml',
    `data_dir: ./data\nserver:\n  host: 127.0.0.1\n  port: ${port}\nworker:\n  shutdown_grace: 5s\n`,
  );
  const start = startNode({ args: [cliMain, 'start', '--config', config] });
  const pids = { server: 0, worker: 0 };
  const dispose = async () => {
    // Only finds `start` running when a test failed half-way: leave nothing running behind it. Once `start` has
    // exited it has reaped its children, and their pids may already belong to someone else.
    if (start.child.exitCode === null && start.child.signalCode === null) {
      for (const pid of [pids.server, pids.worker]) if (pid > 0 && isRunning(pid)) process.kill(pid, 'SIGKILL');
      start.child.kill('SIGKILL');
    }
    await start.exited;
  };
  try {
    pids.server = Number((await start.waitForOutput(/^\[assistant\] server started \(pid (\d+)\)$/m))[1]);
    pids.worker = Number((await start.waitForOutput(/^\[assistant\] worker started \(pid (\d+)\)$/m))[1]);
    await start.waitForOutput(/^\[server\] .*listening on http:\/\/127\.0\.0\.1:\d+/m);
    await start.waitForOutput(/^\[worker\] .*worker ready/m);
  } catch (error) {
    await dispose();
    throw error;
  }
  return { port, start, pids, [Symbol.asyncDispose]: dispose };
}

function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe('assistant start', () => {
  it('runs server and worker with prefixed output and stops both on SIGTERM', async () => {
    await using dir = await tempDir();
    await using assistant = await startAssistant(dir);
    const { port, start, pids } = assistant;
    const response = await fetch(`http://127.0.0.1:${port}/health`);
    expect(response.status).toBe(200);
    expect(health.parse(await response.json()).status).toBe('ok');

    start.child.kill('SIGTERM');
    const run = await start.exited;
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    for (const line of run.stdout.trimEnd().split('\n')) expect(line).toMatch(/^\[(server|worker|assistant)\] /);
    expect(run.stdout).toMatch(/^\[assistant\] stopped$/m);
    expect(isRunning(pids.server)).toBe(false);
    expect(isRunning(pids.worker)).toBe(false);
  });

  it('stops the server and exits non-zero naming the worker when the worker dies', async () => {
    await using dir = await tempDir();
    await using assistant = await startAssistant(dir);
    const { start, pids } = assistant;
    process.kill(pids.worker, 'SIGKILL');
    const run = await start.exited;
    expect(run.code).toBe(1);
    expect(run.stderr).toContain(`assistant: the worker (pid ${pids.worker}) was killed by SIGKILL\n`);
    expect(isRunning(pids.server)).toBe(false);
  });
});
