import type { AssistantServer } from '../../create-server.ts';
import type { DashboardContext } from '../dashboard-context.ts';
import { dashboardRoute } from '../dashboard-route.ts';
import { html } from '../html.ts';
import { sendPage } from '../layout.ts';

/** The Chat page (placeholder until it is built). */
export function registerChatPage(app: AssistantServer, _context: DashboardContext): void {
  dashboardRoute(app, {
    method: 'GET',
    url: '/chat',
    handler: async (request, reply) =>
      sendPage(reply, { request, title: 'Chat', section: 'chat', body: html`<p>Not built yet.</p>` }),
  });
}
