import { stat } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import * as z from 'zod';
import { fetchWithToken, readApiToken } from './helpers/api-token.ts';
import { freePort } from './helpers/free-port.ts';
import { cliMain, type NodeProcess, repoRoot, startNode } from './helpers/node-process.ts';
import { type TempDir, tempDir } from './helpers/temp-dir.ts';
import { waitUntil } from './helpers/wait-until.ts';

const health = z.object({
  status: z.literal('ok'),
  version: z.string(),
  queue: z.object({ pending: z.number(), active: z.number(), done: z.number(), failed: z.number() }),
});

interface RunningAssistant extends AsyncDisposable {
  port: number;
  /** `fetch` with the API token the server created in data/api-token. */
  fetch: typeof fetch;
  start: NodeProcess;
  pids: { server: number; worker: number };
}

/** `assistant start` on a fresh data dir and a free port, resolved once both children say they are up. */
async function startAssistant(dir: TempDir, extraConfig = ''): Promise<RunningAssistant> {
  const port = await freePort();
  const config = await dir.write(
    'config.yaml',
    `data_dir: ./data\nserver:\n  host: 127.0.0.1\n  port: ${port}\nworker:\n  shutdown_grace: 5s\n${extraConfig}`,
  );
  const start = startNode({ args: [cliMain, 'start', '--config', config] });
  const pids = { server: 0, worker: 0 };
  let token = '';
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
    token = await readApiToken(`${dir.path}/data`);
  } catch (error) {
    await dispose();
    throw error;
  }
  return { port, fetch: fetchWithToken(token), start, pids, [Symbol.asyncDispose]: dispose };
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
    // Everything else needs the token the server created on its first start, readable only by its owner.
    expect((await fetch(`http://127.0.0.1:${port}/api/tasks`)).status).toBe(401);
    expect((await assistant.fetch(`http://127.0.0.1:${port}/api/tasks`)).status).toBe(200);
    expect((await stat(`${dir.path}/data/api-token`)).mode & 0o777).toBe(0o600);

    start.child.kill('SIGTERM');
    const run = await start.exited;
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    for (const line of run.stdout.trimEnd().split('\n')) expect(line).toMatch(/^\[(server|worker|assistant)\] /);
    expect(run.stdout).toMatch(/^\[assistant\] stopped$/m);
    expect(isRunning(pids.server)).toBe(false);
    expect(isRunning(pids.worker)).toBe(false);
  });

  it('starts a worker or a server that was killed again, keeps the other running, and /health says so', {
    timeout: 150_000,
  }, async () => {
    await using dir = await tempDir();
    await using assistant = await startAssistant(dir);
    const { start, pids, port } = assistant;
    const health = async () =>
      z
        .object({
          processes: z.array(z.looseObject({ name: z.string(), running: z.boolean(), restarts: z.number() })),
        })
        .parse(await (await assistant.fetch(`http://127.0.0.1:${port}/health`)).json());
    // Children started after the first two are not in `pids`: a failed test kills them here.
    await using _children = {
      async [Symbol.asyncDispose]() {
        if (start.child.exitCode !== null || start.child.signalCode !== null) return;
        for (const match of start.stdout().matchAll(/^\[assistant\] (?:server|worker) started \(pid (\d+)\)$/gm)) {
          const pid = Number(match[1]);
          if (isRunning(pid)) process.kill(pid, 'SIGKILL');
        }
      },
    };
    process.kill(pids.worker, 'SIGKILL');
    await start.waitForOutput(
      new RegExp(
        `^\\[assistant\\] worker \\(pid ${pids.worker}\\) was killed by SIGKILL; starting it again in 1 s \\(restart 1\\)$`,
        'm',
      ),
    );
    const next = Number(
      (
        await start.waitForOutput(
          /^\[assistant\] worker started \(pid \d+\)$[\s\S]*^\[assistant\] worker started \(pid (\d+)\)$/m,
        )
      )[1],
    );
    const restarted = await waitUntil(
      async () => {
        const body = await health();
        const worker = body.processes.find((child) => child.name === 'worker');
        return worker?.running && worker.restarts === 1 ? body : undefined;
      },
      { what: '/health to show the new worker running' },
    );
    expect(restarted.processes).toEqual([
      expect.objectContaining({ name: 'server', running: true, restarts: 0 }),
      expect.objectContaining({
        name: 'worker',
        running: true,
        restarts: 1,
        last_restart: expect.objectContaining({ reason: 'was killed by SIGKILL', code: null, signal: 'SIGKILL' }),
      }),
    ]);
    expect(isRunning(pids.server)).toBe(true);

    // The server too: started again while the worker keeps running, and answering again.
    process.kill(pids.server, 'SIGKILL');
    await start.waitForOutput(
      new RegExp(
        `^\\[assistant\\] server \\(pid ${pids.server}\\) was killed by SIGKILL; starting it again in 1 s \\(restart 1\\)$`,
        'm',
      ),
    );
    const serverAgain = await waitUntil(
      async () => {
        const body = await health().catch(() => undefined);
        const server = body?.processes.find((child) => child.name === 'server');
        return server?.running && server.restarts === 1 ? body : undefined;
      },
      { what: '/health to answer from the new server', timeoutMs: 60_000 },
    );
    expect(serverAgain?.processes.find((child) => child.name === 'worker')).toMatchObject({
      running: true,
      restarts: 1,
    });
    expect(isRunning(next)).toBe(true);

    start.child.kill('SIGTERM');
    const run = await start.exited;
    expect(run.code).toBe(0);
    expect(run.stdout.match(/^\[assistant\] worker started/gm)).toHaveLength(2);
    expect(run.stdout.match(/^\[assistant\] server started/gm)).toHaveLength(2);
    expect(isRunning(next)).toBe(false);
  });

  it('runs a task enqueued over REST and a trigger of an integration, and reports them in /health and /metrics', async () => {
    await using dir = await tempDir();
    const greeter = `${repoRoot}/tests/fixtures/integrations/custom/greeter`;
    await using assistant = await startAssistant(
      dir,
      `integration_dirs: [${JSON.stringify(greeter)}]\nintegrations:\n  - {type: greeter, name: friendly, greeting: Hi}\n`,
    );
    const api = `http://127.0.0.1:${assistant.port}`;
    const fetch = assistant.fetch;
    const posted = await fetch(`${api}/api/tasks`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ type: 'system.echo', payload: { hello: 'world' } }),
    });
    expect(posted.status).toBe(201);
    const { id } = z.object({ id: z.string() }).parse(await posted.json());
    expect(await until(fetch, `${api}/api/tasks/${id}`, (task) => task.state === 'done')).toMatchObject({
      id,
      type: 'system.echo',
      state: 'done',
      source: 'api',
      result: { hello: 'world' },
    });

    const triggered = await fetch(`${api}/api/integrations/friendly/people/trigger`, { method: 'POST' });
    expect(triggered.status).toBe(201);
    const trigger = z.object({ id: z.string(), type: z.string() }).parse(await triggered.json());
    expect(trigger.type).toBe('greeter.people.check');
    await until(fetch, `${api}/api/tasks/${trigger.id}`, (task) => task.state === 'done');
    const greeted = await until(
      fetch,
      `${api}/api/tasks?state=done&type=greeter.people.greet`,
      (list) => Array.isArray(list.tasks) && list.tasks.length === 1,
    );
    const greetId = z.object({ tasks: z.array(z.object({ id: z.string() })) }).parse(greeted).tasks[0]?.id;
    expect(await until(fetch, `${api}/api/tasks/${greetId}`, () => true)).toMatchObject({
      result: { text: 'Hi, Ada!' },
    });

    // The builtin system instance's housekeeping schedule is new, so it ran once as the server started.
    const housekeeping = await until(
      fetch,
      `${api}/api/tasks?type=system.housekeeping.run`,
      (list) => Array.isArray(list.tasks) && list.tasks.length === 1,
    );
    const housekeepingId = z.object({ tasks: z.array(z.object({ id: z.string() })) }).parse(housekeeping).tasks[0]?.id;
    expect(await until(fetch, `${api}/api/tasks/${housekeepingId}`, (task) => task.state === 'done')).toMatchObject({
      source: 'scheduler',
      integration: 'system',
    });
    // So does the builtin memory instance's due-task check.
    const dueCheck = await until(
      fetch,
      `${api}/api/tasks?type=memory.due.check`,
      (list) => Array.isArray(list.tasks) && list.tasks.length === 1,
    );
    const dueCheckId = z.object({ tasks: z.array(z.object({ id: z.string() })) }).parse(dueCheck).tasks[0]?.id;
    await until(fetch, `${api}/api/tasks/${dueCheckId}`, (task) => task.state === 'done');
    const healthNow = await until(fetch, `${api}/health`, () => true);
    expect(healthNow).toMatchObject({
      queue: { done: 5, failed: 0 },
      worker: { alive: true, workers: 1 },
    });
    // The greeter instance has no schedule; the system and memory instances have their default ones.
    const schedules = (healthNow as { schedules: { id: string }[] }).schedules;
    expect([...schedules].sort((a, b) => a.id.localeCompare(b.id))).toEqual([
      expect.objectContaining({ id: 'memory', description: 'memory (memory): due', last_fired_at: expect.any(String) }),
      expect.objectContaining({
        id: 'system',
        description: 'system (system): housekeeping',
        last_fired_at: expect.any(String),
      }),
    ]);
    // The worker writes its counters every two seconds.
    const metrics = await untilText(fetch, `${api}/metrics`, (text) => text.includes('outcome="done"} '));
    expect(metrics).toMatch(/^assistant_task_outcomes_total\{type="system\.echo",outcome="done"\} 1$/m);
    expect(metrics).toMatch(/^assistant_workers_alive 1$/m);

    assistant.start.child.kill('SIGTERM');
    expect((await assistant.start.exited).code).toBe(0);
  });
});

/** Polls a JSON endpoint until `done` says yes. */
function until(
  fetch: typeof globalThis.fetch,
  url: string,
  done: (body: Record<string, unknown>) => boolean,
): Promise<Record<string, unknown>> {
  return waitUntil(
    async () => {
      const response = await fetch(url);
      const body = (await response.json()) as Record<string, unknown>;
      return response.ok && done(body) ? body : undefined;
    },
    { what: url },
  );
}

function untilText(fetch: typeof globalThis.fetch, url: string, done: (text: string) => boolean): Promise<string> {
  return waitUntil(
    async () => {
      const text = await (await fetch(url)).text();
      return done(text) ? text : undefined;
    },
    { what: url },
  );
}
