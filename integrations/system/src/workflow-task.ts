import {
  agentsRoot,
  blackboardPath,
  childrenDir,
  isTaskTimeout,
  listIds,
  loadWorkflows,
  readChildRecord,
  runIdPattern,
  runWorkflow,
  type Workflow,
  type WorkflowProblem,
  type WorkflowRunResult,
  workflowNamePattern,
  workflowPersonas,
} from '@assistant/agents';
import { type HandlerContext, UnrecoverableError } from '@assistant/sdk';
import * as z from 'zod';
import { followRunSteering } from './run-steering.ts';
import { replyToConversation } from './workflow-reply.ts';

const payloadSchema = z.strictObject({
  workflow: z.string().regex(workflowNamePattern, 'a workflow name: a-z, 0-9, - and _ (the file agents/NAME.yaml)'),
  input: z.string().max(100_000),
  run: z.string().regex(runIdPattern, 'a run id: run-<yyyymmdd>-<4 to 32 of a-z and 0-9>').optional(),
  reply_to: z
    .strictObject({
      conversation: z.string().regex(/^[a-z0-9-]{1,64}$/, 'a conversation id: 1 to 64 of a-z, 0-9 and -'),
      instance: z
        .string()
        .regex(/^[a-z][a-z0-9_-]*$/, 'a chat instance name: a-z first, then a-z, 0-9, _ and -')
        .optional(),
    })
    .optional(),
});

/**
 * `system.workflow`: runs the workflow `agents/<workflow>.yaml` (beside config.yaml) on `input`, as run `run`
 * (`{workflow, input, run?, reply_to?}`; docs/agents.md#topologies-and-workflows). Its agents are children of this task, each its own
 * `system.agent` task; the run note `notes/agents/runs/<run>.md` lists every task of the run and ends with the
 * output, the blackboard `notes/agents/blackboards/<run>.md` holds every answer. A task cut short (a worker killed)
 * runs again and continues where it was. With `reply_to` (a run started from chat), the run's end (done, stopped,
 * or failed for good) is posted into that conversation as a `chat.notify` message whose id comes from the run id.
 */
export async function runWorkflowTask(context: HandlerContext) {
  const checked = payloadSchema.safeParse(context.payload);
  if (!checked.success) {
    const issue = checked.error.issues[0];
    throw new UnrecoverableError(
      `system.workflow expects {"workflow": "NAME", "input": "…", "run"?: "run-…", "reply_to"?: {"conversation": "c…"}}; ${issue?.path.join('.') || 'payload'}: ${issue?.message}`,
    );
  }
  const payload = checked.data;
  const run = payload.run ?? runIdOf(context.task);
  const replyTo = payload.reply_to;
  if (replyTo === undefined) return (await runChecked(context, { ...payload, run })).result;
  let ran: Awaited<ReturnType<typeof runChecked>>;
  try {
    ran = await runChecked(context, { ...payload, run });
  } catch (error) {
    // The run ended for good (no attempt follows, and no shutdown cut it short to resume later): the conversation
    // waiting for the answer hears that. A failure the queue retries says nothing yet; the next attempt answers. A
    // timeout is a failure like any other (the worker aborts the signal with a TimeoutError), a shutdown is not.
    const timedOut = context.signal.aborted && isTaskTimeout(context.signal.reason);
    const final =
      (!context.signal.aborted || timedOut) &&
      (error instanceof UnrecoverableError || context.task.attempts >= context.task.maxAttempts);
    if (final) {
      await replyToConversation({
        context,
        replyTo,
        reply: {
          workflow: payload.workflow,
          run,
          status: 'failed',
          output: '',
          reason: timedOut
            ? 'the run took longer than the task timeout of system.workflow, on its last attempt (`queue.policies.overrides` in config.yaml sets it)'
            : error instanceof Error
              ? error.message
              : String(error),
        },
      });
    }
    throw error;
  }
  // Asked for after the run note is finished, and again by a runner that crashed in between and ran again: the
  // message id (from the run id) makes that one message.
  await replyToConversation({
    context,
    replyTo,
    reply: { ...ran.result, workflow: payload.workflow, topology: ran.topology },
  });
  return ran.result;
}

/** The run of a checked payload: its result, and the topology of its workflow. */
async function runChecked(
  context: HandlerContext,
  payload: { workflow: string; input: string; run: string },
): Promise<{ result: WorkflowRunResult; topology: string }> {
  const { workflow: name, input, run } = payload;
  const agents = context.agents;
  if (agents === undefined) {
    throw new UnrecoverableError(
      'system.workflow needs sub-agents (context.agents), which only the builtin system integration gets from a worker; this worker gave none',
    );
  }
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
  return { result: { ...result }, topology: workflow.topology };
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
