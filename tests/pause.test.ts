// Pause and resume without a restart or a change to config.yaml: the CLI, the REST API and the pause note
// (notes/system/paused.md) that the server's scheduler and the worker read. A paused schedule does not enqueue and
// enqueues again once resumed; a paused instance's queued tasks wait in pending/ (not failed) and run once it is
// resumed; a paused rule is applied to no item, and `explain` says it is paused.
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { loadRuntime } from '@assistant/integration-host';
import { FileNoteStore } from '@assistant/notes';
import { installation } from '@assistant/process';
import { openFileTaskQueue } from '@assistant/queue';
import { runWorker } from '@assistant/worker';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { startAssistant } from './helpers/browser.ts';
import { repoRoot, runCli } from './helpers/node-process.ts';
import { type TempDir, tempDir } from './helpers/temp-dir.ts';
import { waitUntil } from './helpers/wait-until.ts';

const greeter = path.join(repoRoot, 'tests/fixtures/integrations/custom/greeter');

const automationsConfig = `data_dir: ./data
integration_dirs: [${JSON.stringify(greeter)}]
memory: {consolidate: []} # memory has its own tests (tests/memory-worker.test.ts)
llms:
  default: {base_url: "http://127.0.0.1:11434/v1", model: m}
worker:
  poll_interval: 50ms
integrations:
  - type: greeter
    name: friendly
    platforms:
      cards:
        automations:
          - name: wave at friends
            when: {is_friend: true}
            then: wave
`;

async function inProcess(dir: TempDir) {
  const configPath = await dir.write('config.yaml', automationsConfig);
  const runtime = await loadRuntime({ installation, configPath, cwd: dir.path });
  const queue = await openFileTaskQueue({ directory: runtime.config.paths.queue, settings: runtime.config.queue });
  const notes = new FileNoteStore({ root: runtime.config.paths.notes });
  const work = () =>
    runWorker({
      config: runtime.config,
      registry: runtime.registry,
      logger: pino({ level: 'silent' }),
      signal: new AbortController().signal,
      exitWhenIdle: true,
      pausedRecheckMs: 50,
    });
  const cli = async (...args: string[]) => {
    const run = await runCli([...args, '--config', configPath]);
    expect(run.code, `assistant ${args.join(' ')}\n${run.stdout}\n${run.stderr}`).toBe(0);
    return run.stdout;
  };
  return { ...runtime, queue, notes, work, cli };
}

describe('pause and resume', () => {
  it('a paused rule is applied to no item and explain says it is paused; resumed, it applies', async () => {
    await using dir = await tempDir();
    const { queue, notes, work, cli } = await inProcess(dir);
    expect(await cli('pause', 'rule', 'friendly/cards/wave at friends', '--reason', 'testing')).toContain(
      'rule friendly/cards/wave at friends paused by cli at',
    );
    await queue.enqueue({ type: 'greeter.cards.check', integration: 'friendly', source: 'scheduler' });
    await work();
    expect((await queue.list({ state: 'done', type: 'greeter.cards.evaluate' })).length).toBeGreaterThan(0);
    expect((await notes.read('greeter/friendly/ada.md'))?.data.actions_taken).toBeUndefined();
    expect(await queue.list({ state: 'done', type: 'greeter.cards.act' })).toEqual([]);
    const explained = await cli('automations', 'explain', 'greeter/friendly/ada.md');
    expect(explained).toMatch(/"wave at friends": PAUSED \(paused by cli at [^)]*: testing\): not applied/);
    expect(await cli('paused')).toMatch(
      /^rule {4} {2}friendly\/cards\/wave at friends {2}paused by cli at .*: testing$/m,
    );

    // By its number this time: the note records it under its name, so this resumes it.
    expect(await cli('resume', 'rule', 'friendly/cards/1')).toContain('resumed rule friendly/cards/wave at friends');
    await queue.enqueue({ type: 'greeter.cards.check', integration: 'friendly', source: 'scheduler' });
    await work();
    expect((await notes.read('greeter/friendly/ada.md'))?.data).toMatchObject({ actions_taken: [{ action: 'wave' }] });
  }, 120_000);

  it("a paused instance's queued tasks wait in pending/, not failed, and run once it is resumed", async () => {
    await using dir = await tempDir();
    const { queue, work, cli, config } = await inProcess(dir);
    await cli('pause', 'instance', 'friendly');
    // A trigger by hand is enqueued all the same, and says that the task waits.
    const triggered = await runCli(['trigger', 'friendly', 'cards', '--config', config.paths.configFile]);
    expect(triggered.code, triggered.stderr).toBe(0);
    expect(triggered.stderr).toMatch(
      /note: instance friendly is paused by cli at .*; the task waits in pending\/ until `assistant resume instance friendly`/,
    );
    const id = triggered.stdout.trim();
    const enqueued = { task: { id } };
    await work();
    const waiting = await queue.get(enqueued.task.id);
    expect(waiting).toMatchObject({ state: 'pending', task: { attempts: 0 } });
    expect(await queue.list({ state: 'failed' })).toEqual([]);
    expect(await queue.list({ state: 'done' })).toEqual([]);

    await cli('resume', 'instance', 'friendly');
    await waitUntil(
      async () => {
        await work();
        return (await queue.get(enqueued.task.id))?.state === 'done';
      },
      { what: 'the held task to run once its instance is resumed' },
    );
  }, 120_000);

  it('a paused schedule enqueues nothing while the server runs; resumed through the API it enqueues again', async () => {
    await using dir = await tempDir();
    const integrations = `integration_dirs: [${JSON.stringify(greeter)}]
memory: {consolidate: []} # memory has its own tests (tests/memory-worker.test.ts)
llms:
  default: {base_url: "http://127.0.0.1:9/v1", model: m}
integrations:
  - type: greeter
    name: held
    schedule: {every: 1s}
    platforms: {people: {}}
  - type: greeter
    name: running
    platforms: {people: {}}
`;
    // Paused before the server starts (an `every` schedule fires at once on its first start), with the CLI.
    const configPath = await dir.write('config.yaml', `data_dir: ./data\n${integrations}`);
    const paused = await runCli(['pause', 'schedule', 'held', '--reason', 'quiet please', '--config', configPath]);
    expect(paused.code, paused.stderr).toBe(0);
    await using assistant = await startAssistant({ dir, serverOnly: true, extraConfig: integrations });
    // Entry tasks carry no payload, so the list's type filter is enough: only `held` has a schedule.
    const pending = async () => {
      const response = await assistant.api('/api/tasks?state=pending&type=greeter.people.check');
      return ((await response.json()) as { tasks: unknown[] }).tasks.length;
    };
    // The held schedule came due and was skipped, and the scheduler says why.
    const health = await waitUntil(
      async () => {
        const body = (await (await assistant.api('/health')).json()) as {
          schedules: { id: string; paused?: string }[];
          pauses: { kind: string; name: string; reason?: string }[];
        };
        return body.schedules.find((job) => job.id === 'held')?.paused !== undefined && body;
      },
      { what: 'a skipped run of the paused schedule' },
    );
    expect(health.schedules.find((job) => job.id === 'held')?.paused).toMatch(
      /^schedule paused by cli at .*: quiet please$/,
    );
    expect(health.pauses).toEqual([
      expect.objectContaining({ kind: 'schedule', name: 'held', reason: 'quiet please' }),
    ]);
    expect(await pending()).toBe(0);

    const listed = (await (await assistant.api('/api/pauses')).json()) as { entries: { name: string }[] };
    expect(listed.entries.map((entry) => entry.name)).toEqual(['held']);
    const unknown = await assistant.api('/api/pauses', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ kind: 'schedule', name: 'nope' }),
    });
    expect(unknown.status).toBe(404);
    expect(await unknown.text()).toContain('there is no schedule `nope`');
    const resumed = await assistant.api('/api/pauses?kind=schedule&name=held', { method: 'DELETE' });
    expect(resumed.status, await resumed.clone().text()).toBe(200);
    await waitUntil(async () => (await pending()) > 0, {
      what: 'the resumed schedule to enqueue its entry task',
    });

    // Paused again through the API: the note says by whom, and the owner can read it.
    const again = await assistant.api('/api/pauses', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ kind: 'instance', name: 'running', reason: 'API test' }),
    });
    expect(again.status).toBe(201);
    const note = await readFile(path.join(assistant.dataDir, 'notes/system/paused.md'), 'utf8');
    expect(note).toMatch(/instances:\n {2}running:\n {4}by: api\n/);
  }, 120_000);

  it('a broken pause note is reported, pauses nothing, and is never overwritten', async () => {
    await using dir = await tempDir();
    const { config } = await inProcess(dir);
    const file = path.join(config.paths.notes, 'system/paused.md');
    await mkdir(path.dirname(file), { recursive: true });
    await writeFile(file, '---\ninstances: {friendly\n---\n');
    const run = await runCli(['pause', 'instance', 'friendly', '--config', config.paths.configFile]);
    expect(run.code).not.toBe(0);
    expect(run.stderr).toMatch(/notes\/system\/paused\.md:\d+:\d+: /);
    expect(await readFile(file, 'utf8')).toBe('---\ninstances: {friendly\n---\n');
    const listed = await runCli(['paused', '--config', config.paths.configFile]);
    expect(listed.stdout).toBe('nothing is paused\n');
    expect(listed.stderr).toMatch(/warning: notes\/system\/paused\.md:\d+:\d+: .*nothing is known to be paused/);

    // Fixed by hand, naming an instance config.yaml does not have: listed, and said to pause nothing.
    await writeFile(file, '---\ninstances:\n  gone: renamed\n---\n');
    const stale = await runCli(['paused', '--config', config.paths.configFile]);
    expect(stale.stdout).toMatch(
      /^instance {2}gone {2}paused: renamed \(config\.yaml has no such thing: it pauses nothing\)$/m,
    );
  }, 120_000);
});
