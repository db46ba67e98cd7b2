import { randomBytes } from 'node:crypto';
import { AssistantError } from '@assistant/errors';
import { fenceUntrusted } from '@assistant/llm';
import type { NoteStore } from '@assistant/notes';
import type { ChildResult, SubAgents } from '../subagent-types.ts';
import { appendBlackboardEntry, type BlackboardEntry, createBlackboard, readBlackboard } from './blackboard.ts';
import type { MeshWorkflow, PipelineWorkflow, StarWorkflow, Workflow, WorkflowRunResult } from './workflow-types.ts';

/** A run id: `run-<yyyymmdd>-<random>`, made by whoever enqueues the run; it names the run's notes. */
export const runIdPattern = /^run-[0-9]{8}-[a-z0-9]{4,32}$/;

/** A fresh run id for a run starting now. */
export function newRunId(now: Date = new Date()): string {
  return `run-${now.toISOString().slice(0, 10).replaceAll('-', '')}-${randomBytes(5).toString('hex')}`;
}

/** The run's note, in the notes: `agents/runs/<run>.md`. */
export function runNotePath(run: string): string {
  return `agents/runs/${run}.md`;
}

/** The run's blackboard, in the notes: `agents/blackboards/<run>.md`. */
export function blackboardPath(run: string): string {
  return `agents/blackboards/${run}.md`;
}

export interface RunWorkflowOptions {
  workflow: Workflow;
  /** Every workflow there is, for the nested ones of pipeline steps. */
  workflows: ReadonlyMap<string, Workflow>;
  input: string;
  /**
   * Whether the input is the owner's own words (`assistant run`, the API), given to the agents as written, or text that
   * may come from outside (a hook's template over a mail's subject, a chat model's call), fenced as untrusted.
   * @default false
   */
  inputTrusted?: boolean;
  run: string;
  /** The runner's own task id: the first of the run's tasks. */
  taskId: string;
  notes: NoteStore;
  subagents: SubAgents;
  signal: AbortSignal;
  /**
   * The task ids under one of the runner's children (the workers a star's supervisor spawned, and theirs), for the
   * run note's `tasks:`. @default none: only the runner's own children are listed
   */
  descendantTasks?: (taskId: string) => Promise<string[]>;
  /**
   * This is the task's last attempt: an error that ends it (other than the signal's) also ends the run note `failed`,
   * so no run stays `running` after its task failed for good. @default false: the queue tries again
   */
  lastAttempt?: boolean;
  /** How long one wait for a child lasts before the runner looks again (and lists new descendants). @default 15_000 */
  waitTimeoutMs?: number;
  /**
   * A person's stop of the run (the runner's task steered `stop`): the run ends `stopped` with the signal's reason,
   * and spawns nothing more. Unlike `signal` (a worker shutting down), it does not leave the task to run again.
   */
  stopped?: AbortSignal;
  /** Resolves when the run is not paused (the runner's task steered `pause`); asked before each agent is spawned. */
  whilePaused?: () => Promise<void>;
}

/** Why a run ends early: a child that did not complete. */
class RunFailed extends Error {}

/**
 * Runs a workflow as the runner of a `system.workflow` task: writes the run note and the blackboard, spawns each
 * agent as a child task through `subagents`, appends every answer to the blackboard, and returns the output.
 *
 * Everything is keyed, so a runner killed at any moment and run again continues where it was: a spawn under a key
 * already used finds the child it started (never a second one), a result already in the inbox is read rather than
 * waited for, and an entry already on the blackboard is not appended again (its id is the child's id). The run note's
 * `status` says `running` until the end.
 */
export async function runWorkflow(options: RunWorkflowOptions): Promise<WorkflowRunResult> {
  const { workflow, run, notes } = options;
  const board = blackboardPath(run);
  await createRunNote(options);
  await createBlackboard({ notes, path: board, title: `${workflow.name} (${workflow.topology}), ${run}`, run });
  await appendBlackboardEntry({ notes, path: board, entry: { id: 'input', who: 'workflow', what: options.input } });
  const stopped = options.stopped;
  const runner = new Runner(
    stopped === undefined ? options : { ...options, signal: AbortSignal.any([options.signal, stopped]) },
    board,
  );
  let result: WorkflowRunResult;
  try {
    const output = await runner.topology({
      workflow,
      input: options.input,
      inputTrusted: options.inputTrusted ?? false,
      prefix: '',
    });
    result = { run, status: 'done', output };
  } catch (error) {
    if (stopped?.aborted && !options.signal.aborted) {
      result = { run, status: 'stopped', output: '', reason: String(stopped.reason ?? 'stopped') };
      await runner.listDescendants();
      await finishRunNote({ notes, run, workflow, result });
      return result;
    }
    if (!(error instanceof RunFailed)) {
      // A task timeout aborts the signal too (a TimeoutError), and ends the run as surely as an error; a worker
      // shutting down does not: its run resumes.
      const timedOut = options.signal.aborted && isTaskTimeout(options.signal.reason);
      if (options.lastAttempt && (!options.signal.aborted || timedOut)) {
        const reason = timedOut
          ? 'the runner took longer than its task timeout on its last attempt'
          : `the runner failed on its last attempt: ${error instanceof Error ? error.message : String(error)}`;
        await finishRunNote({ notes, run, workflow, result: { run, status: 'failed', output: '', reason } });
      }
      throw error;
    }
    result = { run, status: 'failed', output: '', reason: error.message };
  }
  await runner.listDescendants();
  await finishRunNote({ notes, run, workflow, result });
  return result;
}

/** The abort reason of the worker's per-type timeout (a `TimeoutError`), not that of a shutdown. */
export function isTaskTimeout(reason: unknown): boolean {
  return (reason instanceof Error || reason instanceof DOMException) && reason.name === 'TimeoutError';
}

class Runner {
  readonly #options: RunWorkflowOptions;
  readonly #board: string;
  /** The runner's direct children's task ids, whose own children are listed at the end. */
  readonly #children = new Set<string>();

  constructor(options: RunWorkflowOptions, board: string) {
    this.#options = options;
    this.#board = board;
  }

  async topology(step: { workflow: Workflow; input: string; inputTrusted: boolean; prefix: string }): Promise<string> {
    switch (step.workflow.topology) {
      case 'pipeline':
        return this.#pipeline({ ...step, workflow: step.workflow });
      case 'star':
        return this.#star({ ...step, workflow: step.workflow });
      case 'mesh':
        return this.#mesh({ ...step, workflow: step.workflow });
    }
  }

  async #pipeline(step: { workflow: PipelineWorkflow; input: string; inputTrusted: boolean; prefix: string }) {
    let previous: string | undefined;
    for (const [index, each] of step.workflow.steps.entries()) {
      const key = `${step.prefix}step-${index + 1}`;
      if (each.kind === 'workflow') {
        const nested = this.#options.workflows.get(each.workflow);
        if (!nested) {
          throw new AssistantError(
            'WORKFLOW_UNKNOWN',
            `step ${index + 1} names workflow \`${each.workflow}\`, which there is not`,
          );
        }
        // The nested workflow's input is the previous answer (model output), so its agents get it fenced.
        previous = await this.topology({
          workflow: nested,
          input: previous ?? step.input,
          inputTrusted: previous === undefined && step.inputTrusted,
          prefix: `${key}.`,
        });
        continue;
      }
      const task = renderTask({
        template: each.task,
        input: step.input,
        inputTrusted: step.inputTrusted,
        ...(previous === undefined ? {} : { previous }),
      });
      const result = await this.#runChild({
        persona: each.persona,
        task,
        key,
        purpose: `step ${index + 1} of workflow ${step.workflow.name}`,
      });
      previous = result.answer ?? '';
    }
    return previous ?? '';
  }

  async #star(step: { workflow: StarWorkflow; input: string; inputTrusted: boolean; prefix: string }) {
    const { workflow } = step;
    const task = [
      renderTask({ template: workflow.task, input: step.input, inputTrusted: step.inputTrusted }),
      '',
      `You supervise the workers ${workflow.workers.map((name) => `\`${name}\``).join(', ')}: give each a part of the work with spawn_agent {persona, task}, collect their answers with wait_agents, and answer with the result.`,
      `Their answers are appended to the blackboard note ${this.#board}. When one worker's answer is the whole answer, forward it unchanged with reply_to_caller {forward: <its id>} rather than rewriting it.`,
    ].join('\n');
    const result = await this.#runChild({
      persona: workflow.supervisor,
      task,
      key: `${step.prefix}supervisor`,
      purpose: `supervisor of workflow ${workflow.name}`,
      // Its spawn_agent refuses any other persona (AGENT_LIMIT): the workers are the manifest's, not the model's pick.
      maySpawn: workflow.workers,
    });
    return result.answer ?? '';
  }

  async #mesh(step: { workflow: MeshWorkflow; input: string; inputTrusted: boolean; prefix: string }) {
    const { workflow } = step;
    let last = '';
    for (let round = 1; round <= workflow.maxRounds; round++) {
      for (const persona of workflow.agents) {
        const entries = await readBlackboard({ notes: this.#options.notes, path: this.#board });
        const fenced = fenceUntrusted({ blackboard: renderBoard(entries) }, { maxChars: 24_000 });
        const task = [
          renderTask({ template: workflow.task, input: step.input, inputTrusted: step.inputTrusted }),
          '',
          `Round ${round} of at most ${workflow.maxRounds}. You take turns with ${workflow.agents.map((name) => `\`${name}\``).join(', ')} on a shared blackboard; add what moves the work forward.`,
          ...(workflow.stopWhen
            ? [`When the work is finished, include the text ${JSON.stringify(workflow.stopWhen)} in your answer.`]
            : []),
          '',
          fenced.instruction,
          'The blackboard so far:',
          fenced.text,
        ].join('\n');
        const result = await this.#runChild({
          persona,
          task,
          key: `${step.prefix}round-${round}-${persona}`,
          purpose: `round ${round} of workflow ${workflow.name}`,
        });
        last = result.answer ?? '';
        if (workflow.stopWhen && last.includes(workflow.stopWhen)) return last;
      }
    }
    return last;
  }

  /** Spawns (or finds) the child under `key`, waits for its result, appends it to the blackboard. */
  async #runChild(request: {
    persona: string;
    task: string;
    key: string;
    purpose: string;
    maySpawn?: string[];
  }): Promise<ChildResult> {
    const { subagents, notes, run } = this.#options;
    this.#options.signal.throwIfAborted();
    await this.#options.whilePaused?.();
    this.#options.signal.throwIfAborted();
    const spawned = await subagents.spawn({ ...request, blackboard: this.#board, run });
    this.#children.add(spawned.taskId);
    await addRunTasks({ notes, run, taskIds: [spawned.taskId] });
    const result = await this.#resultOf(spawned.id);
    await appendBlackboardEntry({
      notes,
      path: this.#board,
      entry: {
        id: spawned.id,
        who: request.persona,
        what:
          result.status === 'completed' ? (result.answer ?? '') : `(${result.status}) ${result.reason ?? ''}`.trim(),
        at: result.finished_at,
      },
    });
    if (result.status !== 'completed') {
      throw new RunFailed(
        `${request.purpose} (${request.persona}, ${spawned.id}) ended ${result.status}${result.reason ? `: ${result.reason}` : ''}`,
      );
    }
    return result;
  }

  async #resultOf(id: string): Promise<ChildResult> {
    const { subagents, signal } = this.#options;
    for (;;) {
      const found = await subagents.result(id);
      if (found) return found;
      signal.throwIfAborted();
      const waited = await subagents.wait([id], { timeoutMs: this.#options.waitTimeoutMs ?? 15_000, signal });
      const result = waited.results.find((each) => each.id === id);
      if (result) return result;
      // Still running: the tasks its children spawned meanwhile (a star's workers) join the run note now, not only
      // at the end, so a person following the run sees them.
      await this.listDescendants();
    }
  }

  /** Adds the tasks under the runner's children (a supervisor's workers) to the run note. */
  async listDescendants(): Promise<void> {
    const descendants = this.#options.descendantTasks;
    if (!descendants) return;
    const found: string[] = [];
    for (const taskId of this.#children) found.push(...(await descendants(taskId)));
    if (found.length > 0) await addRunTasks({ notes: this.#options.notes, run: this.#options.run, taskIds: found });
  }
}

/**
 * A task template with its placeholders filled. `{{input}}` as written when the run's starter wrote it (the owner's
 * own words), fenced when it is a model's (a nested workflow's input); `{{previous}}`, a model's answer, always fenced.
 */
export function renderTask(options: {
  template: string;
  input: string;
  inputTrusted: boolean;
  previous?: string;
}): string {
  const untrusted: Record<string, string> = {};
  if (!options.inputTrusted) untrusted.input = options.input;
  if (options.previous !== undefined) untrusted.previous = options.previous;
  const fenced = Object.keys(untrusted).length > 0 ? fenceUntrusted(untrusted, { maxChars: 24_000 }) : undefined;
  const blockOf = (name: string) => {
    const marker = fenced?.marker ?? '';
    const start = fenced?.text.indexOf(`<<<${marker} ${name}>>>`) ?? -1;
    const endTag = `<<<END ${marker} ${name}>>>`;
    const end = fenced?.text.indexOf(endTag, start) ?? -1;
    return start === -1 || end === -1 ? '' : (fenced?.text.slice(start, end + endTag.length) ?? '');
  };
  const text = options.template.replace(/\{\{\s*(input|previous)\s*\}\}/g, (_, name: string) => {
    if (name === 'input') return options.inputTrusted ? options.input : blockOf('input');
    return blockOf('previous');
  });
  return fenced ? `${fenced.instruction}\n\n${text}` : text;
}

function renderBoard(entries: readonly BlackboardEntry[]): string {
  return entries.map((entry) => `[${entry.who}, ${entry.at}]\n${entry.what}`).join('\n\n');
}

async function createRunNote(options: RunWorkflowOptions): Promise<void> {
  const { notes, run, workflow } = options;
  try {
    await notes.create(runNotePath(run), {
      data: {
        type: 'workflow-run',
        run,
        workflow: workflow.name,
        topology: workflow.topology,
        status: 'running',
        input: options.input,
        started: new Date().toISOString(),
        blackboard: blackboardPath(run),
        tasks: [options.taskId],
      },
      body: `# ${workflow.name}: ${run}\n\nRunning: ${workflow.topology} workflow \`${workflow.name}\` (${workflow.file}). The blackboard is [${blackboardPath(run)}](../blackboards/${run}.md).\n`,
    });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    // A re-run after a crash: the note is there; its task list gains this attempt's task if it differs.
    await addRunTasks({ notes, run, taskIds: [options.taskId] });
  }
}

/** Adds task ids to the run note's `tasks:`, under the note's lock, each once. */
async function addRunTasks(options: { notes: NoteStore; run: string; taskIds: readonly string[] }): Promise<void> {
  await options.notes.update(runNotePath(options.run), {
    change: (current) => {
      const tasks = Array.isArray(current.data.tasks)
        ? current.data.tasks.filter((each) => typeof each === 'string')
        : [];
      const added = options.taskIds.filter((taskId) => !tasks.includes(taskId));
      return added.length === 0 ? {} : { set: { tasks: [...tasks, ...added] } };
    },
  });
}

async function finishRunNote(options: {
  notes: NoteStore;
  run: string;
  workflow: Workflow;
  result: WorkflowRunResult;
}): Promise<void> {
  const { workflow, result, run } = options;
  const summary =
    result.status === 'done'
      ? `Done: ${workflow.topology} workflow \`${workflow.name}\` (${workflow.file}).`
      : result.status === 'stopped'
        ? `Stopped: ${workflow.topology} workflow \`${workflow.name}\` (${workflow.file}): ${result.reason ?? 'by a person'}.`
        : `Failed: ${workflow.topology} workflow \`${workflow.name}\` (${workflow.file}): ${result.reason ?? 'no reason given'}.`;
  await options.notes.update(runNotePath(run), {
    set: {
      status: result.status,
      finished: new Date().toISOString(),
      ...(result.reason === undefined ? {} : { reason: result.reason }),
    },
    // The task list as the note holds it now (under its lock): each task of the run, for `assistant task show`.
    change: (current) => {
      const tasks = Array.isArray(current.data.tasks) ? current.data.tasks.map(String) : [];
      return {
        body: [
          `# ${workflow.name}: ${run}`,
          '',
          `${summary} Every step is on the blackboard [${blackboardPath(run)}](../blackboards/${run}.md).`,
          '',
          `Tasks of the run (\`assistant task show ID\`): ${tasks.map((taskId) => `\`${taskId}\``).join(', ')}.`,
          '',
          '## Output',
          '',
          result.output,
          '',
        ].join('\n'),
      };
    },
  });
}
