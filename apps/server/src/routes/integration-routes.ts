import { instanceNameSchema } from '@assistant/config';
import { AssistantError } from '@assistant/errors';
import type { TaskQueue } from '@assistant/queue';
import * as z from 'zod';
import type { DataPaths } from '../data-paths.ts';
import { errorBodySchema, type RouteTable } from '../route-table.ts';
import type { ServerCatalog } from '../server-catalog.ts';
import type { AssistantServer } from '../server-type.ts';

export interface IntegrationRoutesOptions {
  queue: () => TaskQueue;
  catalog: ServerCatalog;
  paths: DataPaths;
}

/** `POST /api/integrations/:name/:platform/trigger`: run a platform's entry task now, as a person asked. */
export function registerIntegrationRoutes(
  app: AssistantServer,
  routes: RouteTable,
  options: IntegrationRoutesOptions,
): void {
  routes.add(app, {
    method: 'POST',
    url: '/api/integrations/:name/:platform/trigger',
    tag: 'integrations',
    summary: "Enqueue a platform's entry task now",
    description:
      'As the schedule would, but as a manual trigger: dedup, rate limits and circuit breakers do not hold it back.',
    params: z.strictObject({ name: instanceNameSchema, platform: z.string().regex(/^[a-z][a-z0-9_]*$/) }),
    responses: {
      201: {
        description: 'the entry task is pending',
        schema: z.object({ id: z.string(), type: z.string(), state: z.literal('pending'), path: z.string() }),
      },
      400: { description: 'not an instance or platform name', schema: errorBodySchema },
      404: { description: 'no such instance or platform', schema: errorBodySchema },
      409: { description: 'the instance or platform is disabled', schema: errorBodySchema },
    },
    handler: async ({ params, reply }) => {
      const entry = options.catalog.entryTask(params.name, params.platform);
      if (!entry.ok) throw new AssistantError(entry.status === 404 ? 'NOT_FOUND' : 'CONFLICT', entry.message);
      const outcome = await options.queue().enqueue({
        type: entry.type,
        payload: entry.payload,
        priority: entry.priority,
        integration: entry.integration,
        source: 'api',
        policies: false,
      });
      if (outcome.status !== 'enqueued')
        throw new Error(`unexpected ${outcome.status}: manual triggers bypass policies`);
      return reply.code(201).send({ id: outcome.task.id, type: entry.type, state: 'pending', path: outcome.location });
    },
  });
}
