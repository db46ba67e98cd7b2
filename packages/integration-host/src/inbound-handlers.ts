import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { AssistantError } from '@assistant/errors';
import { type DiscoveredIntegration, handlerReferencePattern, type ManifestWebhook } from '@assistant/manifests';
import type { JsonValue } from '@assistant/queue';
import type { Logger } from 'pino';
import type { IntegrationRegistry, RuntimeInstance } from './integration-registry.ts';

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

/** Ids only: `duplicate` names the task already waiting. */
export type InboundEnqueueOutcome =
  | { status: 'enqueued'; id: string }
  | { status: 'duplicate'; reason: string }
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
 * Imports the function a listener or webhook reference names (`./src/poll.ts#listen`), which must lie inside its
 * integration's folder. Throws an error naming the manifest and the reference when it cannot.
 */
export async function importInboundHandler<T extends ListenerFunction | WebhookFunction>(
  integration: DiscoveredIntegration,
  reference: string,
): Promise<T> {
  const match = handlerReferencePattern.exec(reference);
  const module = path.resolve(integration.directory, match?.[1] ?? reference);
  const exportName = match?.[2] ?? 'default';
  const relative = path.relative(integration.directory, module);
  const where = `${reference} (${integration.shownPath})`;
  if (relative.startsWith('..') || path.isAbsolute(relative)) {
    throw new AssistantError('MANIFEST_INVALID', `${where} is outside the integration's folder`);
  }
  let exports: Record<string, unknown>;
  try {
    exports = (await import(pathToFileURL(module).href)) as Record<string, unknown>;
  } catch (error) {
    throw new AssistantError(
      'MANIFEST_INVALID',
      `${where} cannot be loaded: ${String((error as Error).message).split('\n')[0]}`,
    );
  }
  const value = exports[exportName];
  if (typeof value !== 'function') {
    throw new AssistantError('MANIFEST_INVALID', `${where}: the module exports no function \`${exportName}\``);
  }
  return value as T;
}

function integrationOf(registry: IntegrationRegistry, domain: string): DiscoveredIntegration | undefined {
  return registry.integrations.find((integration) => integration.manifest.domain === domain);
}
