import type { LoadedConfig } from '@assistant/config';
import { AssistantError } from '@assistant/errors';
import { HumanLog, NoteStore } from '@assistant/notes';
import { TaskQueue } from '@assistant/queue';
import { type IntegrationRegistry, TaskMetrics } from '@assistant/runtime';
import Fastify, {
  type FastifyInstance,
  LogController,
  type RawReplyDefaultExpression,
  type RawRequestDefaultExpression,
  type RawServerDefault,
} from 'fastify';
import { type Logger, pino } from 'pino';
import { registerBearerAuth } from './bearer-auth.ts';
import { registerErrorReplies } from './error-replies.ts';
import { registerHealthRoute } from './health-route.ts';
import { RouteTable } from './route-table.ts';
import { registerActionRoutes } from './routes/action-routes.ts';
import { registerApprovalRoutes } from './routes/approval-routes.ts';
import { registerIntegrationRoutes } from './routes/integration-routes.ts';
import { registerMetricsRoute } from './routes/metrics-route.ts';
import { registerNoteRoutes } from './routes/note-routes.ts';
import { registerOpenApiRoute } from './routes/openapi-route.ts';
import { registerSteeringRoutes } from './routes/steering-routes.ts';
import { registerTaskRoutes } from './routes/task-routes.ts';
import type { ServerCatalog, ServerMetrics, ServerStatusSources } from './server-catalog.ts';

/** The app with our pino logger's type, so route handlers get `request.log` typed as that logger. */
export type AssistantServer = FastifyInstance<
  RawServerDefault,
  RawRequestDefaultExpression,
  RawReplyDefaultExpression,
  Logger
>;

export interface CreateServerOptions {
  config: LoadedConfig;
  /** @default a silent logger, for tests that inject requests */
  logger?: Logger;
  /** Which task types exist and what triggers enqueue. @default only `system.echo` and `system.sleep`, no instances */
  catalog?: ServerCatalog;
  /** The integrations, for result routes (service `human_log` templates, enqueue targets). @default none */
  registry?: IntegrationRegistry;
  /** Circuit breakers and schedules for /health. @default none */
  status?: ServerStatusSources;
  /** The server's own counters for /metrics (the scheduler's rejections). @default fresh, empty counters */
  metrics?: ServerMetrics;
}

/** Room for a task's JSON envelope around a payload of `max_task_bytes`. */
const bodyMarginBytes = 64 * 1024;

const diagnosticCatalog: ServerCatalog = {
  taskTypes: () => ['system.echo', 'system.sleep'],
  hasTaskType: (type) => type === 'system.echo' || type === 'system.sleep',
  entryTask: (instance) => ({ ok: false, status: 404, message: `no integration instance \`${instance}\`` }),
};

/** Builds the Fastify app for a config without listening, so tests can `inject` requests into it. */
export function createServer(options: CreateServerOptions): AssistantServer {
  const { config } = options;
  const app = Fastify({
    loggerInstance: options.logger ?? pino({ level: 'silent' }),
    // Anything larger could not become a task anyway; refusing it early keeps a 10 MB body out of memory.
    bodyLimit: config.queue.maxTaskBytes + bodyMarginBytes,
    // One line per request, written below, instead of fastify's two; health polls stay out of the info log.
    logController: new LogController({ disableRequestLogging: true }),
  });
  app.addHook('onResponse', async (request, reply) => {
    const level = request.url === '/health' ? 'debug' : 'info';
    request.log[level](`${request.method} ${request.url} ${reply.statusCode} ${reply.elapsedTime.toFixed(1)}ms`);
  });
  registerErrorReplies(app);
  const token = options.config.server.token;
  if (token !== undefined) {
    // A blank secret must not quietly turn authentication off.
    if (!token.isSet) {
      throw new AssistantError(
        'CONFIG_INVALID',
        `server.token is configured but its secret \`${token.name}\` is blank`,
        {
          hint: 'put the token in secrets.yaml, or remove `token:` from `server:` to run without one on loopback',
        },
      );
    }
    registerBearerAuth(app, { token });
  }
  let opened: TaskQueue | undefined;
  // Opened once as the server gets ready, so a queue directory it cannot create fails the start, not each request.
  app.addHook('onReady', async () => {
    opened = await TaskQueue.open({ directory: config.paths.queue, settings: config.queue });
  });
  const queue = () => {
    if (!opened) throw new Error('the queue is opened when the server gets ready');
    return opened;
  };
  const catalog = options.catalog ?? diagnosticCatalog;
  const routes = new RouteTable();
  registerHealthRoute(app, routes, { queue, status: options.status ?? {} });
  const notes = new NoteStore({ root: config.paths.notes });
  const humanLog = new HumanLog({ directory: config.paths.logs });
  registerTaskRoutes(app, routes, {
    queue,
    catalog,
    notes,
    humanLog,
    ...(options.registry ? { registry: options.registry } : {}),
  });
  registerIntegrationRoutes(app, routes, { queue, catalog });
  registerSteeringRoutes(app, routes, { queue, controlRoot: config.paths.control });
  registerNoteRoutes(app, routes, { notes, root: config.paths.notes });
  registerApprovalRoutes(app, routes, { queue, notes, humanLog });
  registerActionRoutes(app, routes, { queue, notes, humanLog, registry: options.registry });
  registerMetricsRoute(app, routes, { queue, metrics: options.metrics ?? new TaskMetrics() });
  registerOpenApiRoute(app, routes);
  return app;
}
