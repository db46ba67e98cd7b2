import type { AssistantServer } from '../../create-server.ts';
import type { DashboardContext } from '../dashboard-context.ts';
import { dashboardRoute } from '../dashboard-route.ts';
import { html } from '../html.ts';
import { sendPage } from '../layout.ts';

/** The Config page (placeholder until it is built). */
export function registerConfigPage(app: AssistantServer, _context: DashboardContext): void {
  dashboardRoute(app, {
    method: 'GET',
    url: '/config',
    handler: async (request, reply) =>
      sendPage(reply, { request, title: 'Config', section: 'config', body: html`<p>Not built yet.</p>` }),
  });
}
