import { rerouteTask } from '@assistant/actions';
import { AssistantError } from '@assistant/errors';
import type { IntegrationRegistry } from '@assistant/integration-host';
import type { HumanLog, NoteStore } from '@assistant/notes';
import {
  bulkTaskActions,
  jsonValueSchema,
  runBulkTaskAction,
  type TaskEntry,
  type TaskQueue,
  type TaskRecord,
  taskFileData,
  taskIdPattern,
  taskStates,
  taskTypePattern,
} from '@assistant/queue';
import * as z from 'zod';
import type { DataPaths } from '../data-paths.ts';
import { errorBodySchema, type RouteTable } from '../route-table.ts';
import type { ServerCatalog } from '../server-catalog.ts';
import type { AssistantServer } from '../server-type.ts';

/** Ids are checked before anything touches the disk: `..`, `/` and friends never reach a path. */
export const taskIdParams = z.strictObject({
  id: z.string().regex(taskIdPattern, { error: 'expected a task id: 26 lower-case letters and digits' }),
});

const listQuery = z.strictObject({
  state: z.enum(taskStates).optional(),
  type: z
    .string()
    .regex(/^[a-z0-9_*-]+(\.[a-z0-9_*-]+)*$/, { error: 'expected a task type such as email.inbox.check or service.*' })
    .optional(),
  limit: z.coerce.number().int().min(1).max(1_000).default(100),
});

const createBody = z.strictObject({
  type: z.string().regex(taskTypePattern, { error: 'expected a task type such as system.echo' }),
  payload: jsonValueSchema.optional(),
  priority: z.int().min(0).max(9).optional(),
});

/** At most this many tasks per bulk request: a page of failed tasks is 50; the CLI sends batches of this size. */
const bulkTaskLimit = 1_000;
const bulkBody = z.strictObject({
  action: z.enum(bulkTaskActions),
  ids: z.array(z.string().max(100)).min(1).max(bulkTaskLimit),
});
const bulkResult = z.object({
  action: z.enum(bulkTaskActions),
  done: z.array(z.object({ id: z.string(), path: z.string().optional() })),
  refused: z.array(z.object({ id: z.string(), reason: z.string() })),
});

const listedTask = z.object({
  id: z.string().nullable(),
  type: z.string().nullable(),
  state: z.enum(taskStates),
  priority: z.int().nullable(),
  ready_at: z.string().nullable(),
  path: z.string(),
});
const createdTask = z.object({ id: z.string(), state: z.literal('pending'), path: z.string() });
const taskView = z.looseObject({ id: z.string(), type: z.string(), state: z.enum(taskStates), path: z.string() });

export interface TaskRoutesOptions {
  queue: () => TaskQueue;
  /** Shows file paths relative to the data directory. */
  paths: DataPaths;
  catalog: ServerCatalog;
  notes: NoteStore;
  humanLog: HumanLog;
  registry?: IntegrationRegistry;
}

/** `/api/tasks`: list, read, add and retry tasks. Manual additions bypass the policies: a person asked. */
export function registerTaskRoutes(app: AssistantServer, routes: RouteTable, options: TaskRoutesOptions): void {
  routes.add(app, {
    method: 'GET',
    url: '/api/tasks',
    tag: 'tasks',
    summary: 'List tasks',
    description:
      'From file names alone: pending and active in run order, then done and failed newest first. `type` is exact or a pattern with `*`.',
    query: listQuery,
    responses: {
      200: { description: 'the tasks', schema: z.object({ tasks: z.array(listedTask) }) },
      400: { description: 'a bad query', schema: errorBodySchema },
    },
    handler: async ({ query }) => {
      const entries = await options.queue().list({
        ...(query.state ? { state: query.state } : {}),
        ...(query.type ? { type: query.type } : {}),
        limit: query.limit,
      });
      return { tasks: entries.map((entry) => listEntry(entry)) };
    },
  });

  routes.add(app, {
    method: 'GET',
    url: '/api/tasks/:id',
    tag: 'tasks',
    summary: 'Read one task',
    description:
      'The fields of its file (snake_case, as on disk) plus `state` and `path`. A file that cannot be read as a task answers with `problem`.',
    params: taskIdParams,
    responses: {
      200: { description: 'the task', schema: taskView },
      400: { description: 'not a task id', schema: errorBodySchema },
      404: { description: 'no such task', schema: errorBodySchema },
    },
    handler: async ({ params }) => {
      const record = await options.queue().get(params.id);
      if (!record) throw new AssistantError('NOT_FOUND', `no task with id ${params.id}`);
      return taskRecordView(record, options.paths);
    },
  });

  routes.add(app, {
    method: 'POST',
    url: '/api/tasks',
    tag: 'tasks',
    summary: 'Add a task',
    description: 'Source `api`: dedup and rate limits do not apply. The type must be one an integration handles.',
    body: createBody,
    responses: {
      201: { description: 'the task is pending', schema: createdTask },
      400: { description: 'a bad body or an unknown task type', schema: errorBodySchema },
      413: { description: 'the task would exceed queue.max_task_bytes', schema: errorBodySchema },
    },
    handler: async ({ body, reply }) => {
      if (!options.catalog.hasTaskType(body.type)) {
        const known = options.catalog.taskTypes();
        throw new AssistantError(
          'BAD_REQUEST',
          `no integration handles task type \`${body.type}\`; known: ${known.slice(0, 20).join(', ')}${known.length > 20 ? ', …' : ''}`,
        );
      }
      const outcome = await options.queue().enqueue({
        type: body.type,
        payload: body.payload ?? null,
        ...(body.priority === undefined ? {} : { priority: body.priority }),
        source: 'api',
        policies: false,
      });
      if (outcome.status !== 'enqueued')
        throw new Error(`unexpected ${outcome.status}: manual enqueues bypass policies`);
      return reply.code(201).send({ id: outcome.task.id, state: 'pending', path: outcome.location });
    },
  });

  routes.add(app, {
    method: 'POST',
    url: '/api/tasks/:id/retry',
    tag: 'tasks',
    summary: 'Retry a failed task',
    description:
      'failed/ → pending/, ready now, with a fresh set of attempts; the history of earlier attempts is kept.',
    params: taskIdParams,
    responses: {
      200: { description: 'the task, pending again', schema: taskView },
      400: { description: 'not a task id, or a failed file that cannot be read as a task', schema: errorBodySchema },
      404: { description: 'no such task', schema: errorBodySchema },
      409: { description: 'the task is not in failed/', schema: errorBodySchema },
    },
    handler: async ({ params }) => taskRecordView(await options.queue().retry(params.id), options.paths),
  });

  routes.add(app, {
    method: 'POST',
    url: '/api/tasks/bulk',
    tag: 'tasks',
    summary: 'Retry or delete several failed tasks',
    description:
      "Each id in turn: `retry` moves a failed task to pending/ as `POST /api/tasks/:id/retry` does; `delete` removes it. Only tasks still in failed/ are touched; every other id is listed under `refused` with the reason, and the rest go ahead. The dashboard's Tasks page and `assistant task retry --state failed` do the same.",
    body: bulkBody,
    responses: {
      200: { description: 'what was done, and what was refused and why', schema: bulkResult },
      400: { description: 'a bad body', schema: errorBodySchema },
    },
    handler: async ({ body }) => ({
      action: body.action,
      ...(await runBulkTaskAction({ queue: options.queue(), action: body.action, ids: body.ids })),
    }),
  });

  routes.add(app, {
    method: 'POST',
    url: '/api/tasks/:id/reroute',
    tag: 'tasks',
    summary: "Deliver a done service task's result again",
    description:
      'Runs the `on_result` routes of a service task in done/ again (a note is rewritten, not duplicated); for when a route failed the first time.',
    params: taskIdParams,
    responses: {
      200: {
        description: 'where the result went',
        schema: z.object({ id: z.string(), notes: z.array(z.string()), enqueued: z.array(z.string()) }),
      },
      400: { description: 'not a task id', schema: errorBodySchema },
      404: { description: 'no such task', schema: errorBodySchema },
      409: { description: 'not a done service task', schema: errorBodySchema },
    },
    handler: async ({ params }) => ({
      id: params.id,
      ...(await rerouteTask({
        id: params.id,
        queue: options.queue(),
        notes: options.notes,
        humanLog: options.humanLog,
        ...(options.registry ? { registry: options.registry } : {}),
      })),
    }),
  });
}

/** A task as `GET /api/tasks` lists it (and the MCP server's `list_tasks`). */
export function listEntry(entry: TaskEntry) {
  return {
    id: entry.name?.id ?? null,
    type: entry.name?.type ?? null,
    state: entry.state,
    priority: entry.name?.priority ?? null,
    ready_at: entry.name ? new Date(entry.name.readyAtMs).toISOString() : null,
    path: entry.location,
  };
}

/**
 * A task as the API (and the MCP server's `show_task`) shows it. The error's stack stays in the file: it describes our internals, not the task. So do
 * the workers' ids (host name and pid): they describe the machine, and the path is relative to the data directory.
 */
export function taskRecordView(record: TaskRecord, paths: DataPaths): Record<string, unknown> {
  const shownPath = record.location;
  if (!record.task) {
    return {
      id: record.name?.id ?? null,
      type: record.name?.type ?? null,
      state: record.state,
      path: shownPath,
      problem: paths.scrub(record.problem ?? 'the file cannot be read as a task'),
    };
  }
  const data = taskFileData(record.task);
  delete data.worker;
  // Error messages may name a file the task touched: shown relative to the data directory, like `path`. The payload
  // and result are the task's own data and are shown as they are.
  if (record.task.error) data.error = { type: record.task.error.type, message: paths.scrub(record.task.error.message) };
  if (Array.isArray(data.history)) {
    data.history = record.task.history.map((attempt) => ({
      attempt: attempt.attempt,
      started_at: attempt.startedAt,
      finished_at: attempt.finishedAt,
      error: { type: attempt.error.type, message: paths.scrub(attempt.error.message) },
    }));
  }
  return { ...data, state: record.state, path: shownPath };
}
