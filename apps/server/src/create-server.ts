import type { IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import path from 'node:path';
import { ApprovalsIndex, approvalsFolder } from '@assistant/actions';
import type { ChatService } from '@assistant/chat';
import type { LoadedConfig } from '@assistant/config';
import { AssistantError } from '@assistant/errors';
import { EventingNoteStore, type EventLedger, openEventLedger } from '@assistant/events';
import { type CompiledHook, readHookStates } from '@assistant/hooks';
import type { IntegrationRegistry } from '@assistant/integration-host';
import { createLlmProfiles } from '@assistant/llm';
import { llmUsageFile, TaskMetrics } from '@assistant/metrics';
import { FileHumanLog, FileNoteStore, PauseStore } from '@assistant/notes';
import { openQueue } from '@assistant/process';
import type { TaskQueue } from '@assistant/queue';
import Fastify, { LogController } from 'fastify';
import { type Logger, pino } from 'pino';
import { type ApiToken, configuredApiToken } from './api-token.ts';
import { registerBearerAuth } from './bearer-auth.ts';
import { configuredChatService } from './chat-service.ts';
import { LiveHub } from './dashboard/live.ts';
import { registerDashboard } from './dashboard/register-dashboard.ts';
import { DashboardSessions } from './dashboard/session.ts';
import { dataPaths } from './data-paths.ts';
import { registerErrorReplies } from './error-replies.ts';
import { registerHealthRoute } from './health-route.ts';
import { queueEnqueue } from './inbound-enqueue.ts';
import { registerJsonBodyParser } from './json-body-parser.ts';
import { storeMcpBackend } from './mcp/store-mcp-backend.ts';
import { type OwnerMemory, openOwnerMemory } from './memory/server-memory.ts';
import { registerRequestGuard } from './request-guard.ts';
import { RouteTable } from './route-table.ts';
import { registerActionRoutes } from './routes/action-routes.ts';
import { registerApprovalRoutes } from './routes/approval-routes.ts';
import { registerChatRoutes } from './routes/chat-routes.ts';
import { registerEventRoutes } from './routes/event-routes.ts';
import { EventStreamLimiter } from './routes/event-stream.ts';
import { registerHookRoutes } from './routes/hook-routes.ts';
import { registerIntegrationRoutes } from './routes/integration-routes.ts';
import { registerMcpRoute } from './routes/mcp-route.ts';
import { registerMemoryRoutes } from './routes/memory-routes.ts';
import { registerMetricsRoute } from './routes/metrics-route.ts';
import { registerNoteRoutes } from './routes/note-routes.ts';
import { registerOpenApiRoute } from './routes/openapi-route.ts';
import { registerPauseRoutes } from './routes/pause-routes.ts';
import { registerPersonaRoutes } from './routes/persona-routes.ts';
import { registerRemoteSteeringRoutes } from './routes/remote-steering-routes.ts';
import { registerRemoteStoreRoutes } from './routes/remote-store-routes.ts';
import { registerSteeringRoutes } from './routes/steering-routes.ts';
import { registerTaskRoutes } from './routes/task-routes.ts';
import { registerWebhookRoutes } from './routes/webhook-routes.ts';
import { registerWorkflowRoutes } from './routes/workflow-routes.ts';
import type { ServerCatalog, ServerMetrics, ServerStatusSources } from './server-catalog.ts';
import type { AssistantServer } from './server-type.ts';
import { serverShutdownGraceMs } from './shutdown-grace.ts';

export interface CreateServerOptions {
  config: LoadedConfig;
  /**
   * The event ledger (data/events/): webhooks report deliveries to it and the server's note store what it writes;
   * `/api/events` and the dashboard's Events page read it. @default none to report to; the reading surfaces open
   * `<data dir>/events` with the event types of `registry`'s manifests
   */
  events?: EventLedger;
  /** @default a silent logger, for tests that inject requests */
  logger?: Logger;
  /** Which task types exist and what triggers enqueue. @default only `system.echo` and `system.sleep`, no instances */
  catalog?: ServerCatalog;
  /** The integrations, for result routes (service `human_log` templates, enqueue targets). @default none */
  registry?: IntegrationRegistry;
  /** Circuit breakers, schedules and listeners for /health (breakers for /metrics too). @default none */
  status?: ServerStatusSources;
  /** The server's own counters for /metrics (the scheduler's rejections). @default fresh, empty counters */
  metrics?: ServerMetrics;
  /**
   * The API token every route but `GET /health` requires, and where it comes from (for the 401 message): runServer
   * passes what resolveApiToken returned. A plain string is a token a test made up, named as data/api-token's.
   * Registering it for scrubbing is the caller's: server.token's Secret and resolveApiToken do.
   * @default `server.token`; without either, createServer throws
   */
  token?: Pick<ApiToken, 'value' | 'source'> | string;
  /** Aborted as the server shuts down: webhook handlers see it. @default never */
  signal?: AbortSignal;
  /**
   * The server's one ChatService (runServer builds it with configuredChatService and resumes it). @default one built
   * here over the server's queue, with the `chat` instance's settings from `registry`
   */
  chat?: ChatService;
  /** How long a client may take to send a request, and keep an idle connection. @default see defaultTimeouts */
  timeouts?: Partial<ServerTimeouts>;
  /** The hooks as loaded (`loadRuntime`'s `hooks`): the worker runs them, the server shows them. @default none */
  hooks?: readonly CompiledHook[];
  /** Memory's stores and index (docs/memory.md). @default opened over the server's notes, closed with the server */
  memory?: OwnerMemory;
  /**
   * The approval requests, read incrementally (runServer's one, which the notifier and the channels share).
   * @default one over the server's notes
   */
  approvals?: ApprovalsIndex;
}

export interface ServerTimeouts {
  /** From the connection (or the end of the previous request) until every header has arrived. */
  headersTimeoutMs: number;
  /** Until the whole request, body included, has arrived. Answers and event streams may take longer. */
  requestTimeoutMs: number;
  /** An idle keep-alive connection is closed after this. */
  keepAliveTimeoutMs: number;
}

/**
 * Generous for a client on loopback or a LAN, short enough that a few hundred slow or silent connections (slowloris)
 * are dropped within seconds rather than held forever. Answers are not limited: `ask` waits up to two minutes and
 * event streams stay open while their task runs.
 */
const defaultTimeouts: ServerTimeouts = {
  headersTimeoutMs: 10_000,
  requestTimeoutMs: 30_000,
  keepAliveTimeoutMs: 5_000,
};

/** Room for a task's JSON envelope around a payload of `max_task_bytes`. */
const bodyMarginBytes = 64 * 1024;

const diagnosticCatalog: ServerCatalog = {
  taskTypes: () => ['system.echo', 'system.sleep'],
  hasTaskType: (type) => type === 'system.echo' || type === 'system.sleep',
  entryTask: (instance) => ({ ok: false, status: 404, message: `no integration instance \`${instance}\`` }),
};

/** Builds the Fastify app for a config without listening, so tests can `inject` requests into it. */
function noFastifySchemas(): () => never {
  return () => {
    throw new Error('routes validate with zod (route-table.ts): give fastify no `schema`');
  };
}

export function createServer(options: CreateServerOptions): AssistantServer {
  const { config } = options;
  const token = serverToken(options);
  const timeouts = { ...defaultTimeouts, ...options.timeouts };
  const app = Fastify({
    loggerInstance: options.logger ?? pino({ level: 'silent' }),
    // Anything larger could not become a task anyway; refusing it early keeps a 10 MB body out of memory.
    bodyLimit: config.queue.maxTaskBytes + bodyMarginBytes,
    // One line per request, written below, instead of fastify's two; health polls stay out of the info log.
    logController: new LogController({ disableRequestLogging: true }),
    requestTimeout: timeouts.requestTimeoutMs,
    keepAliveTimeout: timeouts.keepAliveTimeoutMs,
    http: {
      headersTimeout: timeouts.headersTimeoutMs,
      requestTimeout: timeouts.requestTimeoutMs,
      keepAliveTimeout: timeouts.keepAliveTimeoutMs,
      // Node checks the two timeouts above on this interval (30 s by default), which would stretch each bound.
      connectionsCheckingInterval: Math.min(1_000, Math.max(100, Math.floor(timeouts.headersTimeoutMs / 2))),
    },
    // Routes validate with zod themselves (route-table.ts) and give fastify no schemas, so its default compilers
    // (ajv and fast-json-stringify, about 10 MB resident) would load for nothing; a route that ever passes fastify
    // a schema fails at registration, saying why.
    schemaController: { compilersFactory: { buildValidator: noFastifySchemas, buildSerializer: noFastifySchemas } },
  });
  // Node's headersTimeout starts with the first byte: a connection that never sends one would be held forever.
  // Until a request arrives the socket may idle for headersTimeoutMs; then the request, response and keep-alive
  // timeouts take over (an answer such as `ask` may be silent for minutes, so no idle limit after that).
  app.server.on('connection', (socket: Socket) => socket.setTimeout(timeouts.headersTimeoutMs));
  app.server.on('request', (request: IncomingMessage) => request.socket.setTimeout(0));
  app.addHook('onResponse', async (request, reply) => {
    const level = request.url === '/health' ? 'debug' : 'info';
    request.log[level](`${request.method} ${request.url} ${reply.statusCode} ${reply.elapsedTime.toFixed(1)}ms`);
  });
  const paths = dataPaths({ dataDir: config.paths.dataDir, queueDir: config.paths.queue });
  registerErrorReplies(app, { scrubPaths: paths.scrub });
  // Order matters: a foreign Host or Origin is refused before the token is looked at, and both before a body is read.
  registerRequestGuard(app, { host: config.server.host, allowedHosts: config.server.allowedHosts });
  const sessions = new DashboardSessions({ apiToken: token.value });
  registerBearerAuth(app, {
    token: token.value,
    tokenSource: token.source === 'config' ? 'server.token' : 'data/api-token',
    sessions,
  });
  registerJsonBodyParser(app);
  let opened: TaskQueue | undefined;
  // Opened once as the server gets ready, so a queue directory it cannot create fails the start, not each request.
  app.addHook('onReady', async () => {
    opened = await openQueue({
      config,
    });
  });
  const queue = () => {
    if (!opened) throw new Error('the queue is opened when the server gets ready');
    return opened;
  };
  // What a request reaches the queue through: while the backend is known to be down (Redis), QUEUE_UNAVAILABLE (503)
  // at once rather than a call that waits for Redis until the client gives up. Schedules, listeners, webhooks and
  // chat keep `queue`: their enqueues wait and go through when Redis is back, so nothing they took in is dropped.
  const requestQueue = () => {
    const down = queue().unavailable?.();
    if (down) throw down;
    return queue();
  };
  const catalog = options.catalog ?? diagnosticCatalog;
  const routes = new RouteTable();
  const fileNotes = new FileNoteStore({ root: config.paths.notes });
  // What the server writes to notes (decided approvals, pauses, edits through the API) is reported to the ledger.
  const notes = options.events
    ? new EventingNoteStore({ notes: fileNotes, events: options.events, source: 'notes' })
    : fileNotes;
  const pauses = new PauseStore({ notes });
  const hooks = options.hooks ?? [];
  const status: ServerStatusSources = {
    pauses: () => pauses.read(),
    ...(hooks.length > 0 ? { hooks: () => readHookStates({ dataDir: config.paths.dataDir, hooks }) } : {}),
    ...options.status,
  };
  registerHealthRoute(app, routes, { queue, status, catalog, llms: config.llms });
  const humanLog = new FileHumanLog({ directory: config.paths.logs });
  registerTaskRoutes(app, routes, {
    queue: requestQueue,
    paths,
    catalog,
    notes,
    humanLog,
    ...(options.registry ? { registry: options.registry } : {}),
  });
  registerIntegrationRoutes(app, routes, { queue: requestQueue, catalog, paths });
  registerSteeringRoutes(app, routes, { queue: requestQueue, controlRoot: config.paths.control });
  registerRemoteSteeringRoutes(app, routes, {
    controlRoot: config.paths.control,
    ...(options.signal ? { signal: options.signal } : {}),
  });
  registerNoteRoutes(app, routes, { notes, root: config.paths.notes });
  registerWorkflowRoutes(app, routes, {
    queue: requestQueue,
    notes,
    configDir: path.dirname(config.paths.configFile),
    notesRoot: config.paths.notes,
  });
  registerRemoteStoreRoutes(app, routes, { notes: fileNotes, humanLog });
  const inShadow = (name: string) => config.integrations.some((entry) => entry.name === name && entry.shadow);
  registerApprovalRoutes(app, routes, { queue: requestQueue, notes, humanLog, inShadow });
  registerActionRoutes(app, routes, { queue: requestQueue, notes, humanLog, registry: options.registry });
  registerPauseRoutes(app, routes, { notes, humanLog, registry: options.registry });
  const chat =
    options.chat ??
    configuredChatService({
      config,
      notes,
      queue: { enqueue: (request) => queue().enqueue(request) },
      registry: options.registry,
      warn: (message) => app.log.warn(message),
    });
  // One count for both kinds of event stream: a client's chat streams and dashboard tabs share its limit.
  const streams = new EventStreamLimiter({ perClient: config.server.eventStreamsPerClient });
  registerChatRoutes(app, routes, {
    chat: () => chat,
    signal: options.signal ?? new AbortController().signal,
    streams,
  });
  const events = options.events ?? serverEventLedger(options);
  // Built on first use: only a dry run with `ask: true` calls a model.
  let llm: ReturnType<typeof createLlmProfiles> | undefined;
  const hookModel = (profile?: string) => {
    llm ??= createLlmProfiles({ config });
    return llm(profile);
  };
  registerEventRoutes(app, routes, { events, signal: options.signal ?? new AbortController().signal, streams });
  registerHookRoutes(app, routes, { hooks, events, dataDir: config.paths.dataDir, llm: hookModel });
  registerPersonaRoutes(app, routes, { config });
  // One memory per server: the stores write through `notes` (so the ledger sees the owner's writes); the index is
  // started by the first search and closed with the server.
  const memory =
    options.memory ??
    openOwnerMemory({
      config,
      notes,
      localNotes: fileNotes,
      logger: { info: (message) => app.log.info(message), warn: (message) => app.log.warn(message) },
    });
  app.addHook('onClose', async () => memory.close());
  registerMemoryRoutes(app, routes, { memory, timeZone: config.owner.timeZone, humanLog });
  const metrics = options.metrics ?? new TaskMetrics();
  registerMetricsRoute(app, routes, {
    queue,
    metrics,
    status,
    catalog,
    llms: config.llms,
    llmUsage: { file: llmUsageFile(config.paths.dataDir), currency: config.owner.currency },
  });
  registerWebhookRoutes(app, routes, {
    logger: app.log,
    registry: options.registry,
    enqueue: (request) => queueEnqueue(queue(), request),
    configDir: path.dirname(config.paths.configFile),
    dataDir: config.paths.dataDir,
    ...(options.events ? { events: options.events } : {}),
    signal: options.signal ?? new AbortController().signal,
    shutdownGraceMs: serverShutdownGraceMs(config),
    apiToken: token.value,
    chat: () => chat,
  });
  registerMcpRoute(app, routes, {
    backend: storeMcpBackend({
      notes,
      queue: requestQueue,
      chat: () => chat,
      entryTask: (instance, platform) => catalog.entryTask(instance, platform),
      dataDir: config.paths.dataDir,
      queueDir: config.paths.queue,
      source: 'api',
      warn: (message) => app.log.warn(message),
    }),
  });
  registerOpenApiRoute(app, routes);
  const live = new LiveHub({
    queue,
    humanLog,
    approvalsDirectory: path.join(config.paths.notes, approvalsFolder),
  });
  app.addHook('onClose', async () => live.close());
  app.addHook('onClose', async () => opened?.close());
  // `server.dashboard: false` (chosen at `assistant init`): the REST API only.
  if (config.server.dashboard)
    registerDashboard(
      app,
      {
        config,
        queue: requestQueue,
        notes,
        humanLog,
        paths,
        catalog,
        registry: options.registry,
        status,
        metrics,
        chat: () => chat,
        sessions,
        live,
        controlRoot: config.paths.control,
        signal: options.signal ?? new AbortController().signal,
        events,
        hooks,
        memory,
        approvals: options.approvals ?? new ApprovalsIndex({ notes, root: config.paths.notes }),
      },
      { apiToken: token.value, streams },
    );
  return app;
}

/** The installation's ledger with the event types its integrations declare, as the worker opens it. */
function serverEventLedger(options: CreateServerOptions): EventLedger {
  return openEventLedger({
    dataDir: options.config.paths.dataDir,
    retentionDays: options.config.events.retentionDays,
    manifests: (options.registry?.integrations ?? []).map((integration) => ({
      name: integration.manifest.domain,
      events: integration.manifest.events,
    })),
  });
}

/** The token passed, else `server.token` (refusing a blank one); without either there is no default. */
function serverToken(options: CreateServerOptions): Pick<ApiToken, 'value' | 'source'> {
  if (typeof options.token === 'string') return { value: options.token, source: 'file' };
  const token = options.token ?? configuredApiToken(options.config);
  if (token === undefined) {
    throw new AssistantError('CONFIG_INVALID', 'createServer needs the API token and none was given', {
      hint: 'pass `token` (runServer reads data/api-token with resolveApiToken) or configure server.token',
    });
  }
  return token;
}
