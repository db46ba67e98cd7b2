import { assistantVersion } from '@assistant/process';
import type { AssistantServer } from '../create-server.ts';
import type { RouteTable } from '../route-table.ts';

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
          'The REST API of the Assistant server. Errors answer `{error: {code, message}}` with a code from docs/errors.md. When `server.token` is set, every request needs `Authorization: Bearer <token>`.',
      });
      return document;
    },
  });
}
