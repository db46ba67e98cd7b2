import { requestManualAction } from '@assistant/actions';
import { AssistantError } from '@assistant/errors';
import type { IntegrationRegistry } from '@assistant/integration-host';
import type { HumanLog, NoteStore } from '@assistant/notes';
import type { TaskQueue } from '@assistant/queue';
import * as z from 'zod';
import { errorBodySchema, type RouteTable } from '../route-table.ts';
import type { AssistantServer } from '../server-type.ts';

export interface ActionRoutesOptions {
  queue: () => TaskQueue;
  notes: NoteStore;
  humanLog: HumanLog;
  /** Which platforms and actions exist; without it every request answers 503. */
  registry?: IntegrationRegistry | undefined;
}

const name = z.string().regex(/^[a-z][a-z0-9_-]*$/, { error: 'expected a name such as personal or inbox' });

const actionBody = z.strictObject({
  instance: name,
  platform: name,
  /** The item's note, relative to the notes folder. */
  note: z.string().min(1).max(1_000),
  action: z.string().regex(/^[a-z][a-z0-9_]*$/, { error: 'expected an action name such as archive' }),
  argument: z.union([z.string(), z.number(), z.boolean()]).optional(),
  /** The full text a reply or comment sends, written by the person who asks: it is sent exactly. */
  text: z.string().min(1).max(100_000).optional(),
});

const actionView = z.looseObject({
  id: z.string(),
  status: z.literal('approved'),
  provenance: z.literal('manual'),
  item: z.string(),
  enqueued: z.array(z.object({ key: z.string(), type: z.string(), task: z.string() })),
  skipped: z.array(z.object({ key: z.string(), reason: z.string() })),
});

/**
 * `POST /api/actions`: a person takes one platform action on one item by hand. Like `assistant act`, it writes an
 * approval note approved by `api` and enqueues the act task citing it; the worker's gate checks it like any other.
 */
export function registerActionRoutes(app: AssistantServer, routes: RouteTable, options: ActionRoutesOptions): void {
  routes.add(app, {
    method: 'POST',
    url: '/api/actions',
    tag: 'approvals',
    summary: 'Take an action on an item by hand',
    description:
      'Creates an approval already approved by `api` (provenance `manual`) and enqueues the act task that cites it. The action must be one the platform declares and the note must exist. An action that can be undone is done each time it is asked for; an irreversible one taken on the item already is not taken again: it is listed under `skipped` and nothing is enqueued.',
    body: actionBody,
    responses: {
      201: { description: 'the approval as recorded, with the task it enqueued', schema: actionView },
      400: { description: 'a bad body, an unknown action or a wrong argument', schema: errorBodySchema },
      404: { description: 'no such instance, platform or note', schema: errorBodySchema },
      503: { description: 'the server runs without integrations', schema: errorBodySchema },
    },
    handler: async ({ body, reply }) => {
      if (!options.registry) throw new AssistantError('UNAVAILABLE', 'this server runs without integrations');
      const result = await requestManualAction({
        registry: options.registry,
        notes: options.notes,
        queue: options.queue(),
        humanLog: options.humanLog,
        instance: body.instance,
        platform: body.platform,
        notePath: body.note,
        action: body.action,
        ...(body.argument === undefined ? {} : { argument: body.argument }),
        ...(body.text === undefined ? {} : { text: body.text }),
        by: 'api',
      });
      return reply.code(201).send({ ...result.approval, enqueued: result.enqueued, skipped: result.skipped });
    },
  });
}
