import { decideApproval, listApprovals, readApproval, withRendering } from '@assistant/actions';
import { AssistantError } from '@assistant/errors';
import type { HumanLog, NoteStore } from '@assistant/notes';
import type { TaskQueue } from '@assistant/queue';
import * as z from 'zod';
import type { AssistantServer } from '../create-server.ts';
import { errorBodySchema, type RouteTable } from '../route-table.ts';

export interface ApprovalRoutesOptions {
  queue: () => TaskQueue;
  notes: NoteStore;
  humanLog: HumanLog;
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
      });
      return { ...withRendering(result.request), enqueued: result.enqueued ?? [] };
    },
  });
}
