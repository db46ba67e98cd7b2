import path from 'node:path';
import { ApprovalsIndex } from '@assistant/actions';
import type { LoadedConfig } from '@assistant/config';
import { EventingNoteStore, openEventLedger } from '@assistant/events';
import type { CompiledHook } from '@assistant/hooks';
import { IntegrationRegistry, listenerApprovals } from '@assistant/integration-host';
import { discoverIntegrations } from '@assistant/manifests';
import { TaskMetrics } from '@assistant/metrics';
import { describePause, FileHumanLog, FileNoteStore, findPause, PauseStore } from '@assistant/notes';
import {
  dataDirectories,
  explainListenError,
  installation,
  makeDirectoriesPrivate,
  openQueue,
} from '@assistant/process';
import { CircuitBreakers, Scheduler } from '@assistant/scheduler';
import type { Logger } from 'pino';
import { resolveApiToken } from './api-token.ts';
import { ChatNotifier } from './chat-notifier.ts';
import { configuredChatService } from './chat-service.ts';
import { createServer } from './create-server.ts';
import { dataPaths } from './data-paths.ts';
import { queueEnqueue } from './inbound-enqueue.ts';
import { ListenerSupervisor } from './listener-supervisor.ts';
import { scheduledJobs } from './scheduled-jobs.ts';
import { catalogFromRegistry } from './server-catalog.ts';
import { serverShutdownGraceMs } from './shutdown-grace.ts';
import { readSupervisorStatus } from './supervisor-status.ts';
import { ledgerEventEndpoints, WebhookLedgerEvents } from './webhook-ledger-events.ts';
import { outboundTakes, webhookOutbox } from './webhook-outbox.ts';
import { WebhookReplies } from './webhook-replies.ts';
import { withWorkerBreakers } from './worker-breakers.ts';

export interface RunServerOptions {
  config: LoadedConfig;
  logger: Logger;
  /** Aborting it closes the server gracefully: no new connections, in-flight requests finish. */
  signal: AbortSignal;
  /** The integrations and instances. @default the builtin integrations with `config`'s instances */
  registry?: IntegrationRegistry;
  /** The hooks as loaded, shown on `/api/hooks`, the dashboard and `/health` (the worker runs them). @default none */
  hooks?: readonly CompiledHook[];
}

/**
 * Listens on `server.host:server.port`, runs the schedules, and serves until `signal` aborts. Enqueues, never runs
 * tasks. Resolves once the server is closed.
 */
export async function runServer(options: RunServerOptions): Promise<void> {
  const { config, logger, signal } = options;
  const registry =
    options.registry ??
    new IntegrationRegistry({
      integrations: await discoverIntegrations({ builtinDir: installation.builtinIntegrationsDir }),
      config,
    });
  // Listeners and webhooks import their modules when they first run; a manifest of an enabled instance naming a
  // module that is missing or outside its folder stops the server here, at the manifest's line, as the worker stops.
  await registry.checkHandlerModules({ taskTypes: false, inbound: 'enabled' });
  // The event ledger (data/events/): schedules, webhooks and listeners report what they take in.
  const events = openEventLedger({
    dataDir: config.paths.dataDir,
    retentionDays: config.events.retentionDays,
    manifests: registry.integrations.map((integration) => ({
      name: integration.manifest.domain,
      events: integration.manifest.events,
    })),
    warn: (message, details) => logger.warn(details ?? {}, message),
  });
  const fileNotes = new FileNoteStore({ root: config.paths.notes });
  // What the server writes to notes (chat, approvals decided in Telegram, pauses) is reported to the ledger.
  const notes = new EventingNoteStore({ notes: fileNotes, events, source: 'notes' });
  // The approval requests, read incrementally by every pass that looks for them (the notifier, each channel, the
  // dashboard).
  const approvals = new ApprovalsIndex({ notes, root: fileNotes.root });
  const humanLog = new FileHumanLog({ directory: config.paths.logs });
  const breakers = new CircuitBreakers({ notes: fileNotes, settings: config.circuitBreaker, humanLog, logger });
  const metrics = new TaskMetrics();
  // Before the token is made: data/ holds it (and mail and transcripts), so it and the folders in it are the owner's
  // alone, the same ones the worker makes private.
  for (const changed of await makeDirectoriesPrivate(dataDirectories(config.paths))) {
    logger.info(`made ${changed.directory} private: mode ${changed.fromMode.toString(8)} → 700`);
  }
  const token = await resolveApiToken({ config });
  if (token.created) logger.info(`created the API token in ${token.file}; \`assistant token\` prints it`);
  if (token.warning) logger.warn(token.warning);
  const queue = await openQueue({
    config,
    logger: { info: (message) => logger.debug(message), warn: (message) => logger.warn(message) },
  });
  const pauses = new PauseStore({ notes });
  const scheduler = new Scheduler({
    jobs: scheduledJobs({
      registry,
      queue,
      events,
      logger,
      onRejected: (type, outcome) => metrics.recordRejection(type, outcome.status),
    }),
    notes,
    humanLog,
    logger,
    breakers,
    // Read before each run, so `assistant pause`, the API, the dashboard or a hand edit take effect without a restart.
    paused: async (jobId) => {
      const state = await pauses.read();
      const entry = findPause(state, 'schedule', jobId) ?? findPause(state, 'instance', jobId);
      return entry ? `${entry.kind} ${describePause(entry)}` : undefined;
    },
  });
  const chat = configuredChatService({ config, notes, queue, registry, warn: (message) => logger.warn(message) });
  const notifier = new ChatNotifier({
    chat,
    notes,
    approvals,
    queue,
    controlRoot: config.paths.control,
    logger,
    outbox: webhookOutbox({ registry, queue }),
  });
  // Replies of webhook conversations go out only when an endpoint takes them: otherwise nothing reads their logs.
  const replies = outboundTakes(registry, 'reply')
    ? new WebhookReplies({
        chat,
        outbox: webhookOutbox({ registry, queue }),
        stateFile: path.join(config.paths.dataDir, 'chat', 'webhook-replies.json'),
        logger,
      })
    : undefined;
  // Ledger events go out only to endpoints that chose types (`ledger_events`): otherwise nothing reads the ledger.
  const ledgerEndpoints = ledgerEventEndpoints(registry);
  for (const [endpoint, types] of ledgerEndpoints) {
    const unknown = [...types].filter((type) => !events.registry.get(type));
    if (unknown.length > 0) {
      logger.warn(
        `webhook endpoint ${endpoint}: no event type ${unknown.join(', ')} in the ledger: never sent (docs/events.md lists the types)`,
      );
    }
  }
  const ledgerDeliveries =
    ledgerEndpoints.size > 0
      ? new WebhookLedgerEvents({
          ledger: events,
          endpoints: ledgerEndpoints,
          queue,
          stateFile: path.join(config.paths.dataDir, 'chat', 'webhook-events.json'),
          logger,
        })
      : undefined;
  const scrubPaths = dataPaths({ dataDir: config.paths.dataDir, queueDir: config.paths.queue }).scrub;
  const listeners = new ListenerSupervisor({
    registry,
    enqueue: (request) => queueEnqueue(queue, request),
    logger,
    configDir: path.dirname(config.paths.configFile),
    dataDir: config.paths.dataDir,
    events,
    chat,
    approvals: listenerApprovals({
      notes,
      pending: approvals,
      queue,
      humanLog,
      inShadow: (name) => registry.instance(name)?.shadow === true,
    }),
    scrubPaths,
  });
  const app = createServer({
    config,
    logger,
    token,
    catalog: catalogFromRegistry(registry),
    registry,
    ...(options.hooks ? { hooks: options.hooks } : {}),
    status: {
      breakers: async () => withWorkerBreakers(queue, await breakers.list()),
      schedules: () => scheduler.status(),
      listeners: () => listeners.status(),
      processes: () => readSupervisorStatus({ dataDir: config.paths.dataDir, scrubPaths }),
    },
    metrics,
    chat,
    events,
    signal,
    approvals,
  });
  try {
    await app
      .listen({
        host: config.server.host,
        port: config.server.port,
        listenTextResolver: (address) => `listening on ${address}`,
      })
      .catch((error: unknown) => {
        throw explainListenError(error, config.server);
      });
    // Messages stored before a crash, whose turns never reached the queue, get them now.
    const resumed = await chat.resume();
    if (resumed.enqueued > 0) logger.info(`chat: enqueued the turns of ${resumed.enqueued} unanswered messages`);
    await scheduler.start();
    notifier.start();
    replies?.start();
    ledgerDeliveries?.start();
    listeners.start();
    const jobs = scheduler.status();
    logger.info(
      `${jobs.length} schedules: ${jobs.map((job) => `${job.id} next ${job.nextRunAt ?? 'never'}`).join('; ') || 'none'}`,
    );
    if (!signal.aborted) {
      await new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
    }
    logger.info('stopping: closing connections');
  } finally {
    await listeners.close({ graceMs: serverShutdownGraceMs(config) });
    await notifier.close();
    await replies?.close();
    await ledgerDeliveries?.close();
    await scheduler.close();
    await app.close();
    await queue.close();
  }
  logger.info('stopped');
}
