// `assistant start`'s watchdog: a worker whose event loop stops turning (here a handler's endless synchronous loop)
// writes no more beats on its watchdog pipe; the supervisor kills it and starts it again, and the task it held runs
// again in the next worker instead of waiting in active/ behind a process that will never exit.
import { describe, expect, it } from 'vitest';
import * as z from 'zod';
import { freePort } from './helpers/free-port.ts';
import { cliMain, runCli, startNode } from './helpers/node-process.ts';
import { tempDir } from './helpers/temp-dir.ts';

const shown = z.object({
  state: z.string(),
  task: z.looseObject({
    result: z.unknown().optional(),
    history: z.array(z.looseObject({ attempt: z.number(), error: z.looseObject({ type: z.string() }).optional() })),
  }),
});

describe('assistant start watchdog', () => {
  it('kills a worker whose event loop is blocked, starts it again, and the next worker runs its task', {
    timeout: 150_000,
  }, async () => {
    await using dir = await tempDir();
    const port = await freePort();
    // The watchdog allows a whole lease of silence, never less than 10 s: the shortest wait this test can have.
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
      'my-integrations/blocker/manifest.yaml',
      'domain: blocker\ntasks:\n  run: {handler: ./src/run.ts#run}\n',
    );
    await dir.write(
      'my-integrations/blocker/src/run.ts',
      [
        '// Blocks the event loop on the first attempt, as an endless synchronous loop in a handler would.',
        'export async function run(context: { task: { attempts: number } }) {',
        '  if (context.task.attempts === 1) for (const end = Date.now() + 600_000; Date.now() < end; );',
        '  return { attempt: context.task.attempts };',
        '}',
        '',
      ].join('\n'),
    );
    const env = { ASSISTANT_CONFIG: config };
    const cwd = dir.path;
    const enqueued = await runCli(['enqueue', 'blocker.run'], { env, cwd });
    expect(enqueued.code).toBe(0);
    const id = enqueued.stdout.trim();

    // --verbose: the test follows the task by its own lines, which the default level leaves out.
    const start = startNode({ args: [cliMain, 'start', '--config', config, '--verbose'], cwd });
    try {
      const workerPid = Number(
        (await start.waitForOutput(/^\[assistant\] worker started \(pid (\d+)\)$/m, { timeoutMs: 60_000 }))[1],
      );
      await start.waitForOutput(/task \S+ \(blocker\.run\) started/, { timeoutMs: 60_000 });
      // Killed, and started again while `start` (and its server) keep running.
      await start.waitForOutput(
        new RegExp(
          `^\\[assistant\\] worker \\(pid ${workerPid}\\) has not answered for \\d+ s: its event loop is blocked`,
          'm',
        ),
        { timeoutMs: 60_000 },
      );
      await start.waitForOutput(
        new RegExp(
          `^\\[assistant\\] worker \\(pid ${workerPid}\\) was killed by SIGKILL after its event loop stopped answering for \\d+ s; starting it again in 1 s \\(restart 1\\)$`,
          'm',
        ),
      );
      // The next worker returns the dead one's task to pending with its attempt counted, and runs it.
      await start.waitForOutput(/task \S+ \(blocker\.run\) done/, { timeoutMs: 60_000 });
    } finally {
      start.child.kill('SIGTERM');
    }
    const run = await start.exited;
    expect(run.code).toBe(0);
    const task = await runCli(['task', 'show', id, '--json'], { env, cwd });
    expect(shown.parse(JSON.parse(task.stdout))).toMatchObject({
      state: 'done',
      task: { result: { attempt: 2 }, history: [{ attempt: 1, error: { type: 'WorkerDied' } }] },
    });
  });
});
