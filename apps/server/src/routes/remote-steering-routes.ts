import { AssistantError } from '@assistant/errors';
import { ControlFiles, steeringActions, steeringRequestIdPattern, steeringRequestSchema } from '@assistant/steering';
import * as z from 'zod';
import { errorBodySchema, type RouteTable } from '../route-table.ts';
import type { AssistantServer } from '../server-type.ts';
import { taskIdParams } from './task-routes.ts';

export interface RemoteSteeringRoutesOptions {
  /** `data/control`. */
  controlRoot: string;
  /** Aborted as the server shuts down: long polls answer at once rather than hold the shutdown. @default never */
  signal?: AbortSignal;
}

/** The longest a long poll is held: below any proxy's idle limit worth having, and the server's shutdown grace. */
const maxWaitMs = 25_000;

const requestIdSchema = z
  .string()
  .regex(steeringRequestIdPattern, { error: 'expected a steering request id such as 00017000000000-000001-0a1b2c3d' });
const requestParams = taskIdParams.extend({ request: requestIdSchema });
const waitQuery = z.coerce.number().int().min(0).max(maxWaitMs).default(0);

const pendingQuery = z.strictObject({ wait_ms: waitQuery, after: requestIdSchema.optional() });
const outcomeQuery = z.strictObject({ wait_ms: waitQuery });

const settleBody = z.strictObject({
  status: z.enum(['applied', 'refused']),
  message: z.string().max(20_000).optional(),
  answer: z.string().max(200_000).optional(),
});

const requestBody = z.strictObject({
  action: z.enum(steeringActions),
  message: z.string().min(1).max(20_000).optional(),
  reason: z.string().max(2_000).optional(),
  clarification_id: z.string().min(1).max(200).optional(),
  // Who asked, as the worker's side says it (`chat:<task>` for a chat turn): recorded on the request, nothing more.
  source: z.string().regex(/^[a-z][a-z0-9_-]{0,31}(:[0-9a-z]{26})?$/, {
    error: 'expected a source such as chat:<task id>',
  }),
});

const eventBody = z.looseObject({
  type: z.string().regex(/^[a-z][a-z0-9_-]{0,63}$/, { error: 'expected an event type such as step-finished' }),
  at: z.iso.datetime({ offset: true }).optional(),
  lineage: z.array(z.string().max(1_000)).max(64).optional(),
});

const pendingEntry = z.object({
  id: z.string(),
  request: steeringRequestSchema.optional(),
  problem: z.string().optional(),
});

/**
 * The worker's side of a task's steering channel, for a worker on another machine (HttpSteeringChannel): read and
 * settle the task's requests, append its events, make requests of other tasks and wait for their outcomes. Behind
 * the same token and Host/Origin checks as every route; the task id is checked before it reaches a path, and a
 * request is named by its id, resolved to a file in the task's own `requests/` folder here, never by a path.
 */
export function registerRemoteSteeringRoutes(
  app: AssistantServer,
  routes: RouteTable,
  options: RemoteSteeringRoutesOptions,
): void {
  const closing = new AbortController();
  app.addHook('preClose', async () => closing.abort());
  const serverSignal = options.signal ? AbortSignal.any([options.signal, closing.signal]) : closing.signal;
  const files = (id: string) => new ControlFiles({ root: options.controlRoot, taskId: id });
  /** Aborted when the server shuts down or the client goes away, so a long poll holds nothing for nobody. */
  const pollSignal = (reply: { raw: NodeJS.EventEmitter }) => {
    const gone = new AbortController();
    reply.raw.once('close', () => gone.abort());
    return AbortSignal.any([serverSignal, gone.signal]);
  };

  routes.add(app, {
    method: 'GET',
    url: '/api/store/steering/:id',
    tag: 'remote workers',
    summary: "Whether a task's steering channel exists",
    description: 'For a remote worker: whether anything (a request, an outcome, an event) was written for the task.',
    params: taskIdParams,
    responses: {
      200: { description: 'exists or not', schema: z.object({ exists: z.boolean() }) },
      400: { description: 'not a task id', schema: errorBodySchema },
    },
    handler: async ({ params }) => ({ exists: await files(params.id).exists() }),
  });

  routes.add(app, {
    method: 'GET',
    url: '/api/store/steering/:id/requests',
    tag: 'remote workers',
    summary: "A task's pending steering requests (long poll)",
    description:
      'For a remote worker: the requests not yet settled, in the order they were made. With `wait_ms`, answers once a request named after `after` (or any, without `after`) is pending, or after `wait_ms` (at most 25 s) with whatever is pending then.',
    params: taskIdParams,
    query: pendingQuery,
    responses: {
      200: { description: 'the pending requests', schema: z.object({ requests: z.array(pendingEntry) }) },
      400: { description: 'not a task id, a bad `after` or `wait_ms`', schema: errorBodySchema },
    },
    handler: async ({ params, query, reply }) => {
      const found = await files(params.id).waitForRequests({
        timeoutMs: query.wait_ms,
        signal: pollSignal(reply),
        ...(query.after === undefined ? {} : { after: query.after }),
      });
      return {
        requests: found.map(({ id, request, problem }) => ({
          id,
          ...(request ? { request } : {}),
          ...(problem === undefined ? {} : { problem }),
        })),
      };
    },
  });

  routes.add(app, {
    method: 'POST',
    url: '/api/store/steering/:id/requests/:request/outcome',
    tag: 'remote workers',
    summary: 'Settle a steering request',
    description:
      'For a remote worker: records what became of a pending request (applied or refused, the answer of an `ask`) and removes it, as the local worker does. Settling one already settled records the outcome again (a retry after a lost answer); one never made is 404.',
    params: requestParams,
    body: settleBody,
    responses: {
      200: { description: 'settled', schema: z.object({ request: z.string(), status: z.string() }) },
      400: { description: 'not a task or request id, a bad body', schema: errorBodySchema },
      404: { description: 'no such request', schema: errorBodySchema },
    },
    handler: async ({ params, body }) => {
      const channel = files(params.id);
      // Only a request that was made: an outcome file for any name the client picks would be noise in the folder.
      if (!(await channel.hasRequest(params.request)) && !(await channel.outcome(params.request))) {
        throw new AssistantError('NOT_FOUND', `no steering request ${params.request} for task ${params.id}`);
      }
      await channel.settle(params.request, {
        status: body.status,
        ...(body.message === undefined ? {} : { message: body.message }),
        ...(body.answer === undefined ? {} : { answer: body.answer }),
      });
      return { request: params.request, status: body.status };
    },
  });

  routes.add(app, {
    method: 'POST',
    url: '/api/store/steering/:id/events',
    tag: 'remote workers',
    summary: "Append an event to a task's events",
    description:
      'For a remote worker: appends one event (`{type, at?, lineage?, …}`) to data/control/<id>/events.jsonl, which `GET /api/tasks/:id/events` streams; events are kept in the order they arrive.',
    params: taskIdParams,
    body: eventBody,
    responses: {
      200: { description: 'appended', schema: z.object({ appended: z.literal(true) }) },
      400: { description: 'not a task id, a bad event', schema: errorBodySchema },
    },
    handler: async ({ params, body }) => {
      // Stamped by the worker when it happened; the server's time only for an event that came without one.
      const { at, ...event } = body;
      await files(params.id).event({ ...event, ...(at === undefined ? {} : { at }) });
      return { appended: true as const };
    },
  });

  routes.add(app, {
    method: 'POST',
    url: '/api/store/steering/:id/requests',
    tag: 'remote workers',
    summary: 'Make a steering request (from a remote worker)',
    description:
      "For a remote worker's chat turn steering another task: writes the request as `POST /api/tasks/:id/steer` does, with the worker's `source`, and answers at once; the caller checks the task's state and waits for the outcome itself.",
    params: taskIdParams,
    body: requestBody,
    responses: {
      200: { description: 'written', schema: z.object({ request: steeringRequestSchema }) },
      400: { description: 'not a task id; interject, ask and answer need a message', schema: errorBodySchema },
    },
    handler: async ({ params, body }) => {
      try {
        return { request: await files(params.id).request(body) };
      } catch (error) {
        if (error instanceof z.ZodError) {
          const issue = error.issues[0];
          throw new AssistantError('BAD_REQUEST', `body.${issue?.path.join('.')}: ${issue?.message}`);
        }
        throw error;
      }
    },
  });

  routes.add(app, {
    method: 'GET',
    url: '/api/store/steering/:id/outcomes/:request',
    tag: 'remote workers',
    summary: 'The outcome of a steering request (long poll)',
    description:
      'For a remote worker: the outcome once the request has been settled, or `null` after `wait_ms` (at most 25 s).',
    params: requestParams,
    query: outcomeQuery,
    responses: {
      200: { description: 'the outcome, or null', schema: z.object({ outcome: z.looseObject({}).nullable() }) },
      400: { description: 'not a task or request id', schema: errorBodySchema },
    },
    handler: async ({ params, query, reply }) => {
      const channel = files(params.id);
      const outcome =
        query.wait_ms === 0
          ? await channel.outcome(params.request)
          : await channel.waitForOutcome(params.request, { timeoutMs: query.wait_ms, signal: pollSignal(reply) });
      return { outcome: outcome ?? null };
    },
  });
}
