import {
  agentsRoot,
  blackboardPath,
  childrenDir,
  listIds,
  loadWorkflows,
  readChildRecord,
  runIdPattern,
  runWorkflow,
  type Workflow,
  type WorkflowProblem,
  workflowNamePattern,
  workflowPersonas,
} from '@assistant/agents';
import { type HandlerContext, UnrecoverableError } from '@assistant/sdk';
import * as z from 'zod';
import { followRunSteering } from './run-steering.ts';

const payloadSchema = z.strictObject({
  workflow: z.string().regex(workflowNamePattern, 'a workflow name: a-z, 0-9, - and _ (the file agents/NAME.yaml)'),
  input: z.string().max(100_000),
  run: z.string().regex(runIdPattern, 'a run id: run-<yyyymmdd>-<4 to 32 of a-z and 0-9>').optional(),
});

/**
 * `system.workflow`: runs the workflow `agents/<workflow>.yaml` (beside config.yaml) on `input`, as run `run`
 * (`{workflow, input, run?}`; docs/agents.md#topologies-and-workflows). Its agents are children of this task, each its own
 * `system.agent` task; the run note `notes/agents/runs/<run>.md` lists every task of the run and ends with the
 * output, the blackboard `notes/agents/blackboards/<run>.md` holds every answer. A task cut short (a worker killed)
 * runs again and continues where it was.
 */
export async function runWorkflowTask(context: HandlerContext) {
  const checked = payloadSchema.safeParse(context.payload);
  if (!checked.success) {
    const issue = checked.error.issues[0];
    throw new UnrecoverableError(
      `system.workflow expects {"workflow": "NAME", "input": "…", "run"?: "run-…"}; ${issue?.path.join('.') || 'payload'}: ${issue?.message}`,
    );
  }
  const { workflow: name, input } = checked.data;
  const agents = context.agents;
  if (agents === undefined) {
    throw new UnrecoverableError(
      'system.workflow needs sub-agents (context.agents), which only the builtin system integration gets from a worker; this worker gave none',
    );
  }
  const run = checked.data.run ?? runIdOf(context.task);
  const { workflows, problems } = await loadWorkflows({ configDir: context.configDir });
  const workflow = workflows.get(name);
  if (workflow === undefined) throw notRunnable({ name, workflows, problems });
  // Every persona is checked before anything is spawned: a typo in step 3 must not cost steps 1 and 2.
  for (const persona of workflowPersonas(workflow, workflows)) {
    try {
      await agents.persona(persona);
    } catch (error) {
      throw new UnrecoverableError(
        `WORKFLOW_INVALID: ${workflow.file}: ${error instanceof Error ? error.message : String(error)}`,
      );
    }
  }
  const root = agentsRoot(context.dataDir);
  const steering = followRunSteering(agents);
  const result = await runWorkflow({
    workflow,
    workflows,
    input,
    // The owner typed it (`assistant run`, the API): as written. A hook, an automation or a chat model may have put a
    // mail's words in it: fenced as untrusted for every agent.
    inputTrusted: context.task.source === 'cli' || context.task.source === 'api',
    run,
    taskId: context.task.id,
    notes: context.notes,
    subagents: agents.subagents({ label: 'system.workflow', blackboard: blackboardPath(run), run }),
    signal: context.signal,
    lastAttempt: context.task.attempts >= context.task.maxAttempts,
    descendantTasks: (taskId) => descendantTasks(root, taskId),
    stopped: steering.stopped,
    whilePaused: steering.whilePaused,
  }).finally(() => steering.close());
  await context.log.human(
    `workflow ${name} ${result.status === 'done' ? 'done' : result.status === 'stopped' ? 'stopped' : 'FAILED'}: run ${run}`,
    {
      reason: result.reason ?? `system.workflow ran ${workflow.topology} workflow ${name}`,
    },
  );
  return { ...result };
}

/** A run id from the task (an enqueuer that gave none): the same on every attempt of the task. */
function runIdOf(task: { id: string; createdAt: string }): string {
  const date = task.createdAt.slice(0, 10).replaceAll('-', '');
  const tail = task.id
    .toLowerCase()
    .replace(/[^a-z0-9]/g, '')
    .slice(-16);
  return `run-${date}-${tail.padStart(4, '0')}`;
}

function notRunnable(context: {
  name: string;
  workflows: ReadonlyMap<string, Workflow>;
  problems: readonly WorkflowProblem[];
}): UnrecoverableError {
  const own = context.problems.filter((problem) => problem.workflow === context.name);
  if (own.length > 0) {
    const listed = own.map(
      (problem) =>
        `${problem.file}${problem.line === undefined ? '' : `:${problem.line}`}: ${problem.key}: ${problem.message}`,
    );
    return new UnrecoverableError(`WORKFLOW_INVALID: workflow ${context.name} has problems: ${listed.join('; ')}`);
  }
  const names = [...context.workflows.keys()];
  return new UnrecoverableError(
    `WORKFLOW_UNKNOWN: no workflow ${context.name} (agents/${context.name}.yaml beside config.yaml); ${names.length > 0 ? `the workflows are ${names.join(', ')}` : 'there are none'}`,
  );
}

/** The task ids under a child of the runner (a supervisor's workers and theirs), from their spawn records. */
async function descendantTasks(root: string, taskId: string): Promise<string[]> {
  const found: string[] = [];
  const visit = async (parent: string, depth: number) => {
    // Depth is capped by the limits (3 by default); the bound only guards against a hand-made loop of records.
    if (depth > 10) return;
    for (const id of await listIds(childrenDir(root, parent))) {
      const record = await readChildRecord(root, parent, id);
      if (record?.task_id === undefined) continue;
      found.push(record.task_id);
      await visit(record.task_id, depth + 1);
    }
  };
  await visit(taskId, 0);
  return found;
}
