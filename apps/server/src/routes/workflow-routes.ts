import {
  loadPersonas,
  loadWorkflows,
  maxWorkflowInputChars,
  personaNamesOf,
  readWorkflowRun,
  runIdPattern,
  startWorkflowRun,
  type Workflow,
  workflowNamePattern,
} from '@assistant/agents';
import { AssistantError } from '@assistant/errors';
import type { NoteStore } from '@assistant/notes';
import type { TaskQueue } from '@assistant/queue';
import * as z from 'zod';
import { errorBodySchema, type RouteTable } from '../route-table.ts';
import type { AssistantServer } from '../server-type.ts';

export interface WorkflowRoutesOptions {
  /** The queue runs are enqueued on (QUEUE_UNAVAILABLE while its backend is down). */
  queue: () => TaskQueue;
  notes: NoteStore;
  /** The folder of config.yaml: its `agents/` and `personas/`, read afresh on each request (the owner edits them). */
  configDir: string;
  notesRoot: string;
}

const nameParams = z.strictObject({
  name: z.string().regex(workflowNamePattern, { error: 'expected a workflow name such as review (agents/NAME.yaml)' }),
});
const runParams = z.strictObject({
  run: z.string().regex(runIdPattern, { error: 'expected a run id such as run-20261128-a1b2c3d4e5' }),
});
const runBody = z.strictObject({ input: z.string().max(maxWorkflowInputChars) });

const workflowView = z.looseObject({ name: z.string(), topology: z.string(), file: z.string() });
const problemView = z.looseObject({ file: z.string(), key: z.string(), message: z.string(), workflow: z.string() });

/**
 * `/api/workflows`: the workflows of agents/*.yaml with their problems, starting a run (docs/agents.md#topologies-and-workflows),
 * and a run's note. A run is a `system.workflow` task; this server only enqueues it.
 */
export function registerWorkflowRoutes(app: AssistantServer, routes: RouteTable, options: WorkflowRoutesOptions): void {
  const load = async () => {
    const personas = await loadPersonas({ configDir: options.configDir, notesRoot: options.notesRoot });
    return loadWorkflows({ configDir: options.configDir, personas: personaNamesOf(personas) });
  };

  routes.add(app, {
    method: 'GET',
    url: '/api/workflows',
    tag: 'workflows',
    summary: 'The workflows and their problems',
    description:
      '`workflows`: each workflow of agents/*.yaml that loads, with its topology and personas; `problems`: each problem of a manifest that does not, with file, line and key.',
    responses: {
      200: {
        description: '`workflows` and `problems`',
        schema: z.object({ workflows: z.array(workflowView), problems: z.array(problemView) }),
      },
    },
    handler: async () => {
      const { workflows, problems } = await load();
      return { workflows: [...workflows.values()].map(workflowJson), problems };
    },
  });

  routes.add(app, {
    method: 'POST',
    url: '/api/workflows/:name/runs',
    tag: 'workflows',
    summary: 'Start a run of a workflow',
    description:
      'Checks the workflow and enqueues `system.workflow {workflow, input, run}`; answers at once with the run id and the task id. Follow the task with `GET /api/tasks/:id/events`; the run note is `GET /api/workflows/runs/:run`.',
    params: nameParams,
    body: runBody,
    responses: {
      202: { description: '`run` and `task`', schema: z.object({ run: z.string(), task: z.string() }) },
      400: { description: 'BAD_REQUEST: not a workflow name, or no `input`', schema: errorBodySchema },
      404: { description: 'WORKFLOW_UNKNOWN: no agents/NAME.yaml', schema: errorBodySchema },
      409: {
        description: 'WORKFLOW_INVALID: the manifest has problems (each with file and line)',
        schema: errorBodySchema,
      },
    },
    handler: async ({ params, body, reply }) => {
      const started = await startWorkflowRun({
        queue: options.queue(),
        configDir: options.configDir,
        notesRoot: options.notesRoot,
        workflow: params.name,
        input: body.input,
        source: 'api',
      });
      return reply.code(202).send({ run: started.run, task: started.task });
    },
  });

  routes.add(app, {
    method: 'GET',
    url: '/api/workflows/runs/:run',
    tag: 'workflows',
    summary: "A run's note",
    description:
      'The run note `notes/agents/runs/<run>.md`: `data` (workflow, topology, status, input, started, finished, tasks: every task of the run, blackboard) and, once it ended, `output`.',
    params: runParams,
    responses: {
      200: {
        description: '`path`, `data` and `output`',
        schema: z.object({ path: z.string(), data: z.record(z.string(), z.unknown()), output: z.string().optional() }),
      },
      400: { description: 'BAD_REQUEST: not a run id', schema: errorBodySchema },
      404: {
        description: 'NOT_FOUND: no such run (yet: the worker writes the note when it starts the run)',
        schema: errorBodySchema,
      },
    },
    handler: async ({ params }) => {
      const run = await readWorkflowRun({ notes: options.notes, run: params.run });
      if (!run) {
        throw new AssistantError('NOT_FOUND', `no run note agents/runs/${params.run}.md`, {
          hint: 'a run has a note once a worker starts it; until then its task is pending',
        });
      }
      return run;
    },
  });
}

function workflowJson(workflow: Workflow): Record<string, unknown> {
  const base = {
    name: workflow.name,
    topology: workflow.topology,
    file: workflow.file,
    ...(workflow.description === undefined ? {} : { description: workflow.description }),
  };
  switch (workflow.topology) {
    case 'pipeline':
      return {
        ...base,
        steps: workflow.steps.map((step) =>
          step.kind === 'agent' ? { persona: step.persona, task: step.task } : { workflow: step.workflow },
        ),
      };
    case 'star':
      return { ...base, supervisor: workflow.supervisor, workers: workflow.workers, task: workflow.task };
    case 'mesh':
      return {
        ...base,
        agents: workflow.agents,
        task: workflow.task,
        max_rounds: workflow.maxRounds,
        ...(workflow.stopWhen === undefined ? {} : { stop_when: workflow.stopWhen }),
      };
  }
}
