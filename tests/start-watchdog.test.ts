// `assistant start`'s watchdog: a worker whose event loop stops turning (here a handler's endless synchronous loop)
// writes no more beats on its watchdog pipe; the supervisor kills it, ends, and the task it held runs again in the
// next worker instead of waiting in active/ behind a process that will never exit.
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
  it('kills a worker whose event loop is blocked, exits naming it, and the next worker runs its task', {
    timeout: 90_000,
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

    const start = startNode({ args: [cliMain, 'start', '--config', config], cwd });
    const workerPid = Number((await start.waitForOutput(/^\[assistant\] worker started \(pid (\d+)\)$/m))[1]);
    await start.waitForOutput(/task \S+ \(blocker\.run\) started/, { timeoutMs: 30_000 });
    let late: NodeJS.Timeout | undefined;
    const run = await Promise.race([
      start.exited,
      new Promise<never>((_, reject) => {
        late = setTimeout(() => {
          // `start` should have ended by now; leave no blocked worker spinning behind the failed test. (Once `start`
          // has exited it has reaped the worker, whose pid may belong to someone else: only killed here.)
          start.child.kill('SIGKILL');
          process.kill(workerPid, 'SIGKILL');
          reject(new Error(`assistant start still running:\n${start.stdout()}`));
        }, 60_000);
      }),
    ]).finally(() => clearTimeout(late));
    expect(run.stdout).toMatch(
      new RegExp(
        `^\\[assistant\\] worker \\(pid ${workerPid}\\) has not answered for \\d+ s: its event loop is blocked`,
        'm',
      ),
    );
    expect(run.code).toBe(1);
    expect(run.stderr).toContain(`assistant: the worker (pid ${workerPid}) was killed by SIGKILL\n`);

    // The dead worker's task goes back to pending with its attempt counted, and runs.
    const again = await runCli(['work', '--exit-when-idle'], { env, cwd });
    expect(again.code).toBe(0);
    const task = await runCli(['task', 'show', id, '--json'], { env, cwd });
    expect(shown.parse(JSON.parse(task.stdout))).toMatchObject({
      state: 'done',
      task: { result: { attempt: 2 }, history: [{ attempt: 1, error: { type: 'WorkerDied' } }] },
    });
  });
});
