import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { readBlackboard } from '@assistant/agents';
import { FakeSubAgents } from '@assistant/agents/testing';
import { FileNoteStore } from '@assistant/notes';
import type { HandlerContext, HandlerEnqueueOptions, JsonValue, Task } from '@assistant/sdk';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { maxReplyChars, replyText } from './workflow-reply.ts';
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

/** What a context's `enqueue` was asked, and its warnings. */
interface Recorded {
  enqueued: HandlerEnqueueOptions[];
  warnings: string[];
}

function contextFor(options: {
  payload: JsonValue;
  subagents?: FakeSubAgents;
  personas?: readonly string[];
  source?: Task['source'];
  withoutAgents?: boolean;
  attempts?: number;
  signal?: AbortSignal;
  recorded?: Recorded;
  /** `enqueue` throws this (a worker without the chat integration). */
  enqueueError?: Error;
  /** A person stops the run as soon as it follows its steering, with this reason. */
  stopAtOnce?: string;
}): HandlerContext {
  const known = new Set(options.personas ?? ['researcher', 'writer']);
  const agents = {
    persona: async (name: string) => {
      if (!known.has(name)) throw new Error(`PERSONA_UNKNOWN: no persona ${name}`);
      return { name };
    },
    subagents: () => options.subagents,
    // No one steers these runs (apps/worker/src/workflow-steering.test.ts steers a run through a real worker).
    followSteering: (handlers: { stop: (reason?: string) => void }) => {
      if (options.stopAtOnce !== undefined) handlers.stop(options.stopAtOnce);
      return { close: async () => {} };
    },
    steerChildren: async () => {},
  };
  // Only what the handler uses; the e2e test (tests/workflows-e2e.test.ts) covers the worker's real context.
  return {
    task: { ...task, source: options.source ?? 'cli', payload: options.payload, attempts: options.attempts ?? 1 },
    payload: options.payload,
    configDir: dir,
    dataDir: path.join(dir, 'data'),
    notes,
    signal: options.signal ?? new AbortController().signal,
    log: {
      human: async () => {},
      info() {},
      warn(message: string) {
        options.recorded?.warnings.push(message);
      },
    },
    enqueue: async (request: HandlerEnqueueOptions) => {
      if (options.enqueueError) throw options.enqueueError;
      options.recorded?.enqueued.push(request);
      return { status: 'enqueued', task: { id: `t${options.recorded?.enqueued.length}` } };
    },
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
      /^system\.workflow expects \{"workflow": "NAME", "input": "…", "run"\?: "run-…", "reply_to"\?: \{"conversation": "c…"\}\}; input: /,
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

describe('system.workflow with reply_to (a run started from chat)', () => {
  const replyTo = { conversation: 'c-owner', instance: 'chat' };

  it('posts the output into the conversation once the run is done, under a message id from the run id', async () => {
    const recorded: Recorded = { enqueued: [], warnings: [] };
    const payload = { workflow: 'review', input: 'tea', run: 'run-20261128-abcd', reply_to: replyTo };
    const result = await runWorkflowTask(contextFor({ payload, subagents: new FakeSubAgents({ answer }), recorded }));
    expect(result).toEqual({ run: 'run-20261128-abcd', status: 'done', output: 'written from facts' });
    expect(recorded.enqueued).toEqual([
      {
        type: 'chat.notify',
        integration: 'chat',
        payload: {
          conversation: 'c-owner',
          message: 'wf-run-20261128-abcd',
          run: 'run-20261128-abcd',
          text: 'Workflow `review` (pipeline), run run-20261128-abcd: done.\n\nwritten from facts\n\n(The run note is agents/runs/run-20261128-abcd.md.)',
        },
      },
    ]);
    // A runner run again (a crash after the enqueue) asks for the same message: chat.notify posts an id once.
    await runWorkflowTask(contextFor({ payload, subagents: new FakeSubAgents({ answer }), recorded }));
    expect(recorded.enqueued[1]).toEqual(recorded.enqueued[0]);
  });

  it('posts why a run failed: a step that failed, and a workflow gone since the run was started', async () => {
    const recorded: Recorded = { enqueued: [], warnings: [] };
    const failing = new FakeSubAgents({
      answer: (request) => (request.persona === 'writer' ? { status: 'failed', reason: 'no ink' } : 'facts'),
    });
    const payload = { workflow: 'review', input: 'tea', run: 'run-20261128-fail', reply_to: replyTo };
    const result = await runWorkflowTask(contextFor({ payload, subagents: failing, recorded }));
    expect(result).toMatchObject({ status: 'failed' });
    expect(recorded.enqueued[0]?.payload).toMatchObject({
      conversation: 'c-owner',
      message: 'wf-run-20261128-fail',
      text: expect.stringMatching(/^Workflow `review` \(pipeline\), run run-20261128-fail: failed: step 2 .*no ink/),
    });
    const gone = runWorkflowTask(
      contextFor({
        payload: { workflow: 'nope', input: 'x', run: 'run-20261128-gone', reply_to: { conversation: 'c-owner' } },
        subagents: new FakeSubAgents({ answer }),
        recorded,
      }),
    );
    await expect(gone).rejects.toThrow(/^WORKFLOW_UNKNOWN/);
    expect(recorded.enqueued[1]).toMatchObject({
      type: 'chat.notify',
      // No instance named: the builtin chat's default one.
      integration: 'chat',
      payload: { text: expect.stringMatching(/^Workflow `nope`, run run-20261128-gone: failed: WORKFLOW_UNKNOWN/) },
    });
  });

  it('says nothing yet when the queue tries the runner again, and on its last attempt says it failed', async () => {
    const recorded: Recorded = { enqueued: [], warnings: [] };
    const broken = new FakeSubAgents({ answer });
    broken.spawn = async () => {
      throw new Error('disk full');
    };
    const payload = { workflow: 'review', input: 'tea', run: 'run-20261128-retry', reply_to: replyTo };
    await expect(runWorkflowTask(contextFor({ payload, subagents: broken, recorded }))).rejects.toThrow('disk full');
    expect(recorded.enqueued).toEqual([]);
    await expect(runWorkflowTask(contextFor({ payload, subagents: broken, recorded, attempts: 3 }))).rejects.toThrow(
      'disk full',
    );
    expect(recorded.enqueued.map((each) => each.payload)).toEqual([
      expect.objectContaining({ text: expect.stringContaining(': failed: disk full') }),
    ]);
  });

  it('says a run a person stopped was stopped, and why', async () => {
    const recorded: Recorded = { enqueued: [], warnings: [] };
    const payload = { workflow: 'review', input: 'tea', run: 'run-20261128-stop', reply_to: replyTo };
    const result = await runWorkflowTask(
      contextFor({ payload, subagents: new FakeSubAgents({ answer }), recorded, stopAtOnce: 'not needed any more' }),
    );
    expect(result).toMatchObject({ status: 'stopped' });
    expect(recorded.enqueued.map((each) => each.payload)).toEqual([
      expect.objectContaining({
        message: 'wf-run-20261128-stop',
        text: expect.stringMatching(
          /^Workflow `review` \(pipeline\), run run-20261128-stop: stopped: not needed any more/,
        ),
      }),
    ]);
  });

  it('says a last attempt that timed out failed, and nothing when a shutdown cut the run short', async () => {
    const recorded: Recorded = { enqueued: [], warnings: [] };
    const payload = { workflow: 'review', input: 'tea', run: 'run-20261128-late', reply_to: replyTo };
    const stopped = (reason: unknown) => {
      const controller = new AbortController();
      controller.abort(reason);
      return controller.signal;
    };
    const shutdown = stopped(new Error('the worker is shutting down'));
    await expect(
      runWorkflowTask(
        contextFor({ payload, subagents: new FakeSubAgents({ answer }), recorded, attempts: 3, signal: shutdown }),
      ),
    ).rejects.toThrow('shutting down');
    expect(recorded.enqueued).toEqual([]);
    const timedOut = stopped(new DOMException('The operation timed out.', 'TimeoutError'));
    await expect(
      runWorkflowTask(
        contextFor({ payload, subagents: new FakeSubAgents({ answer }), recorded, attempts: 3, signal: timedOut }),
      ),
    ).rejects.toThrow('timed out');
    expect(recorded.enqueued.map((each) => each.payload)).toEqual([
      expect.objectContaining({ text: expect.stringContaining(': failed: the run took longer than the task timeout') }),
    ]);
  });

  it('finishes the run when the answer cannot be posted (no chat integration), with a warning', async () => {
    const recorded: Recorded = { enqueued: [], warnings: [] };
    const result = await runWorkflowTask(
      contextFor({
        payload: { workflow: 'review', input: 'tea', run: 'run-20261128-nochat', reply_to: replyTo },
        subagents: new FakeSubAgents({ answer }),
        recorded,
        enqueueError: new Error('enqueue: no integration handles task type chat.notify'),
      }),
    );
    expect(result).toMatchObject({ status: 'done' });
    expect(recorded.warnings).toEqual([
      expect.stringMatching(/run run-20261128-nochat is not posted .*no integration handles task type chat\.notify/),
    ]);
  });

  it('fails the attempt when the answer cannot be asked for for another reason, so the queue tries again', async () => {
    const recorded: Recorded = { enqueued: [], warnings: [] };
    await expect(
      runWorkflowTask(
        contextFor({
          payload: { workflow: 'review', input: 'tea', run: 'run-20261128-fulldisk', reply_to: replyTo },
          subagents: new FakeSubAgents({ answer }),
          recorded,
          enqueueError: new Error('ENOSPC: no space left on device'),
        }),
      ),
    ).rejects.toThrow(/ENOSPC/);
  });

  it('refuses a reply_to that is not {conversation, instance?}', async () => {
    await expect(
      runWorkflowTask(contextFor({ payload: { workflow: 'review', input: 'x', reply_to: { conversation: '../x' } } })),
    ).rejects.toThrow(/reply_to\.conversation: a conversation id/);
    await expect(
      runWorkflowTask(contextFor({ payload: { workflow: 'review', input: 'x', reply_to: { to: 'c-1' } } })),
    ).rejects.toThrow(/; reply_to(\.conversation)?: /);
  });

  it("cuts a long output to chat.notify's limit, pointing to the run note", () => {
    const text = replyText({
      workflow: 'review',
      topology: 'pipeline',
      run: 'run-20261128-long',
      status: 'done',
      output: 'x'.repeat(50_000),
    });
    expect(text.length).toBe(maxReplyChars);
    expect(text).toMatch(
      /x\n\n\[… \d+ more characters: the whole output is in the run note agents\/runs\/run-20261128-long\.md\]$/,
    );
    const cut = Number(/\[… (\d+) more/.exec(text)?.[1]);
    expect(text.split('x').length - 1 + cut).toBe(50_000);
  });
});
