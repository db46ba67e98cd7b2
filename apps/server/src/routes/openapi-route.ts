import { assistantVersion } from '@assistant/process';
import type { RouteTable } from '../route-table.ts';
import type { AssistantServer } from '../server-type.ts';

/** `GET /docs/openapi.json`: generated from the route table, so it lists exactly what the server serves. */
export function registerOpenApiRoute(app: AssistantServer, routes: RouteTable): void {
  let document: Record<string, unknown> | undefined;
  routes.add(app, {
    method: 'GET',
    url: '/docs/openapi.json',
    tag: 'health',
    summary: 'This OpenAPI document',
    responses: { 200: { description: 'OpenAPI 3.1' } },
    handler: async () => {
      // Built on first request, after every route is registered.
      document ??= routes.openApi({
        title: 'Assistant',
        version: assistantVersion,
        description:
          'The REST API of the Assistant server. Errors answer `{error: {code, message}}` with a code from docs/errors.md. Every route but `GET /health` needs `Authorization: Bearer <token>` (the token in data/api-token, printed by `assistant token`, or server.token); requests with a foreign `Host` get 421, with a foreign `Origin` 403, with a body that is not JSON 415. Paths are relative to the data directory.',
      });
      return document;
    },
  });
}
