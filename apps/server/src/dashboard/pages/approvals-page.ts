import type { AssistantServer } from '../../create-server.ts';
import type { DashboardContext } from '../dashboard-context.ts';
import { dashboardRoute } from '../dashboard-route.ts';
import { html } from '../html.ts';
import { sendPage } from '../layout.ts';

/** The Approvals page (placeholder until it is built). */
export function registerApprovalsPage(app: AssistantServer, _context: DashboardContext): void {
  dashboardRoute(app, {
    method: 'GET',
    url: '/approvals',
    handler: async (request, reply) =>
      sendPage(reply, { request, title: 'Approvals', section: 'approvals', body: html`<p>Not built yet.</p>` }),
  });
}
