// Service tasks: the result is kept in the done task first, then routed by on_result; a failed route is re-routable.
import { mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { rerouteTask } from '@assistant/actions';
import { loadRuntime } from '@assistant/integration-host';
import { FileHumanLog, FileNoteStore } from '@assistant/notes';
import { installation } from '@assistant/process';
import { type JsonValue, openFileTaskQueue } from '@assistant/queue';
import { runWorker } from '@assistant/worker';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { repoRoot } from './helpers/node-process.ts';
import { type TempDir, tempDir } from './helpers/temp-dir.ts';

const greeter = path.join(repoRoot, 'tests/fixtures/integrations/custom/greeter');

async function setup(dir: TempDir) {
  await dir.write(
    'config.yaml',
    `data_dir: ./data\nintegration_dirs: [${JSON.stringify(greeter)}]\nworker:\n  poll_interval: 50ms\nintegrations:\n  - {type: greeter, name: friendly, greeting: Hi}\n`,
  );
  const runtime = await loadRuntime({ installation, configPath: path.join(dir.path, 'config.yaml'), cwd: dir.path });
  const queue = await openFileTaskQueue({ directory: runtime.config.paths.queue, settings: runtime.config.queue });
  const notes = new FileNoteStore({ root: runtime.config.paths.notes });
  const work = () =>
    runWorker({
      config: runtime.config,
      registry: runtime.registry,
      logger: pino({ level: 'silent' }),
      signal: new AbortController().signal,
      exitWhenIdle: true,
    });
  const service = async (type: string, inputs: JsonValue, onResult: JsonValue) => {
    const outcome = await queue.enqueue({
      type,
      payload: { inputs },
      integration: 'friendly',
      source: 'automation',
      onResult,
    });
    if (outcome.status !== 'enqueued') throw new Error(outcome.status);
    return outcome.task.id;
  };
  const humanLog = async () => {
    const files = await readdir(runtime.config.paths.logs);
    return (await Promise.all(files.map((file) => readFile(path.join(runtime.config.paths.logs, file), 'utf8')))).join(
      '',
    );
  };
  return { ...runtime, queue, notes, work, service, humanLog };
}

describe('service results', () => {
  it('are written to a note with audit fields the service cannot overwrite, with a human-log breadcrumb', async () => {
    await using dir = await tempDir();
    const { queue, notes, work, service, humanLog } = await setup(dir);
    const composed = await service(
      'service.greeter.compose',
      { name: 'Ada' },
      {
        routes: [{ note: true }],
        requested_by: { instance: 'friendly', platform: 'people', item: 'people/ada.md', rule: 'say hi' },
      },
    );
    const impostor = await service('service.greeter.impostor', {}, { routes: [{ note: 'answers' }] });
    await work();
    expect((await queue.get(composed))?.task).toMatchObject({ result: { text: 'Hi, Ada' } });
    const note = await notes.read(`services/greeter/compose/${composed}.md`);
    expect(note?.data).toMatchObject({
      text: 'Hi, Ada',
      service: 'greeter.compose',
      instance: 'friendly',
      task: composed,
      requested_by: { rule: 'say hi', item: 'people/ada.md' },
      inputs: { name: 'Ada' },
      routed_at: expect.any(String),
    });
    expect(note?.body).toBe('# A greeting\n\nFor Ada.\n');
    expect((await notes.read(`answers/${impostor}.md`))?.data).toMatchObject({
      task: impostor,
      service: 'greeter.impostor',
      instance: 'friendly',
      answer: 42,
    });
    // The manifest's human_log template, over the inputs and the result.
    expect(await humanLog()).toMatch(
      /\*\*service\.greeter\.compose\*\* Composed a greeting for Ada \[→\]\(services\/greeter\/compose\//,
    );
  });

  it('keeps the result in done/ when a route fails, and delivers it on reroute', async () => {
    await using dir = await tempDir();
    const { queue, notes, work, service, humanLog, config, registry } = await setup(dir);
    // A file where the route's folder should be: writing the note fails until it is moved away.
    await mkdir(config.paths.notes, { recursive: true });
    await writeFile(path.join(config.paths.notes, 'blocked'), 'not a folder\n');
    const id = await service(
      'service.greeter.compose',
      { name: 'Grace' },
      {
        routes: [{ note: 'blocked' }, { enqueue: 'system.echo' }],
        human_log: 'Composed for {{ inputs.name }}: {{ result.text }}',
      },
    );
    await work();
    expect(await queue.get(id)).toMatchObject({ state: 'done', task: { result: { text: 'Hi, Grace' } } });
    expect(await humanLog()).toMatch(
      new RegExp(`could not deliver the result of task ${id}: .*assistant task reroute ${id}`),
    );
    // The other route ran anyway.
    expect(await queue.list({ type: 'system.echo' })).toHaveLength(1);

    await rm(path.join(config.paths.notes, 'blocked'));
    const log = new FileHumanLog({ directory: config.paths.logs });
    const routed = await rerouteTask({ id, queue, notes, registry, humanLog: log });
    expect(routed.notes).toEqual([`blocked/${id}.md`]);
    expect((await notes.read(`blocked/${id}.md`))?.data).toMatchObject({ text: 'Hi, Grace', task: id });
    // Routing again rewrites the same note rather than making another.
    await rerouteTask({ id, queue, notes, registry });
    expect(await notes.list('blocked')).toEqual([`blocked/${id}.md`]);
    expect(await humanLog()).toMatch(/Composed for Grace: Hi, Grace/);
    await expect(rerouteTask({ id: 'zzzzzzzzzzzzzzzzzzzzzzzzzz', queue, notes })).rejects.toThrow(/no task with id/);
  });
});
