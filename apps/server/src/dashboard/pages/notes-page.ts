import type { AssistantServer } from '../../create-server.ts';
import type { DashboardContext } from '../dashboard-context.ts';
import { dashboardRoute } from '../dashboard-route.ts';
import { html } from '../html.ts';
import { sendPage } from '../layout.ts';

/** The Notes page (placeholder until it is built). */
export function registerNotesPage(app: AssistantServer, _context: DashboardContext): void {
  dashboardRoute(app, {
    method: 'GET',
    url: '/notes',
    handler: async (request, reply) =>
      sendPage(reply, { request, title: 'Notes', section: 'notes', body: html`<p>Not built yet.</p>` }),
  });
}
