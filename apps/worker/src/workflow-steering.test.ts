// Steering a whole workflow run through its runner's task: pause holds the run and pauses its agents, resume lets
// them go on, stop ends the run `stopped` and stops the agent running now; interject and ask are refused with what
// to do instead. A real worker in this process, a scripted model.
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { readWorkflowRun, startWorkflowRun } from '@assistant/agents';
import type { LoadedConfig } from '@assistant/config';
import { FileNoteStore } from '@assistant/notes';
import type { TaskQueue } from '@assistant/queue';
import { ControlFiles } from '@assistant/steering';
import { pino } from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { runWorker } from './run-worker.ts';
import { loadTestRuntime } from './testing/load-test-runtime.ts';
import { personaFile, startTeamModel } from './testing/team-model.ts';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'assistant-run-steering-'));
  await mkdir(path.join(dir, 'personas'));
  await mkdir(path.join(dir, 'agents'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** A two-step pipeline; the researcher works a step every 100 ms until `go` is written into the notes. */
async function setUp(url: string): Promise<void> {
  await writeFile(
    path.join(dir, 'config.yaml'),
    `data_dir: ./data
worker: {concurrency: 2, poll_interval: 50ms, shutdown_grace: 500ms}
llms:
  default: {base_url: "${url}", model: fake-model, capabilities: {tools: true}}
`,
  );
  await writeFile(
    path.join(dir, 'personas', 'researcher.md'),
    personaFile('researcher', 'tools: {allow: [wait, read_note]}\nbudget: {max_steps: 200}'),
  );
  await writeFile(path.join(dir, 'personas', 'writer.md'), personaFile('writer', 'tools: {allow: [read_note]}'));
  await writeFile(
    path.join(dir, 'agents', 'brief.yaml'),
    'topology: pipeline\nsteps:\n  - {persona: researcher, task: "Research {{input}}"}\n  - {persona: writer, task: "Write {{previous}}"}\n',
  );
}

async function startTeam() {
  return startTeamModel({
    // Reads the note `go.md` each step: absent, it waits a little and looks again; present, it answers.
    researcher: (_messages, { toolResults }) => {
      const last = toolResults.at(-1) ?? '';
      if (last.includes('GO')) return { text: 'FACT: found' };
      return toolResults.length % 2 === 0
        ? { toolCalls: [{ name: 'read_note', arguments: { path: 'go.md' } }] }
        : { toolCalls: [{ name: 'wait', arguments: { ms: 100 } }] };
    },
    writer: () => ({ text: 'ARTICLE' }),
  });
}

async function startWorker() {
  const runtime = await loadTestRuntime(dir);
  const stop = new AbortController();
  const worker = runWorker({
    config: runtime.config,
    registry: runtime.registry,
    logger: pino({ level: process.env.DEBUG_WORKER ? 'debug' : 'silent' }),
    signal: stop.signal,
  });
  return { ...runtime, stop, worker };
}

async function runTasks(notes: FileNoteStore, run: string): Promise<string[]> {
  const tasks = (await readWorkflowRun({ notes, run }))?.data.tasks;
  return Array.isArray(tasks) ? tasks.map(String) : [];
}

async function eventsOf(control: string, taskId: string): Promise<Record<string, unknown>[]> {
  const text = await readFile(path.join(control, taskId, 'events.jsonl'), 'utf8').catch(() => '');
  return text
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => JSON.parse(line));
}

/**
 * Starts a run of `brief` and waits until its researcher is at work (its task on the run note): the run, the notes,
 * the researcher's task id, and the runner's control channel.
 */
async function startBrief(queue: TaskQueue, config: LoadedConfig) {
  const started = await startWorkflowRun({
    queue,
    configDir: dir,
    notesRoot: config.paths.notes,
    workflow: 'brief',
    input: 'cats',
  });
  const notes = new FileNoteStore({ root: config.paths.notes });
  await expect
    .poll(async () => (await runTasks(notes, started.run)).length, {
      timeout: 30_000,
      message: JSON.stringify(await queue.get(started.task)),
    })
    .toBe(2);
  const researcher = (await runTasks(notes, started.run))[1] ?? '';
  const runner = new ControlFiles({ root: config.paths.control, taskId: started.task });
  return { started, notes, researcher, runner };
}

describe('steering a workflow run through its runner', () => {
  it('pause holds the run and its agent, resume lets them finish; interject and ask are refused', {
    timeout: 60_000,
  }, async () => {
    await using server = await startTeam();
    await setUp(server.url);
    const { queue, config, stop, worker } = await startWorker();
    try {
      const { started, notes, researcher, runner } = await startBrief(queue, config);
      const interject = await runner.request({ action: 'interject', message: 'faster', source: 'test' });
      expect(await runner.waitForOutcome(interject.id, { timeoutMs: 20_000 })).toMatchObject({
        status: 'refused',
        message: expect.stringContaining('interject into or ask one of its agents'),
      });

      const ask = await runner.request({ action: 'ask', message: 'how far are you?', source: 'test' });
      expect(await runner.waitForOutcome(ask.id, { timeoutMs: 20_000 })).toMatchObject({ status: 'refused' });

      const pause = await runner.request({ action: 'pause', source: 'test' });
      expect(await runner.waitForOutcome(pause.id, { timeoutMs: 20_000 })).toMatchObject({ status: 'applied' });
      // The pause reached the researcher, which stops at its pause gate.
      await expect
        .poll(
          async () => (await eventsOf(config.paths.control, researcher)).some((e) => e.type === 'waiting-while-paused'),
          {
            timeout: 30_000,
          },
        )
        .toBe(true);
      // Let the researcher answer once it runs again: while paused, nothing moves on.
      await notes.create('go.md', { data: {}, body: 'GO\n' });

      const resume = await runner.request({ action: 'resume', source: 'test' });
      expect(await runner.waitForOutcome(resume.id, { timeoutMs: 20_000 })).toMatchObject({ status: 'applied' });
      await expect.poll(async () => (await queue.get(started.task))?.state, { timeout: 30_000 }).toBe('done');
      expect((await queue.get(started.task))?.task?.result).toMatchObject({ status: 'done', output: 'ARTICLE' });
      expect((await eventsOf(config.paths.control, researcher)).some((e) => e.action === 'resume')).toBe(true);
    } finally {
      stop.abort();
      await worker;
    }
  });

  it('stop ends the run `stopped`, stops its running agent and spawns nothing more', { timeout: 60_000 }, async () => {
    await using server = await startTeam();
    await setUp(server.url);
    const { queue, config, stop, worker } = await startWorker();
    try {
      const { started, notes, researcher, runner } = await startBrief(queue, config);
      const stopped = await runner.request({ action: 'stop', reason: 'not needed any more', source: 'test' });
      expect(await runner.waitForOutcome(stopped.id, { timeoutMs: 20_000 })).toMatchObject({ status: 'applied' });

      await expect.poll(async () => (await queue.get(started.task))?.state, { timeout: 30_000 }).toBe('done');
      expect((await queue.get(started.task))?.task?.result).toMatchObject({
        status: 'stopped',
        reason: 'not needed any more',
      });
      const note = await readWorkflowRun({ notes, run: started.run });
      expect(note?.data).toMatchObject({ status: 'stopped', reason: 'not needed any more' });
      // The researcher was stopped too, and the writer never spawned.
      await expect.poll(async () => (await queue.get(researcher))?.state, { timeout: 30_000 }).toBe('done');
      expect((await queue.get(researcher))?.task?.result).toMatchObject({ status: 'stopped' });
      expect(note?.data.tasks).toHaveLength(2);
    } finally {
      stop.abort();
      await worker;
    }
  });
});
