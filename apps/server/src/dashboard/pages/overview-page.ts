import type { AssistantServer } from '../../create-server.ts';
import type { DashboardContext } from '../dashboard-context.ts';
import { dashboardRoute } from '../dashboard-route.ts';
import { html } from '../html.ts';
import { sendPage } from '../layout.ts';

/** The Overview page (placeholder until it is built). */
export function registerOverviewPage(app: AssistantServer, _context: DashboardContext): void {
  dashboardRoute(app, {
    method: 'GET',
    url: '/',
    handler: async (request, reply) =>
      sendPage(reply, {
        request,
        title: 'Overview',
        section: 'overview',
        body: html`<p>Not built yet.</p>`,
        live: '/live?topics=queue,log',
      }),
  });
}
