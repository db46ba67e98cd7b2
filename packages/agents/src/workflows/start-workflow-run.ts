import { AssistantError } from '@assistant/errors';
import type { NoteStore } from '@assistant/notes';
import type { TaskQueue, TaskSource } from '@assistant/queue';
import { type LoadPersonasResult, loadPersonas } from '../personas/load-personas.ts';
import { loadWorkflows } from './load-workflows.ts';
import { newRunId, runNotePath } from './run-workflow.ts';
import type { Workflow, WorkflowProblem, WorkflowReplyTo, WorkflowTaskPayload } from './workflow-types.ts';

/** The longest input a run takes (what `system.workflow` accepts). */
export const maxWorkflowInputChars = 100_000;

export interface StartWorkflowRunOptions {
  /** Adds the `system.workflow` task. */
  queue: Pick<TaskQueue, 'enqueue'>;
  /** The folder of config.yaml (its `agents/` and `personas/`). */
  configDir: string;
  /** The notes root: personas may be notes too. */
  notesRoot: string;
  workflow: string;
  input: string;
  /** @default 'cli' */
  source?: TaskSource;
  /** A conversation that gets the run's answer when it ends (a run started from chat). @default none */
  replyTo?: WorkflowReplyTo;
}

/**
 * Checks a workflow and enqueues a run of it (`system.workflow {workflow, input, run}`), as `assistant run` and `POST
 * /api/workflows/:name/runs` do; a hook or an automation enqueues the same task itself. Throws WORKFLOW_UNKNOWN for a
 * name with no manifest and WORKFLOW_INVALID (each problem with file, line and key) for one with problems, so a run
 * that cannot work is refused before anything is queued.
 */
export async function startWorkflowRun(
  options: StartWorkflowRunOptions,
): Promise<{ run: string; task: string; workflow: Workflow }> {
  if (options.input.length > maxWorkflowInputChars) {
    throw new AssistantError(
      'WORKFLOW_INVALID',
      `the input is ${options.input.length} characters; a run takes at most ${maxWorkflowInputChars}`,
      { hint: 'put long material in a note and name the note in the input' },
    );
  }
  const { workflow } = await checkedWorkflow(options);
  const run = newRunId();
  const payload: WorkflowTaskPayload = {
    workflow: workflow.name,
    input: options.input,
    run,
    ...(options.replyTo === undefined ? {} : { reply_to: { ...options.replyTo } }),
  };
  const outcome = await options.queue.enqueue({
    type: 'system.workflow',
    payload: { ...payload },
    priority: 2,
    source: options.source ?? 'cli',
    integration: 'system',
    policies: false,
  });
  if (outcome.status !== 'enqueued')
    throw new Error(`unexpected ${outcome.status}: a run is enqueued without policies`);
  return { run, task: outcome.task.id, workflow };
}

/** A workflow by name with every persona it names known; WORKFLOW_UNKNOWN or WORKFLOW_INVALID otherwise. */
export async function checkedWorkflow(options: {
  configDir: string;
  notesRoot: string;
  workflow: string;
}): Promise<{ workflow: Workflow }> {
  const personas = await loadPersonas({ configDir: options.configDir, notesRoot: options.notesRoot });
  const { workflows, problems } = await loadWorkflows({
    configDir: options.configDir,
    personas: personaNamesOf(personas),
  });
  const workflow = workflows.get(options.workflow);
  if (workflow) return { workflow };
  const own = problems.filter((problem) => problem.workflow === options.workflow);
  if (own.length > 0) {
    throw new AssistantError(
      'WORKFLOW_INVALID',
      `workflow ${options.workflow} has problems:\n${own.map(formatWorkflowProblem).join('\n')}`,
      { hint: '`assistant config check` lists every problem of the configuration' },
    );
  }
  const names = [...workflows.keys()];
  throw new AssistantError('WORKFLOW_UNKNOWN', `no workflow ${JSON.stringify(options.workflow)}`, {
    hint:
      names.length > 0
        ? `the workflows are ${names.join(', ')} (agents/NAME.yaml beside config.yaml)`
        : 'there are none: write agents/NAME.yaml beside config.yaml (docs/agents.md#topologies-and-workflows)',
  });
}

/** `agents/review.yaml:4:5: steps[1].persona: unknown persona \`writter\`` plus its hint. */
export function formatWorkflowProblem(problem: WorkflowProblem): string {
  const where = problem.line === undefined ? problem.file : `${problem.file}:${problem.line}:${problem.col ?? 1}`;
  const head = `${where}: ${problem.key === '(document)' ? '' : `${problem.key}: `}${problem.message}`;
  return problem.hint ? `${head} (${problem.hint})` : head;
}

/** A run's note as the API and `assistant run --wait` show it: its frontmatter, and its output once it has one. */
export async function readWorkflowRun(options: {
  notes: NoteStore;
  run: string;
}): Promise<{ path: string; data: Record<string, unknown>; output?: string } | undefined> {
  const notePath = runNotePath(options.run);
  const note = await options.notes.read(notePath);
  if (!note) return undefined;
  const marker = '\n## Output\n\n';
  const at = note.body.indexOf(marker);
  return {
    path: notePath,
    data: note.data,
    ...(at === -1 ? {} : { output: note.body.slice(at + marker.length).replace(/\n$/, '') }),
  };
}

/**
 * The names a workflow may use: every persona that loads, and every persona file that has problems of its own (those
 * are reported at the persona's file, once, not again as an unknown persona at each workflow naming it).
 */
export function personaNamesOf(loaded: LoadPersonasResult): Set<string> {
  const names = new Set(loaded.personas.keys());
  for (const problem of loaded.problems) {
    const name = /(?:^|\/)personas\/([^/]+)\.md$/.exec(problem.file)?.[1];
    if (name !== undefined) names.add(name);
  }
  return names;
}
