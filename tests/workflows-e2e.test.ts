// The three workflow topologies end to end: `assistant run` enqueues system.workflow, a real worker (`assistant work`)
// runs the runner and every agent as its own system.agent task against a scripted OpenAI-compatible model, and each
// run's blackboard and run note are checked.

import path from 'node:path';
import { readBlackboard } from '@assistant/agents';
import { type FakeChatRequest, FakeOpenAiServer, type FakeReply } from '@assistant/llm/testing';
import { FileNoteStore } from '@assistant/notes';
import { openFileTaskQueue } from '@assistant/queue';
import { describe, expect, it } from 'vitest';
import * as z from 'zod';
import { runCli } from './helpers/node-process.ts';
import { type TempDir, tempDir } from './helpers/temp-dir.ts';
import { waitUntil } from './helpers/wait-until.ts';

const cli = (dir: TempDir, args: readonly string[]) => runCli(args, { cwd: dir.path });

type Message = { role: string; content: string | null };
const messagesOf = (request: FakeChatRequest) => request.body.messages as Message[];
const systemOf = (request: FakeChatRequest) =>
  messagesOf(request).find((message) => message.role === 'system')?.content ?? '';
const taskOf = (request: FakeChatRequest) =>
  messagesOf(request).find((message) => message.role === 'user')?.content ?? '';
const toolResults = (request: FakeChatRequest) =>
  messagesOf(request)
    .filter((message) => message.role === 'tool')
    .map((message) => message.content ?? '');

/** The model, scripted by persona (each persona's instructions start with `You are the <name>.`). */
function respond(request: FakeChatRequest): FakeReply {
  const persona = /You are the (\w+)\./.exec(systemOf(request))?.[1];
  const task = taskOf(request);
  switch (persona) {
    case 'researcher':
      return { text: 'FACT: cats sleep 16 hours a day' };
    case 'writer':
      return { text: `ARTICLE (${task.includes('FACT: cats sleep') ? 'from the facts' : 'without facts'})` };
    case 'manager': {
      const results = toolResults(request);
      const spawned = results.map((text) => /ag-[0-9a-f]{16}/.exec(text)?.[0]).find(Boolean);
      if (results.length === 0) {
        return {
          toolCalls: [{ name: 'spawn_agent', arguments: { persona: 'researcher', task: 'Find one fact about cats' } }],
        };
      }
      if (results.length === 1) return { toolCalls: [{ name: 'wait_agents', arguments: { ids: [spawned] } }] };
      return { toolCalls: [{ name: 'reply_to_caller', arguments: { forward: spawned } }] };
    }
    case 'optimist':
      return { text: `optimist: ${/Round (\d+)/.exec(task)?.[1]}` };
    case 'critic': {
      const round = /Round (\d+)/.exec(task)?.[1];
      return { text: round === '2' && task.includes('optimist: 2') ? 'critic: fine, AGREED' : `critic: ${round}` };
    }
    default:
      return { text: `no script for ${persona}` };
  }
}

async function setUp(dir: TempDir, modelUrl: string): Promise<void> {
  await dir.write(
    'config.yaml',
    `data_dir: ./data
memory: {consolidate: []} # memory has its own tests (tests/memory-worker.test.ts)
llms:
  default: {base_url: "${modelUrl}", model: fake-model}
worker: {shutdown_grace: 2s, poll_interval: 100ms}
`,
  );
  const persona = (name: string, frontmatter = 'tools: {allow: [search_notes]}') =>
    dir.write(`personas/${name}.md`, `---\n${frontmatter}\n---\n\nYou are the ${name}. Answer briefly.\n`);
  await persona('researcher');
  await persona('writer');
  await persona('optimist');
  await persona('critic');
  await persona('manager', 'tools: {allow: [spawn_agent, wait_agents]}\ndelegable: [search_notes]');
  await dir.write(
    'agents/article.yaml',
    `topology: pipeline
description: research, then write
steps:
  - persona: researcher
    task: "Find facts about {{input}}"
  - workflow: write-up
`,
  );
  await dir.write(
    'agents/write-up.yaml',
    'topology: pipeline\nsteps:\n  - {persona: writer, task: "Write: {{input}}"}\n',
  );
  await dir.write(
    'agents/team.yaml',
    'topology: star\nsupervisor: manager\nworkers: [researcher, writer]\ntask: "Answer: {{input}}"\n',
  );
  await dir.write(
    'agents/debate.yaml',
    'topology: mesh\nagents: [optimist, critic]\ntask: "Discuss {{input}}"\nmax_rounds: 4\nstop_when: AGREED\n',
  );
}

const resultSchema = z.looseObject({
  state: z.string(),
  task: z.looseObject({
    result: z.looseObject({ run: z.string(), status: z.string(), output: z.string() }).optional(),
    error: z.unknown().optional(),
  }),
});

describe('workflows end to end', () => {
  it('runs a pipeline, a star and a mesh through a real worker, each answer on its blackboard once', async () => {
    await using dir = await tempDir();
    await using model = await FakeOpenAiServer.start({ respond });
    await setUp(dir, model.url);

    const checked = await cli(dir, ['config', 'check']);
    expect(checked.code, checked.stderr).toBe(0);

    const started: Record<string, { run: string; task: string }> = {};
    for (const workflow of ['article', 'team']) {
      const run = await cli(dir, ['run', workflow, '--input', 'cats']);
      expect(run.code, run.stderr).toBe(0);
      const ids = /run (run-\d{8}-[a-z0-9]+), task (\S+)/.exec(run.stdout);
      expect(ids, run.stdout).not.toBeNull();
      started[workflow] = { run: ids?.[1] ?? '', task: ids?.[2] ?? '' };
    }
    // The mesh is started with --wait: the command follows its run to the end and prints the output.
    const waiting = cli(dir, ['run', 'debate', '--input', 'cats', '--wait', '--json']);
    const queue = await openFileTaskQueue({ directory: path.join(dir.path, 'data/queue') });
    await waitUntil(async () => (await queue.list({ type: 'system.workflow' })).length === 3, {
      what: 'the third run to be enqueued',
    });
    await queue.close();

    const worked = await cli(dir, ['work', '--exit-when-idle']);
    expect(worked.code, worked.stderr).toBe(0);
    const followed = await waiting;
    expect(followed.code, followed.stderr).toBe(0);
    const outcomeOfWait = z
      .object({ run: z.string(), task: z.string(), status: z.string(), output: z.string() })
      .parse(JSON.parse(followed.stdout));
    expect(outcomeOfWait).toMatchObject({ status: 'done', output: 'critic: fine, AGREED' });
    started.debate = { run: outcomeOfWait.run, task: outcomeOfWait.task };

    const notes = new FileNoteStore({ root: path.join(dir.path, 'data/notes') });
    const outcome = async (workflow: string) => {
      const { run, task } = started[workflow] ?? { run: '', task: '' };
      const shown = await cli(dir, ['task', 'show', task, '--json']);
      const record = resultSchema.parse(JSON.parse(shown.stdout));
      expect(record.state, JSON.stringify(record.task.error)).toBe('done');
      const board = await readBlackboard({ notes, path: `agents/blackboards/${run}.md` });
      const note = await notes.read(`agents/runs/${run}.md`);
      return { result: record.task.result, board, note };
    };

    const article = await outcome('article');
    expect(article.result).toMatchObject({ status: 'done', output: 'ARTICLE (from the facts)' });
    expect(article.board.map((entry) => entry.what)).toEqual([
      'cats',
      'FACT: cats sleep 16 hours a day',
      'ARTICLE (from the facts)',
    ]);
    expect(article.note?.data).toMatchObject({ workflow: 'article', topology: 'pipeline', status: 'done' });
    expect(article.note?.data.tasks).toHaveLength(3);

    const team = await outcome('team');
    // The supervisor forwarded its worker's answer word for word.
    expect(team.result).toMatchObject({ status: 'done', output: 'FACT: cats sleep 16 hours a day' });
    expect(team.board.map((entry) => entry.what)).toEqual([
      'cats',
      'FACT: cats sleep 16 hours a day',
      'FACT: cats sleep 16 hours a day',
    ]);
    expect(team.board.map((entry) => entry.who)).toEqual([
      'workflow',
      expect.stringMatching(/^researcher/),
      expect.stringMatching(/^manager/),
    ]);
    // The runner, the supervisor and its worker.
    expect(team.note?.data.tasks).toHaveLength(3);

    const debate = await outcome('debate');
    expect(debate.result).toMatchObject({ status: 'done', output: 'critic: fine, AGREED' });
    expect(debate.board.map((entry) => entry.what)).toEqual([
      'cats',
      'optimist: 1',
      'critic: 1',
      'optimist: 2',
      'critic: fine, AGREED',
    ]);
    for (const { board } of [article, team, debate]) {
      expect(new Set(board.map((entry) => entry.id)).size).toBe(board.length);
    }
    // Sixteen tasks (three runners, thirteen agents) with their waits run one worker: more than the tier's 30 s on a
    // loaded machine.
  }, 120_000);
});
