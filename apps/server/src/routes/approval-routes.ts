import {
  decideApproval,
  decideApprovals,
  listApprovals,
  readApproval,
  shadowReport,
  withRendering,
} from '@assistant/actions';
import { AssistantError } from '@assistant/errors';
import type { HumanLog, NoteStore } from '@assistant/notes';
import type { TaskQueue } from '@assistant/queue';
import * as z from 'zod';
import { errorBodySchema, type RouteTable } from '../route-table.ts';
import type { AssistantServer } from '../server-type.ts';

export interface ApprovalRoutesOptions {
  queue: () => TaskQueue;
  notes: NoteStore;
  humanLog: HumanLog;
  /** Whether an instance is in shadow mode (config.yaml as the server loaded it): its proposals cannot be approved. */
  inShadow?: (instance: string) => boolean;
}

const approvalView = z.looseObject({
  id: z.string(),
  status: z.string(),
  rule: z.string(),
  item: z.string(),
  /** What will happen, in full: every input, the whole text, all arguments. */
  rendering: z.string(),
  /** False for a request made before approvals were bound to what they show: it cannot be approved. */
  bound: z.boolean(),
  digest: z.string().optional(),
  /** What became of what an approved request allowed: `done`, or `failed` with `outcome_reason` (code: message). */
  outcome: z.enum(['done', 'failed']).optional(),
  outcome_reason: z.string().optional(),
  outcome_at: z.string().optional(),
});
const approvalIdParams = z.strictObject({
  id: z.string().regex(/^ap-[0-9a-f]{12}$/, { error: 'expected an approval id: ap- and 12 hex digits' }),
});

/** `/api/approvals`: the actions waiting for a person, and the person's decision. */
export function registerApprovalRoutes(app: AssistantServer, routes: RouteTable, options: ApprovalRoutesOptions): void {
  routes.add(app, {
    method: 'GET',
    url: '/api/approvals',
    tag: 'approvals',
    summary: 'List approval requests',
    description:
      'Newest first; pending ones by default. Each carries `rendering`, what it will do in full (every input, the whole text, all arguments), and `digest`, what an approval binds to. Broken request notes are listed under `broken`.',
    query: z.strictObject({ status: z.enum(['pending', 'approved', 'rejected', 'expired', 'all']).default('pending') }),
    responses: {
      200: {
        description: 'the requests',
        schema: z.object({ approvals: z.array(approvalView), broken: z.array(z.string()) }),
      },
      400: { description: 'an unknown status', schema: errorBodySchema },
    },
    handler: async ({ query }) => {
      const broken: string[] = [];
      const approvals = await listApprovals(options.notes, {
        ...(query.status === 'all' ? {} : { status: query.status }),
        onBroken: (message) => broken.push(message),
      });
      return { approvals: approvals.map(withRendering), broken };
    },
  });

  routes.add(app, {
    method: 'GET',
    url: '/api/shadow',
    tag: 'approvals',
    summary: 'What instances in shadow mode would have done',
    description:
      "Every shadow-mode proposal (an approval request marked `shadow`), oldest first: per item, the rule and the actions it would have taken, and the proposal's status. `instance` keeps one instance's. Nothing in it was done.",
    query: z.strictObject({ instance: z.string().min(1).optional() }),
    responses: {
      200: {
        description: 'the proposals',
        schema: z.object({
          entries: z.array(
            z.looseObject({
              id: z.string(),
              instance: z.string(),
              item: z.string(),
              title: z.string(),
              rule: z.string(),
              wouldHave: z.string(),
              status: z.string(),
            }),
          ),
          broken: z.array(z.string()),
        }),
      },
      400: { description: 'a bad query', schema: errorBodySchema },
    },
    handler: async ({ query }) =>
      shadowReport({ notes: options.notes, ...(query.instance === undefined ? {} : { instance: query.instance }) }),
  });

  routes.add(app, {
    method: 'GET',
    url: '/api/approvals/:id',
    tag: 'approvals',
    summary: 'One approval request',
    description: 'The request with `rendering`: what it will do, in full.',
    params: approvalIdParams,
    responses: {
      200: { description: 'the request', schema: approvalView },
      400: { description: 'not an approval id', schema: errorBodySchema },
      404: { description: 'no such request', schema: errorBodySchema },
    },
    handler: async ({ params }) => {
      const request = await readApproval(options.notes, params.id);
      if (!request) throw new AssistantError('NOT_FOUND', `no approval request ${params.id}`);
      return withRendering(request);
    },
  });

  routes.add(app, {
    method: 'POST',
    url: '/api/approvals/bulk',
    tag: 'approvals',
    summary: 'Approve or reject several requests, each as it was shown',
    description:
      'Each request comes with the `digest` it was shown with (`GET /api/approvals` gives it; `""` for one shown without). A request whose digest is now another, or that was decided already or has expired, is refused alone and listed under `refused` with the reason; the others are decided as `POST /api/approvals/:id` decides one.',
    body: z.strictObject({
      decision: z.enum(['approve', 'reject']),
      approvals: z
        .array(
          z.strictObject({
            id: z.string().regex(/^ap-[0-9a-f]{12}$/, { error: 'expected an approval id: ap- and 12 hex digits' }),
            digest: z.string().max(200),
          }),
        )
        .min(1)
        .max(200),
    }),
    responses: {
      200: {
        description: 'what was decided, and what was refused and why',
        schema: z.object({
          decision: z.enum(['approve', 'reject']),
          decided: z.array(z.object({ id: z.string(), status: z.string(), tasks: z.array(z.string()) })),
          refused: z.array(z.object({ id: z.string(), reason: z.string() })),
        }),
      },
      400: { description: 'a bad body', schema: errorBodySchema },
    },
    handler: async ({ body }) => ({
      decision: body.decision,
      ...(await decideApprovals({
        notes: options.notes,
        queue: options.queue(),
        humanLog: options.humanLog,
        decision: body.decision,
        approvals: body.approvals,
        by: 'api',
        ...(options.inShadow ? { inShadow: options.inShadow } : {}),
      })),
    }),
  });

  routes.add(app, {
    method: 'POST',
    url: '/api/approvals/:id',
    tag: 'approvals',
    summary: 'Approve or reject a request',
    description:
      'Approving enqueues the actions at once (each still taken only once per item); rejecting drops them. A request that was decided already or has expired answers 409.',
    params: approvalIdParams,
    body: z.strictObject({ decision: z.enum(['approve', 'reject']) }),
    responses: {
      200: { description: 'the request as decided, with the tasks it enqueued', schema: approvalView },
      400: { description: 'not an approval id, or a bad decision', schema: errorBodySchema },
      404: { description: 'no such request', schema: errorBodySchema },
      409: { description: 'decided already, or expired', schema: errorBodySchema },
    },
    handler: async ({ params, body }) => {
      const result = await decideApproval({
        notes: options.notes,
        queue: options.queue(),
        humanLog: options.humanLog,
        id: params.id,
        decision: body.decision,
        by: 'api',
        ...(options.inShadow ? { inShadow: options.inShadow } : {}),
      });
      return { ...withRendering(result.request), enqueued: result.enqueued ?? [] };
    },
  });
}
