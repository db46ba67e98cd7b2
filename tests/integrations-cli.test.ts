// Integrations found in a custom folder and in an npm package, triggered and run by real CLI processes.
import { cp, mkdir } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import * as z from 'zod';
import { repoRoot, runCli } from './helpers/node-process.ts';
import { type TempDir, tempDir } from './helpers/temp-dir.ts';

const fixtures = path.join(repoRoot, 'tests/fixtures/integrations');

const config = `data_dir: ./data
integration_dirs: [./my-integrations]
integration_packages: [assistant-integration-weather]
integrations:
  - type: greeter
    name: friendly
    greeting: Hi
    platforms:
      people:
        names: [Ada, Grace]
  - type: greeter
    name: quiet
    enabled: false
  - type: weather
    name: home
    city: Lisbon
`;

/** A config directory with the greeter as a custom folder and the weather integration installed as a package. */
async function setup(): Promise<TempDir> {
  const dir = await tempDir();
  await cp(path.join(fixtures, 'custom/greeter'), path.join(dir.path, 'my-integrations/greeter'), { recursive: true });
  await mkdir(path.join(dir.path, 'node_modules'));
  await cp(
    path.join(fixtures, 'package/assistant-integration-weather'),
    path.join(dir.path, 'node_modules/assistant-integration-weather'),
    { recursive: true },
  );
  await dir.write('config.yaml', config);
  return dir;
}

const cli = (dir: TempDir, args: readonly string[]) => runCli(args, { cwd: dir.path });

const shown = z.object({
  state: z.string(),
  task: z.looseObject({ type: z.string(), result: z.unknown().optional() }),
});

async function show(dir: TempDir, id: string) {
  return shown.parse(JSON.parse((await cli(dir, ['task', 'show', id, '--json'])).stdout));
}

describe('assistant trigger', () => {
  it('runs the entry task of a custom-folder and an npm-package integration, and the stages they enqueue', async () => {
    await using dir = await setup();
    const greeter = await cli(dir, ['trigger', 'friendly', 'people']);
    expect(greeter.stderr).toBe('');
    expect(greeter.code).toBe(0);
    const weather = await cli(dir, ['trigger', 'home', 'forecast', '--json']);
    expect(JSON.parse(weather.stdout)).toMatchObject({ type: 'weather.forecast.fetch', state: 'pending' });

    const work = await cli(dir, ['work', '--exit-when-idle']);
    expect(work.stderr).toBe('');
    expect(work.code).toBe(0);

    expect(await show(dir, greeter.stdout.trim())).toMatchObject({
      state: 'done',
      task: { type: 'greeter.people.check', result: { instance: 'friendly', enqueued: ['enqueued', 'enqueued'] } },
    });
    expect(await show(dir, JSON.parse(weather.stdout).id)).toMatchObject({
      state: 'done',
      task: { result: { city: 'Lisbon', forecast: 'sunny', instance: 'home' } },
    });
    const stats = await cli(dir, ['queue', 'stats', '--json']);
    expect(JSON.parse(stats.stdout)).toMatchObject({ pending: 0, active: 0, done: 4, failed: 0 });
    const log = await cli(dir, ['log']);
    expect(log.stdout).toMatch(/\*\*friendly\/people\*\* greeted Ada/);
    expect(log.stdout).toMatch(/\*\*friendly\/people\*\* greeted Grace/);
  });

  it('refuses unknown instances and platforms and disabled instances, saying what exists', async () => {
    await using dir = await setup();
    const unknown = await cli(dir, ['trigger', 'nobody', 'people']);
    expect(unknown.stderr).toMatch(
      /^assistant: no integration instance `nobody`; configured: friendly, quiet, home, chat, memory, research, system\n/,
    );
    expect(unknown.code).toBe(2);
    const platform = await cli(dir, ['trigger', 'friendly', 'robots']);
    expect(platform.stderr).toMatch(
      /^assistant: the greeter integration has no platform `robots`; it has: people, cards\n/,
    );
    const disabled = await cli(dir, ['trigger', 'quiet', 'people']);
    expect(disabled.stderr).toBe(
      'assistant: instance `quiet` is disabled in config.yaml\nhint: set `enabled: true` in config.yaml first\n',
    );
    expect(disabled.code).toBe(2);
  });

  it('fails to start the worker when a manifest names a handler that does not exist, naming the manifest', async () => {
    await using dir = await setup();
    await dir.write(
      'my-integrations/broken/manifest.yaml',
      'domain: broken\ntasks:\n  run: {handler: ./src/run.ts#run}\n',
    );
    const work = await cli(dir, ['work', '--exit-when-idle']);
    expect(work.stderr).toMatch(
      /^assistant: invalid integration manifest \(1 problem\):\nmy-integrations\/broken\/manifest\.yaml:3:9: tasks\.run\.handler: \.\/src\/run\.ts does not exist\n/,
    );
    expect(work.code).toBe(2);
  });

  it('does not lose a task whose handler ends the worker process: the next worker runs it again', async () => {
    await using dir = await setup();
    // Recovery leaves a fresh claim alone for `claim_grace`; a short one keeps the test quick.
    await dir.write('config.yaml', `${config}queue:\n  claim_grace: 200ms\n`);
    await dir.write(
      'my-integrations/crasher/manifest.yaml',
      'domain: crasher\ntasks:\n  run: {handler: ./src/crash.ts#run}\n',
    );
    await dir.write(
      'my-integrations/crasher/src/crash.ts',
      [
        // SIGKILL rather than process.exit(): Node's own exit path can, rarely, hang in V8's shutdown (decision 0016),
        // and this test is about what the next worker does, not about how Node exits.
        '// Ends the whole worker process on the first attempt, as a native crash or the OOM killer would.',
        'export async function run(context: { task: { attempts: number } }) {',
        "  if (context.task.attempts === 1) process.kill(process.pid, 'SIGKILL');",
        '  return { attempt: context.task.attempts };',
        '}',
        '',
      ].join('\n'),
    );
    const enqueued = await cli(dir, ['enqueue', 'crasher.run']);
    const id = enqueued.stdout.trim();
    const crashed = await cli(dir, ['work', '--exit-when-idle']);
    expect(crashed.signal).toBe('SIGKILL');
    expect(await show(dir, id)).toMatchObject({ state: 'active' });
    // The next worker finds the task's owner gone (its pid is dead) and returns it to pending/ before claiming.
    const again = await cli(dir, ['work', '--exit-when-idle']);
    expect(again.code).toBe(0);
    expect(await show(dir, id)).toMatchObject({
      state: 'done',
      task: { result: { attempt: 2 }, history: [{ attempt: 1, error: { type: 'WorkerDied' } }] },
    });
  });
});
