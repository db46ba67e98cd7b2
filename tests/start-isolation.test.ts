// Issue 30, item 8: no handler may take the installation down. Under `assistant start`, a worker that a handler
// crashes (an uncaught error thrown from a timer) or wedges (an endless synchronous loop, which the watchdog kills) is
// started again with backoff while the server keeps answering; /health says the worker restarted and why; and the
// task that took its worker down twice is failed as poison instead of being run a third time.
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import * as z from 'zod';
import { fetchWithToken, readApiToken } from './helpers/api-token.ts';
import { freePort } from './helpers/free-port.ts';
import { cliMain, type NodeProcess, runCli, startNode } from './helpers/node-process.ts';
import { type TempDir, tempDir } from './helpers/temp-dir.ts';
import { waitUntil } from './helpers/wait-until.ts';

/** How often the /health probe asks while a test runs. */
const healthProbeIntervalMs = 100;

const processesSchema = z.object({
  processes: z.array(
    z.object({
      name: z.string(),
      running: z.boolean(),
      restarts: z.number(),
      last_restart: z.object({ at: z.string(), reason: z.string() }).optional(),
    }),
  ),
});

const shownTask = z.object({
  state: z.string(),
  task: z.looseObject({
    attempts: z.number(),
    error: z.looseObject({ type: z.string(), message: z.string() }).optional(),
    history: z.array(z.looseObject({ attempt: z.number(), error: z.looseObject({ type: z.string() }) })),
  }),
});

interface Installation extends AsyncDisposable {
  start: NodeProcess;
  api: string;
  fetch: typeof fetch;
  serverPid: number;
  env: Record<string, string>;
  /** Every /health answer that was not 200 while the test ran (polled every 100 ms). */
  healthFailures: string[];
  /** How many times the handler started, from the lines it appends to runs.log. */
  runs(): Promise<number>;
}

/**
 * `assistant start` with one custom integration, `hazard`, whose `hazard.run` handler is `handlerBody` (it appends
 * a line to runs.log first), and a `hazard.run` task enqueued before the start.
 */
async function startWithHazard(dir: TempDir, handlerBody: string): Promise<Installation & { taskId: string }> {
  const port = await freePort();
  const config = await dir.write(
    'config.yaml',
    `data_dir: ./data
integration_dirs: [./my-integrations]
server: {host: 127.0.0.1, port: ${port}}
worker: {shutdown_grace: 1s}
queue: {lease: 2s, claim_grace: 200ms}
`,
  );
  await dir.write(
    'my-integrations/hazard/manifest.yaml',
    'domain: hazard\ntasks:\n  run: {handler: ./src/run.ts#run}\n',
  );
  const runsFile = path.join(dir.path, 'runs.log');
  await dir.write(
    'my-integrations/hazard/src/run.ts',
    [
      "import { appendFileSync } from 'node:fs';",
      'export async function run(context: { task: { attempts: number } }) {',
      `  appendFileSync(${JSON.stringify(runsFile)}, \`attempt \${context.task.attempts}\\n\`);`,
      handlerBody,
      '}',
      '',
    ].join('\n'),
  );
  const env = { ASSISTANT_CONFIG: config };
  const enqueued = await runCli(['enqueue', 'hazard.run'], { env, cwd: dir.path });
  expect(enqueued.code).toBe(0);
  const taskId = enqueued.stdout.trim();

  const start = startNode({ args: [cliMain, 'start', '--config', config], cwd: dir.path });
  const pids = new Set<number>();
  const healthFailures: string[] = [];
  let polling = true;
  let poller: Promise<void> = Promise.resolve();
  const dispose = async () => {
    polling = false;
    await poller;
    if (start.child.exitCode === null && start.child.signalCode === null) {
      // A test that failed half-way: leave nothing running (a worker in a synchronous loop spins for ten minutes).
      // Once `start` has exited it has reaped its children, whose pids may be someone else's by now: only here.
      for (const match of start.stdout().matchAll(/^\[assistant\] (?:server|worker) started \(pid (\d+)\)$/gm)) {
        pids.add(Number(match[1]));
      }
      for (const pid of pids) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          // Gone already.
        }
      }
      start.child.kill('SIGKILL');
    }
    await start.exited;
  };
  try {
    const serverPid = Number(
      (await start.waitForOutput(/^\[assistant\] server started \(pid (\d+)\)$/m, { timeoutMs: 60_000 }))[1],
    );
    pids.add(serverPid);
    await start.waitForOutput(/^\[server\] .*listening on http:\/\/127\.0\.0\.1:\d+/m, { timeoutMs: 60_000 });
    const api = `http://127.0.0.1:${port}`;
    const fetchWith = fetchWithToken(await readApiToken(path.join(dir.path, 'data')));
    poller = (async () => {
      while (polling) {
        try {
          const response = await fetch(`${api}/health`);
          if (response.status !== 200) healthFailures.push(`status ${response.status}`);
          await response.arrayBuffer();
        } catch (error) {
          healthFailures.push((error as Error).message);
        }
        // A probe that runs for the whole test (it proves /health never failed), not a wait for a condition.
        await delay(healthProbeIntervalMs);
      }
    })();
    return {
      start,
      api,
      fetch: fetchWith,
      serverPid,
      env,
      taskId,
      healthFailures,
      runs: async () => (await readFile(runsFile, 'utf8').catch(() => '')).split('\n').filter(Boolean).length,
      [Symbol.asyncDispose]: dispose,
    };
  } catch (error) {
    await dispose();
    throw error;
  }
}

/** Waits for the task to be failed, through the API, and returns it. */
async function failedTask(installation: Installation, id: string, timeoutMs: number) {
  return waitUntil(
    async () => {
      const response = await installation.fetch(`${installation.api}/api/tasks/${id}`);
      if (!response.ok) return undefined;
      const body = (await response.json()) as { state?: string };
      return body.state === 'failed' ? body : undefined;
    },
    { what: `task ${id} to be failed`, timeoutMs },
  );
}

async function processes(installation: Installation) {
  const response = await installation.fetch(`${installation.api}/health`);
  expect(response.status).toBe(200);
  return processesSchema.parse(await response.json()).processes;
}

/** Stops `assistant start` as a service manager would, and checks it stopped cleanly. */
async function stop(installation: Installation) {
  installation.start.child.kill('SIGTERM');
  const run = await installation.start.exited;
  expect(run.code).toBe(0);
  return run;
}

describe('assistant start isolation', () => {
  it('starts a worker a handler crashed again with backoff, keeps the server, and fails the task as poison after its second crash', {
    timeout: 120_000,
  }, async () => {
    await using dir = await tempDir();
    // An error thrown from a timer: nothing in the handler's promise catches it, so Node ends the worker (exit 1).
    await using installation = await startWithHazard(
      dir,
      "  setTimeout(() => { throw new Error('boom from the hazard handler'); }, 0);\n  return new Promise(() => {});",
    );
    const task = await failedTask(installation, installation.taskId, 90_000);
    expect(task).toMatchObject({
      state: 'failed',
      attempts: 2,
      error: { type: 'PoisonTask', message: 'poison: its worker died while running it 2 times' },
    });
    expect(await installation.runs()).toBe(2);

    const output = installation.start.stdout();
    expect(output).toMatch(
      /^\[assistant\] worker \(pid \d+\) exited with code 1: Error: boom from the hazard handler; starting it again in 1 s \(restart 1\)$/m,
    );
    expect(output).toMatch(/; starting it again in 2 s \(restart 2\)$/m);
    // The server was never stopped or started again: one start line, the same pid answering.
    expect(output.match(/^\[assistant\] server started/gm)).toHaveLength(1);
    process.kill(installation.serverPid, 0);
    const third = await waitUntil(
      async () =>
        (await processes(installation)).find(
          (child) => child.name === 'worker' && child.running && child.restarts === 2,
        ),
      { what: 'the third worker to be running', timeoutMs: 60_000 },
    );
    expect(third).toMatchObject({
      restarts: 2,
      last_restart: { reason: 'exited with code 1: Error: boom from the hazard handler' },
    });
    expect((await processes(installation)).find((child) => child.name === 'server')).toMatchObject({
      running: true,
      restarts: 0,
    });
    expect(installation.healthFailures).toEqual([]);
    // The third worker does not run the poisoned task, and works: a new task runs.
    const posted = await installation.fetch(`${installation.api}/api/tasks`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ type: 'system.echo', payload: { after: 'poison' } }),
    });
    const { id } = z.object({ id: z.string() }).parse(await posted.json());
    await waitUntil(
      async () => {
        const body = (await (await installation.fetch(`${installation.api}/api/tasks/${id}`)).json()) as {
          state?: string;
        };
        return body.state === 'done';
      },
      { what: 'the echo task to be done', timeoutMs: 60_000 },
    );
    expect(await installation.runs()).toBe(2);
    await stop(installation);
    const shown = await runCli(['task', 'show', installation.taskId, '--json'], {
      env: installation.env,
      cwd: dir.path,
    });
    expect(shownTask.parse(JSON.parse(shown.stdout)).task.history.map((attempt) => attempt.error.type)).toEqual([
      'WorkerDied',
      'WorkerDied',
    ]);
  });

  it('kills a worker stuck in a synchronous loop, starts it again, and fails the task as poison after the second time', {
    timeout: 150_000,
  }, async () => {
    await using dir = await tempDir();
    // Blocks the event loop for ten minutes, as a catastrophic regular expression on a mail's text would.
    await using installation = await startWithHazard(
      dir,
      '  for (const end = Date.now() + 600_000; Date.now() < end; );\n  return {};',
    );
    // The watchdog allows a whole lease of silence, never less than 10 s, twice.
    const task = await failedTask(installation, installation.taskId, 120_000);
    expect(task).toMatchObject({
      attempts: 2,
      error: { type: 'PoisonTask', message: 'poison: its worker died while running it 2 times' },
    });
    expect(await installation.runs()).toBe(2);
    const output = installation.start.stdout();
    expect(output).toMatch(
      /^\[assistant\] worker \(pid \d+\) has not answered for \d+ s: its event loop is blocked or it hangs while exiting; killing it$/m,
    );
    expect(output).toMatch(
      /^\[assistant\] worker \(pid \d+\) was killed by SIGKILL after its event loop stopped answering for \d+ s; starting it again in 1 s \(restart 1\)$/m,
    );
    const worker = await waitUntil(
      async () =>
        (await processes(installation)).find(
          (child) => child.name === 'worker' && child.running && child.restarts === 2,
        ),
      { what: 'the third worker to be running', timeoutMs: 60_000 },
    );
    expect(worker).toMatchObject({
      restarts: 2,
      last_restart: { reason: expect.stringMatching(/^was killed by SIGKILL after its event loop stopped answering/) },
    });
    expect(output.match(/^\[assistant\] server started/gm)).toHaveLength(1);
    expect(installation.healthFailures).toEqual([]);
    await stop(installation);
  });
});
