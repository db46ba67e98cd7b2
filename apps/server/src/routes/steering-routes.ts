import { AssistantError } from '@assistant/errors';
import type { TaskQueue, TaskState } from '@assistant/queue';
import { ControlFiles, steeringActions } from '@assistant/steering';
import * as z from 'zod';
import { errorBodySchema, type RouteTable } from '../route-table.ts';
import type { AssistantServer } from '../server-type.ts';
import { openEventStream } from './event-stream.ts';
import { taskIdParams } from './task-routes.ts';

/** How often a task's event stream looks at its control files (steps, clarifications) for new lines. */
const controlPollMs = 100;

/**
 * How often a task's event stream also reads the task's state from the queue. The queue's events wake it at once;
 * this is the fallback for one they never deliver (a watcher error, an inotify overflow), which would otherwise hold
 * the stream open forever.
 */
const statePollMs = 1_000;

export interface SteeringRoutesOptions {
  queue: () => TaskQueue;
  /** `data/control`. */
  controlRoot: string;
}

const steerBody = z.strictObject({
  action: z.enum(steeringActions),
  message: z.string().min(1).max(20_000).optional(),
  reason: z.string().max(2_000).optional(),
  clarification_id: z.string().min(1).optional(),
});

/** How long a steering request waits for the worker to apply it before answering 202; `ask` waits for its answer. */
const applyWaitMs = 5_000;
const askWaitMs = 120_000;

/** A steering request as the API and the dashboard take it. */
export type SteerInput = z.infer<typeof steerBody>;

/** What became of a steering request: applied or refused by the worker (with the answer to `ask`), or still queued. */
export type SteerOutcome =
  | { request: string; status: 'queued' }
  | { request: string; status: 'applied' | 'refused'; answer?: string; message?: string };

/**
 * Steers a pending or active task: writes the request to `data/control/<id>/` and waits for the worker to apply it
 * (for `ask`, for the answer). NOT_FOUND for no such task, CONFLICT once it has finished, BAD_REQUEST for a request
 * that lacks its message or clarification id. Shared by `POST /api/tasks/:id/steer` and the dashboard's task page.
 */
export async function steerTask(options: {
  queue: TaskQueue;
  controlRoot: string;
  id: string;
  body: SteerInput;
  /** Who asked: `api`, `dashboard`. */
  source: string;
}): Promise<SteerOutcome> {
  const { id, body } = options;
  const record = await options.queue.get(id);
  if (!record) throw new AssistantError('NOT_FOUND', `no task with id ${id}`);
  if (record.state === 'done' || record.state === 'failed') {
    throw new AssistantError('CONFLICT', `task ${id} is ${record.state}; only pending or active tasks can be steered`);
  }
  const files = new ControlFiles({ root: options.controlRoot, taskId: id });
  let request: Awaited<ReturnType<ControlFiles['request']>>;
  try {
    request = await files.request({ ...body, source: options.source } as Parameters<ControlFiles['request']>[0]);
  } catch (error) {
    if (error instanceof z.ZodError) {
      const issue = error.issues[0];
      throw new AssistantError('BAD_REQUEST', `body.${issue?.path.join('.')}: ${issue?.message}`);
    }
    throw error;
  }
  const outcome = await files.waitForOutcome(request.id, {
    timeoutMs: body.action === 'ask' ? askWaitMs : applyWaitMs,
  });
  if (!outcome) return { request: request.id, status: 'queued' };
  return {
    request: request.id,
    status: outcome.status,
    ...(outcome.answer === undefined ? {} : { answer: outcome.answer }),
    ...(outcome.message === undefined ? {} : { message: outcome.message }),
  };
}

/** `POST /api/tasks/:id/steer` and `GET /api/tasks/:id/events`: steer work that runs in the worker, and watch it. */
export function registerSteeringRoutes(app: AssistantServer, routes: RouteTable, options: SteeringRoutesOptions): void {
  routes.add(app, {
    method: 'POST',
    url: '/api/tasks/:id/steer',
    tag: 'steering',
    summary: 'Steer a running (or pending) task',
    description:
      'pause, resume, stop (with a reason), interject a message, ask a question (answered from a snapshot of the transcript) or answer a clarification. The request is written to data/control/<id>/ and applied by the worker in order; a pending task gets it when it starts. 200 once applied (with the answer for ask), 202 while it waits for the task.',
    params: taskIdParams,
    body: steerBody,
    responses: {
      200: {
        description: 'applied (or refused by the running loop)',
        schema: z.object({
          request: z.string(),
          status: z.string(),
          answer: z.string().optional(),
          message: z.string().optional(),
        }),
      },
      202: {
        description: 'written; the task has not applied it yet',
        schema: z.object({ request: z.string(), status: z.literal('queued') }),
      },
      400: {
        description: 'a bad body: interject, ask and answer need a message; answer needs clarification_id',
        schema: errorBodySchema,
      },
      404: { description: 'no such task', schema: errorBodySchema },
      409: { description: 'the task has finished', schema: errorBodySchema },
    },
    handler: async ({ params, body, reply }) => {
      const outcome = await steerTask({
        queue: options.queue(),
        controlRoot: options.controlRoot,
        id: params.id,
        body,
        source: 'api',
      });
      if (outcome.status === 'queued') return reply.code(202).send(outcome);
      return outcome;
    },
  });

  routes.add(app, {
    method: 'GET',
    url: '/api/tasks/:id/events',
    tag: 'steering',
    summary: "A task's events as server-sent events",
    description:
      'Notifications, clarifications, steps and steering, from the start (or after Last-Event-ID), as they happen; the stream ends when the task has finished and every event was sent.',
    params: taskIdParams,
    responses: {
      200: {
        description: 'text/event-stream; each event has `id` (a resume point), `event` (its type) and JSON `data`',
        contentType: 'text/event-stream',
      },
      400: { description: 'not a task id', schema: errorBodySchema },
      404: { description: 'no such task', schema: errorBodySchema },
    },
    handler: async ({ params, request, reply }) => {
      const queue = options.queue();
      // Subscribed before the first read, so a change in between is not missed: the task's state comes from the
      // queue's events (whichever process makes the change), the steering events from the control files.
      const taskEvents = queue.events();
      let state: TaskState | undefined;
      let wake = () => {};
      const unsubscribe = taskEvents.subscribe((event) => {
        if (event.id !== params.id) return;
        state = event.state;
        wake();
      });
      const found = await queue.get(params.id);
      if (!found) {
        unsubscribe();
        await taskEvents.close();
        throw new AssistantError('NOT_FOUND', `no task with id ${params.id}`);
      }
      state ??= found.state;
      const files = new ControlFiles({ root: options.controlRoot, taskId: params.id });
      const lastEventId = Number(request.headers['last-event-id'] ?? 0);
      let offset = Number.isFinite(lastEventId) && lastEventId > 0 ? lastEventId : 0;
      const raw = openEventStream(reply);
      raw.write(`: events of task ${params.id}\n\n`);
      let open = true;
      raw.on('close', () => {
        open = false;
      });
      let nextStatePollMs = Date.now() + statePollMs;
      try {
        while (open) {
          if (Date.now() >= nextStatePollMs) {
            const record = await queue.get(params.id);
            if (record) state = record.state;
            nextStatePollMs = Date.now() + statePollMs;
          }
          const batch = await files.eventsFrom(offset);
          for (const { offset: id, ...event } of batch.events) {
            raw.write(`id: ${id}\nevent: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`);
          }
          offset = batch.offset;
          const finished = state;
          if ((finished === 'done' || finished === 'failed') && batch.events.length === 0) {
            raw.write(`event: end\ndata: ${JSON.stringify({ state: finished })}\n\n`);
            break;
          }
          // Woken at once by the task's own state change; the control files are looked at again meanwhile.
          await new Promise<void>((resolve) => {
            const timer = setTimeout(resolve, controlPollMs);
            wake = () => {
              clearTimeout(timer);
              resolve();
            };
          });
          wake = () => {};
        }
      } finally {
        unsubscribe();
        await taskEvents.close();
      }
      raw.end();
    },
  });
}
