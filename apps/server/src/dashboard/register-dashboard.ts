import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import fastifyStatic from '@fastify/static';
import { isAuthenticated } from '../bearer-auth.ts';
import type { EventStreamLimiter } from '../routes/event-stream.ts';
import type { AssistantServer } from '../server-type.ts';
import type { DashboardRouteConfig } from './dashboard-auth.ts';
import { isDashboardRoute, registerDashboardGuards, sessionOf } from './dashboard-auth.ts';
import type { DashboardContext } from './dashboard-context.ts';
import { dashboardRoute } from './dashboard-route.ts';
import { itemTimelineIndex } from './item-timeline.ts';
import { approvalsBadge, sendFragment, setNavCounts, wantsFragment } from './layout.ts';
import { registerApprovalsPage } from './pages/approvals-page.ts';
import { registerChatPage } from './pages/chat-page.ts';
import { registerConfigPage } from './pages/config-page.ts';
import { registerEventsPage } from './pages/events-page.ts';
import { registerHistoryPage } from './pages/history-page.ts';
import { registerHooksPage } from './pages/hooks-page.ts';
import { registerLogPage } from './pages/log-page.ts';
import { registerLoginPage } from './pages/login-page.ts';
import { registerMemoryPages } from './pages/memory-pages.ts';
import { noteSearchIndex } from './pages/note-views.ts';
import { registerNotesPage } from './pages/notes-page.ts';
import { registerOverviewPage } from './pages/overview-page.ts';
import { registerPauseActions } from './pages/pauses-view.ts';
import { registerPersonasPage } from './pages/personas-page.ts';
import { registerTasksPage } from './pages/tasks-page.ts';
import { pendingApprovals } from './pending-approvals.ts';

const require = createRequire(import.meta.url);

/** The files `/assets/` serves, and nothing else: ours, htmx and its SSE extension. */
const assetFiles = new Set(['/dashboard.css', '/dashboard.js', '/session.js', '/htmx.min.js', '/sse.min.js']);

/**
 * The web dashboard at `/`: server-rendered pages, htmx for actions and for the live parts, which listen to one
 * server-sent event stream per page (`/live`). Same auth as the API: the Bearer token, or the login cookie with the
 * login's origin key (decision 0023).
 */
export function registerDashboard(
  app: AssistantServer,
  context: DashboardContext,
  options: { apiToken: string; streams: EventStreamLimiter },
): void {
  registerDashboardGuards(app, { sessions: context.sessions });
  // A form post is a flat map of strings; it is accepted on dashboard routes only (the request guard refuses it
  // elsewhere) and checked against the session's CSRF token before the handler runs.
  app.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string' }, (_request, body, done) => {
    done(null, Object.fromEntries(new URLSearchParams(String(body))));
  });

  // Registered now, loaded by fastify as the server gets ready.
  void app.register(async (scope) => {
    scope.addHook('onRoute', (route) => {
      route.config = { ...(route.config as object), dashboard: true, public: true } satisfies DashboardRouteConfig;
    });
    await scope.register(fastifyStatic, {
      root: [
        path.join(path.dirname(fileURLToPath(import.meta.url)), 'assets'),
        path.dirname(require.resolve('htmx.org/dist/htmx.min.js')),
        path.dirname(require.resolve('htmx-ext-sse/dist/sse.min.js')),
      ],
      prefix: '/assets/',
      allowedPath: (pathName) => assetFiles.has(pathName),
      // Asset URLs carry the version (layout.ts assetUrl): a release changes the URL, so they may be kept a long time.
      maxAge: '7d',
      immutable: true,
      preCompressed: true,
      index: false,
      list: false,
      wildcard: false,
      globIgnore: ['**/*.map'],
    });
  });

  dashboardRoute(app, {
    method: 'GET',
    url: '/live',
    eventStream: true,
    handler: async (request, reply) => {
      const release = options.streams.acquire(request, reply);
      try {
        await context.live.serve(request, reply, context.signal);
      } finally {
        release();
      }
    },
  });
  // Every page's nav shows how many approvals wait (one stat of the approvals folder while nothing changed there).
  app.addHook('preHandler', async (request) => {
    if (request.method !== 'GET' || !isDashboardRoute(request) || wantsFragment(request)) return;
    if (request.url.startsWith('/assets/') || request.url.startsWith('/live')) return;
    if (sessionOf(request) === undefined && !isAuthenticated(request)) return;
    setNavCounts(request, { approvals: (await pendingApprovals(context)).length });
  });
  dashboardRoute(app, {
    method: 'GET',
    url: '/nav/approvals',
    handler: async (_request, reply) => sendFragment(reply, approvalsBadge((await pendingApprovals(context)).length)),
  });
  registerLoginPage(app, context, options.apiToken);
  registerOverviewPage(app, context);
  registerTasksPage(app, context);
  const approvals = registerApprovalsPage(app, context);
  registerNotesPage(app, context);
  registerChatPage(app, context);
  registerLogPage(app, context);
  registerEventsPage(app, context);
  registerHooksPage(app, context);
  registerPersonasPage(app, context);
  registerMemoryPages(app, context);
  registerConfigPage(app, context);
  registerPauseActions(app, context);
  registerHistoryPage(app, context);
  // The Notes search index and the Approvals index read every note once. They start with the first page someone
  // logged in opens, in the background, so the first search or approvals view does not wait for that read; a server
  // nobody opens the dashboard of never holds them.
  let warmed = false;
  app.addHook('onResponse', async (request, reply) => {
    if (warmed || request.method !== 'GET' || reply.statusCode !== 200 || !isDashboardRoute(request)) return;
    if (sessionOf(request) === undefined && !isAuthenticated(request)) return;
    warmed = true;
    noteSearchIndex(context);
    approvals.warm();
    // Items' timelines read every task once; in the background, so the first item page does not wait for it.
    itemTimelineIndex(context)
      .refresh()
      .catch(() => {});
  });
}
