import type { ChatService } from '@assistant/chat';
import { AssistantError } from '@assistant/errors';
import type { EventSink } from '@assistant/events';
import type { DiscoveredIntegration, ManifestWebhook } from '@assistant/manifests';
import type { JsonValue } from '@assistant/queue';
import type { Logger } from 'pino';
import type { InboundKind, IntegrationRegistry, RuntimeInstance } from './integration-registry.ts';
import type { ListenerApprovals } from './listener-approvals.ts';

/**
 * What a listener or a webhook may enqueue: a task of its own integration's domain, nothing else of the queue.
 * Enqueues go through the queue's policies (dedup, rate limits), so a redelivered webhook or a re-polled message
 * does not become a second task.
 */
export interface InboundEnqueueOptions {
  /** A task type of the integration's domain: `chat.telegram.collect`, `service.chat.reply`, `chat.ping`. */
  type: string;
  payload?: JsonValue;
  /** @default the type's priority from the manifest */
  priority?: number;
  readyAtMs?: number;
}

/**
 * Ids only: `duplicate` names the task already waiting; `disabled` says the task is a stage of a platform config.yaml
 * disables for the instance (`platforms: {issues: {enabled: false}}`), so nothing was enqueued.
 */
export type InboundEnqueueOutcome =
  | { status: 'enqueued'; id: string }
  | { status: 'duplicate'; reason: string }
  | { status: 'disabled'; reason: string }
  | { status: 'rate_limited'; reason: string; retryAtMs: number };

export type InboundEnqueue = (options: InboundEnqueueOptions) => Promise<InboundEnqueueOutcome>;

/** The one queue call the server hands to inbound handlers, for one instance (set as the task's `integration`). */
export type QueueEnqueue = (options: {
  type: string;
  payload?: JsonValue;
  priority: number;
  readyAtMs?: number;
  integration: string;
}) => Promise<InboundEnqueueOutcome>;

/**
 * How a listener's source is doing, as it reports it ({@link ListenerContext.condition}): `ok` (it answers),
 * `outage` (unreachable or failing; the listener waits and retries), `credentials_refused` (the source refuses the
 * configured credentials; the listener retries slowly until they are fixed).
 */
export interface ListenerCondition {
  state: 'ok' | 'outage' | 'credentials_refused';
  /** One line for the owner (how it waits, the next retry); never a secret (it is scrubbed again before it is shown). */
  detail?: string;
  /** Since when the source is in this condition. @default when it was first reported */
  since?: Date;
}

/** What a listener's handler gets. */
export interface ListenerContext<Settings = Record<string, unknown>> {
  instance: { name: string; domain: string; settings: Settings };
  /** The listener's name in the manifest. */
  listener: string;
  /** The server's logger, with the instance and listener on every line. */
  logger: Logger;
  enqueue: InboundEnqueue;
  /** Aborted when the server shuts down: stop within the grace period (pass it to every fetch and wait). */
  signal: AbortSignal;
  /** The folder of config.yaml: relative paths in settings resolve against it. */
  configDir: string;
  /**
   * The data directory (`data/`): a listener keeps its own state in a folder of its domain there
   * (`data/<domain>/…`), never elsewhere.
   */
  dataDir: string;
  /**
   * The event ledger (`data/events/`, docs/events.md): report what was taken in (a mail, a delivery) with a native id
   * of the source, so a redelivery is the same event. Absent where no ledger is kept (tests, a remote worker).
   */
  events?: EventSink;
  /** Chat (conversations, messages, their events): given only to the builtin chat integration's listeners. */
  chat?: ChatService;
  /** The approval requests, to show and decide: given only to the builtin chat integration's listeners. */
  approvals?: ListenerApprovals;
  /**
   * Reports how the listener's source is doing (`/health`'s `listeners[].condition`, the dashboard's overview): a
   * listener that waits out an outage or refused credentials is running, and says so here. The same state reported
   * again keeps its `since`. Absent where nothing shows it (tests, a remote worker).
   */
  condition?: (condition: ListenerCondition) => void;
}

/**
 * A process-lifetime loop: it runs until `signal` aborts. Returning earlier or throwing counts as a crash: the server
 * logs it and starts the listener again after a backoff.
 */
// biome-ignore lint/suspicious/noExplicitAny: listeners narrow the settings type for themselves.
export type ListenerFunction = (context: ListenerContext<any>) => Promise<void>;

/** A webhook request, authenticated by the server before the handler sees it. */
export interface WebhookRequest {
  method: string;
  /** Lower-case names, as Node gives them. */
  headers: Readonly<Record<string, string | string[] | undefined>>;
  query: Readonly<Record<string, string | string[] | undefined>>;
  /** The raw body bytes, exactly as sent (signatures are computed over them). */
  body: Buffer;
}

export interface WebhookContext<Settings = Record<string, unknown>> {
  request: WebhookRequest;
  instance: { name: string; domain: string; settings: Settings };
  webhook: string;
  logger: Logger;
  enqueue: InboundEnqueue;
  /** Aborted when the client goes away or the server shuts down. */
  signal: AbortSignal;
  configDir: string;
  /** The data directory, as a listener's: a webhook keeps its state in `data/<domain>/…` (seen delivery ids). */
  dataDir: string;
  /**
   * The event ledger (`data/events/`, docs/events.md): report what was taken in (a mail, a delivery) with a native id
   * of the source, so a redelivery is the same event. Absent where no ledger is kept (tests, a remote worker).
   */
  events?: EventSink;
  /**
   * For an `auth: standard-webhooks` webhook: the `webhook-id` and `webhook-timestamp` the server verified. The id is
   * the sender's, the same on every retry of one message: dedupe on it.
   */
  signed?: { id: string; timestampSeconds: number };
  /** Chat (conversations, messages, their events): given only to the builtin chat integration's webhooks. */
  chat?: ChatService;
}

/** What the webhook answers: a status and a JSON body (a string is sent as text). */
export interface WebhookReply {
  status: number;
  body?: JsonValue;
}

// biome-ignore lint/suspicious/noExplicitAny: webhooks narrow the settings type for themselves.
export type WebhookFunction = (context: WebhookContext<any>) => Promise<WebhookReply>;

/** One listener of one enabled instance. */
export interface ListenerSpec {
  /** `instance/listener`, as logs and /health name it. */
  id: string;
  instance: RuntimeInstance;
  name: string;
  reference: string;
  integration: DiscoveredIntegration;
}

/** Every listener the server starts: each listener of each enabled instance, in instance order. */
export function listenerSpecs(registry: IntegrationRegistry): ListenerSpec[] {
  const specs: ListenerSpec[] = [];
  for (const instance of registry.instances()) {
    if (!instance.enabled) continue;
    const integration = integrationOf(registry, instance.domain);
    for (const [name, listener] of Object.entries(integration?.manifest.listeners ?? {})) {
      if (integration)
        specs.push({ id: `${instance.name}/${name}`, instance, name, reference: listener.handler, integration });
    }
  }
  return specs;
}

/** A webhook of an enabled instance; undefined for an unknown instance or hook and for a disabled instance. */
export function findWebhook(
  registry: IntegrationRegistry,
  instanceName: string,
  hookName: string,
): { instance: RuntimeInstance; webhook: ManifestWebhook; integration: DiscoveredIntegration } | undefined {
  const instance = registry.instance(instanceName);
  if (!instance?.enabled) return undefined;
  const integration = integrationOf(registry, instance.domain);
  const webhook =
    integration && Object.hasOwn(integration.manifest.webhooks, hookName)
      ? integration.manifest.webhooks[hookName]
      : undefined;
  return integration && webhook ? { instance, webhook, integration } : undefined;
}

/**
 * The enqueue an instance's listeners and webhooks get: task types of the instance's domain only, each at its
 * manifest priority, as a task of that instance. Anything else is refused with an error that says what would do.
 */
export function domainEnqueue(options: {
  registry: IntegrationRegistry;
  instance: Pick<RuntimeInstance, 'name' | 'domain'>;
  enqueue: QueueEnqueue;
}): InboundEnqueue {
  const { registry, instance } = options;
  return async (request) => {
    const info = registry.taskType(request.type);
    if (info?.domain !== instance.domain) {
      const own = registry
        .taskTypes()
        .filter((candidate) => candidate.domain === instance.domain)
        .map((candidate) => candidate.type);
      throw new AssistantError(
        'BAD_REQUEST',
        info === undefined
          ? `\`${request.type}\` is not a task type; ${instance.name} may enqueue: ${own.join(', ') || 'none'}`
          : `\`${request.type}\` belongs to the ${info.domain} integration; ${instance.name} (${instance.domain}) may enqueue only its own task types: ${own.join(', ') || 'none'}`,
      );
    }
    if (info.platform !== undefined && registry.instance(instance.name)?.platforms[info.platform]?.enabled === false) {
      return {
        status: 'disabled',
        reason: `platform \`${info.platform}\` of \`${instance.name}\` is disabled in config.yaml`,
      };
    }
    return options.enqueue({
      type: request.type,
      priority: request.priority ?? info.priority,
      integration: instance.name,
      ...(request.payload === undefined ? {} : { payload: request.payload }),
      ...(request.readyAtMs === undefined ? {} : { readyAtMs: request.readyAtMs }),
    });
  };
}

/**
 * The function a listener or webhook runs, imported through the registry like every other handler: its module once
 * per process, inside its integration's folder. Throws {@link ManifestError} at the manifest's line when the module
 * cannot be loaded or does not export a function of that name (the server's start has already refused a missing
 * module; `assistant config check` reports the rest up front).
 */
export async function importInboundHandler<T extends ListenerFunction | WebhookFunction>(
  registry: IntegrationRegistry,
  options: { domain: string; kind: InboundKind; name: string },
): Promise<T> {
  return (await registry.inboundHandler(options)) as unknown as T;
}

function integrationOf(registry: IntegrationRegistry, domain: string): DiscoveredIntegration | undefined {
  return registry.integrations.find((integration) => integration.manifest.domain === domain);
}
