import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { readBlackboard } from '@assistant/agents';
import { FakeSubAgents } from '@assistant/agents/testing';
import { FileNoteStore } from '@assistant/notes';
import type { HandlerContext, JsonValue, Task } from '@assistant/sdk';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { runWorkflowTask } from './workflow-task.ts';

let dir: string;
let notes: FileNoteStore;

const task: Task = {
  id: '01m81zbz7e0rvw1d46qzvhsksj',
  type: 'system.workflow',
  priority: 2,
  createdAt: '2026-11-28T09:00:00.000Z',
  readyAt: '2026-11-28T09:00:00.000Z',
  source: 'cli',
  payload: null,
  attempts: 1,
  maxAttempts: 3,
  history: [],
};

beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'assistant-workflow-task-'));
  await mkdir(path.join(dir, 'agents'));
  await writeFile(
    path.join(dir, 'agents', 'review.yaml'),
    'topology: pipeline\nsteps:\n  - {persona: researcher, task: "Research {{input}}"}\n  - {persona: writer, task: "Write: {{previous}}"}\n',
  );
  await writeFile(path.join(dir, 'agents', 'broken.yaml'), 'topology: star\nsupervisor: manager\n');
  notes = new FileNoteStore({ root: path.join(dir, 'data', 'notes') });
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

function contextFor(options: {
  payload: JsonValue;
  subagents?: FakeSubAgents;
  personas?: readonly string[];
  source?: Task['source'];
  withoutAgents?: boolean;
}): HandlerContext {
  const known = new Set(options.personas ?? ['researcher', 'writer']);
  const agents = {
    persona: async (name: string) => {
      if (!known.has(name)) throw new Error(`PERSONA_UNKNOWN: no persona ${name}`);
      return { name };
    },
    subagents: () => options.subagents,
    // No one steers these runs (apps/worker/src/workflow-steering.test.ts steers a run through a real worker).
    followSteering: () => ({ close: async () => {} }),
    steerChildren: async () => {},
  };
  // Only what the handler uses; the e2e test (tests/workflows-e2e.test.ts) covers the worker's real context.
  return {
    task: { ...task, source: options.source ?? 'cli', payload: options.payload },
    payload: options.payload,
    configDir: dir,
    dataDir: path.join(dir, 'data'),
    notes,
    signal: new AbortController().signal,
    log: { human: async () => {}, info() {}, warn() {} },
    ...(options.withoutAgents ? {} : { agents }),
  } as unknown as HandlerContext;
}

const answer = (request: { persona: string; task: string }) =>
  request.persona === 'researcher' ? 'facts' : `written from ${request.task.includes('facts') ? 'facts' : '?'}`;

describe('system.workflow', () => {
  it('runs the workflow as a run derived from its task, and says so in its result', async () => {
    const subagents = new FakeSubAgents({ answer });
    const result = await runWorkflowTask(contextFor({ payload: { workflow: 'review', input: 'tea' }, subagents }));
    expect(result).toEqual({ run: 'run-20261128-0rvw1d46qzvhsksj', status: 'done', output: 'written from facts' });
    const board = await readBlackboard({ notes, path: 'agents/blackboards/run-20261128-0rvw1d46qzvhsksj.md' });
    expect(board.map((entry) => entry.what)).toEqual(['tea', 'facts', 'written from facts']);
    // Typed by the owner (source cli): the first step gets the input as written.
    expect(subagents.children.get('step-1')?.request.task).toBe('Research tea');
  });

  it('fences the input of a run a hook or an automation enqueued', async () => {
    const subagents = new FakeSubAgents({ answer });
    await runWorkflowTask(
      contextFor({
        payload: { workflow: 'review', input: 'tea', run: 'run-20261128-abcd' },
        subagents,
        source: 'automation',
      }),
    );
    expect(subagents.children.get('step-1')?.request.task).toMatch(/Research <<<UNTRUSTED-[0-9a-f]+ input>>>\ntea\n/);
  });

  it('refuses a payload that is not {workflow, input, run?}, naming the field', async () => {
    await expect(runWorkflowTask(contextFor({ payload: { workflow: 'review' } }))).rejects.toThrow(
      /^system\.workflow expects \{"workflow": "NAME", "input": "…", "run"\?: "run-…"\}; input: /,
    );
    await expect(
      runWorkflowTask(contextFor({ payload: { workflow: 'review', input: 'x', run: '../../etc' } })),
    ).rejects.toThrow(/run: a run id/);
  });

  it('says plainly when the worker gave it no sub-agents', async () => {
    await expect(
      runWorkflowTask(contextFor({ payload: { workflow: 'review', input: 'x' }, withoutAgents: true })),
    ).rejects.toThrow(/system\.workflow needs sub-agents \(context\.agents\)/);
  });

  it('fails without retries for an unknown workflow, one with problems, or a persona gone since', async () => {
    const subagents = new FakeSubAgents({ answer });
    const unknown = runWorkflowTask(contextFor({ payload: { workflow: 'nope', input: 'x' }, subagents }));
    await expect(unknown).rejects.toMatchObject({
      name: 'UnrecoverableError',
      message: expect.stringMatching(/^WORKFLOW_UNKNOWN: no workflow nope .*the workflows are review$/),
    });
    const broken = runWorkflowTask(contextFor({ payload: { workflow: 'broken', input: 'x' }, subagents }));
    await expect(broken).rejects.toThrow(/^WORKFLOW_INVALID: workflow broken has problems: agents\/broken\.yaml:1: /);
    const gone = runWorkflowTask(
      contextFor({ payload: { workflow: 'review', input: 'x' }, subagents, personas: ['researcher'] }),
    );
    await expect(gone).rejects.toThrow(/^WORKFLOW_INVALID: agents\/review\.yaml: PERSONA_UNKNOWN: no persona writer/);
    // Nothing was spawned for any of them: the persona of step 2 was checked before step 1 ran.
    expect(subagents.spawnCalls).toEqual([]);
  });
});
