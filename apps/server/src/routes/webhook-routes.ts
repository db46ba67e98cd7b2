import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import type { ChatService } from '@assistant/chat';
import { isAssistantError, scrubSecretsDeep } from '@assistant/errors';
import type { EventSink } from '@assistant/events';
import {
  domainEnqueue,
  findWebhook,
  type IntegrationRegistry,
  importInboundHandler,
  type QueueEnqueue,
  type WebhookFunction,
} from '@assistant/integration-host';
import { verifyWebhook } from '@assistant/outbound';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import * as z from 'zod';
import { isAuthenticated } from '../bearer-auth.ts';
import { sendError } from '../error-replies.ts';
import { errorBodySchema, type RouteTable } from '../route-table.ts';
import type { AssistantServer } from '../server-type.ts';

export interface WebhookRoutesOptions {
  /** @default none: every hook is 404 */
  registry: IntegrationRegistry | undefined;
  enqueue: QueueEnqueue;
  configDir: string;
  /** The data directory: handlers keep their state in `data/<domain>/…`. */
  dataDir: string;
  /** The event ledger handlers report deliveries to. @default none */
  events?: EventSink;
  /** The server's logger: handlers get a child of it. */
  logger: Logger;
  /** Aborted when the server shuts down; handlers see it through their signal. */
  signal: AbortSignal;
  /** How long a handler may run on after `signal` aborts before it is answered for with 503 and left behind. */
  shutdownGraceMs: number;
  /** The API token: a header carrying it never reaches a handler. */
  apiToken: string;
  /** Chat, for the builtin chat integration's webhooks (`signed`). @default none */
  chat?: () => ChatService;
}

/** Headers that carry the caller's credentials: a handler never sees them. */
const credentialHeaders = new Set(['authorization', 'proxy-authorization', 'cookie']);

/**
 * The one answer to a request that presented no valid credential, whatever was wrong: an unknown instance or hook,
 * a disabled instance, a missing token, a bad signature, a method the hook does not take. Nothing about which
 * webhooks exist can be learnt without the token; the server log says what it was.
 */
const notAuthenticated = {
  code: 'UNAUTHORIZED',
  message: 'the request is not authenticated for this webhook (the server log says why)',
} as const;

const url = '/api/integrations/:instance/hooks/:name';
const methods = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'] as const;

/** Route-level config that the token and content-type hooks read: a webhook authenticates itself. */
interface WebhookRouteConfig {
  public: true;
  webhook: true;
}

const replySchema = z.strictObject({
  status: z.int().min(200).max(599),
  body: z.json().optional(),
});

const paramsSchema = z.object({ instance: z.string(), name: z.string() });

/**
 * `ANY /api/integrations/:instance/hooks/:name`: the webhooks manifests declare. A remote service calls them without
 * the API token, so each webhook is authenticated by what its manifest declares (an HMAC of the raw body checked in
 * constant time, or the API token) before its handler runs; there is no unauthenticated webhook. The route lives in a
 * scope of its own so its body arrives as raw bytes, whatever its content type.
 */
export function registerWebhookRoutes(app: AssistantServer, routes: RouteTable, options: WebhookRoutesOptions): void {
  const largest = Math.max(
    1,
    ...(options.registry?.integrations ?? []).flatMap((integration) =>
      Object.values(integration.manifest.webhooks).map((hook) => hook.max_body),
    ),
  );
  routes.describe({
    method: 'POST',
    url,
    tag: 'integrations',
    summary: 'A webhook an integration declares (any method its manifest lists)',
    description:
      'Called by a remote service, without the API token: the manifest says how a request is authenticated (`auth: hmac-sha256` over the raw body, `auth: standard-webhooks` by the webhook-id, webhook-timestamp and webhook-signature headers, or `auth: token`). The body is passed to the handler as raw bytes; the handler chooses the answer.',
    params: z.strictObject({ instance: z.string(), name: z.string() }),
    public: true,
    responses: {
      200: { description: "the handler's answer (it chooses the status)" },
      400: { description: 'not a valid request', schema: errorBodySchema },
      401: {
        description:
          'not authenticated: the signature or the token is missing or wrong, or a Standard Webhooks timestamp is more than 5 minutes off; without a valid credential also an unknown or disabled webhook, or a method it does not take',
        schema: errorBodySchema,
      },
      404: {
        description: 'with the API token: no such instance or webhook, or the instance is disabled',
        schema: errorBodySchema,
      },
      405: { description: 'with a valid credential: the webhook does not take this method', schema: errorBodySchema },
      413: { description: "the body is larger than the webhook's max_body", schema: errorBodySchema },
      503: {
        description: 'the server is shutting down and the handler did not finish in time',
        schema: errorBodySchema,
      },
    },
  });
  app.register(async (scope) => {
    // Signatures are computed over the exact bytes sent, so no parser may touch them.
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit: largest }, (_request, body, done) =>
      done(null, body),
    );
    scope.route({
      method: [...methods],
      url,
      bodyLimit: largest,
      config: { public: true, webhook: true } satisfies WebhookRouteConfig,
      // Everything that can be decided without the body is, before it is read (the token included).
      onRequest: async (request, reply) => {
        const found = lookUp(options, request);
        if ('status' in found) return refuse(request, reply, found);
        const declared = Number(request.headers['content-length'] ?? 0);
        if (declared > found.webhook.max_body) {
          return sendError(reply, 413, {
            code: 'PAYLOAD_TOO_LARGE',
            message: `the body is ${declared} bytes; this webhook accepts at most ${found.webhook.max_body} (max_body)`,
          });
        }
        return undefined;
      },
      handler: async (request, reply) => {
        const found = lookUp(options, request);
        if ('status' in found) return refuse(request, reply, found);
        const { instance, webhook } = found;
        const body = Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0);
        if (body.length > webhook.max_body) {
          return sendError(reply, 413, {
            code: 'PAYLOAD_TOO_LARGE',
            message: `the body is ${body.length} bytes; this webhook accepts at most ${webhook.max_body} (max_body)`,
          });
        }
        if (webhook.auth === 'hmac-sha256') {
          const refusal = signatureRefusal({
            header: webhook.signature_header ?? '',
            prefix: webhook.signature_prefix ?? 'sha256=',
            secret: settingAt(instance.settings, webhook.secret_setting ?? ''),
            secretSetting: webhook.secret_setting ?? '',
            instance: instance.name,
            request,
            body,
          });
          if (refusal !== undefined) {
            request.log.warn(`webhook ${instance.name}/${paramsSchema.parse(request.params).name} refused: ${refusal}`);
            return sendError(reply, 401, notAuthenticated);
          }
          // Signed: only now may the caller learn that the hook does not take this method.
          if (!webhook.methods.includes(request.method as (typeof methods)[number])) {
            return sendError(reply, 405, methodNotAllowed(webhook.methods, request.method));
          }
        }
        let signed: { id: string; timestampSeconds: number } | undefined;
        if (webhook.auth === 'standard-webhooks') {
          const secret = revealed(settingAt(instance.settings, webhook.secret_setting ?? ''));
          try {
            // lookUp found the secret set; a value that is not `whsec_<base64>` is the owner's mistake, said in the log.
            signed = verifyWebhook({ secret: secret ?? '', headers: request.headers, body });
          } catch (error) {
            if (!isAssistantError(error)) throw error;
            request.log.warn(
              `webhook ${instance.name}/${paramsSchema.parse(request.params).name} refused: ${error.message}${error.code === 'WEBHOOK_SECRET_INVALID' ? ` (setting \`${webhook.secret_setting}\`)` : ''}`,
            );
            return sendError(reply, 401, notAuthenticated);
          }
          if (!webhook.methods.includes(request.method as (typeof methods)[number])) {
            return sendError(reply, 405, methodNotAllowed(webhook.methods, request.method));
          }
        }
        const { name } = paramsSchema.parse(request.params);
        let handle: WebhookFunction;
        try {
          handle = await importInboundHandler<WebhookFunction>(found.registry, {
            domain: instance.domain,
            kind: 'webhook',
            name,
          });
        } catch (error) {
          // A broken module or export (at the manifest's line) is the integration's bug: it goes to the log only.
          // The server's start refused a missing module; `assistant config check` reports a missing export.
          request.log.error({ err: error }, `webhook ${instance.name}/${name} cannot be loaded`);
          return sendError(reply, 500, { code: 'INTERNAL', message: 'the webhook handler failed; see the server log' });
        }
        const controller = new AbortController();
        const onClose = () => {
          if (!reply.raw.writableFinished) controller.abort(new Error('the client went away'));
        };
        reply.raw.once('close', onClose);
        const signal = AbortSignal.any([controller.signal, options.signal]);
        const abandoned = abandonAfterShutdown(options.signal, options.shutdownGraceMs);
        let answer: unknown;
        try {
          const handled = handle({
            request: {
              method: request.method,
              headers: withoutCredentials(request.headers, options.apiToken),
              query: request.query as Record<string, string | string[] | undefined>,
              body,
            },
            instance: { name: instance.name, domain: instance.domain, settings: instance.settings },
            webhook: name,
            logger: options.logger.child({ webhook: `${instance.name}/${name}`, request: request.id }),
            enqueue: domainEnqueue({ registry: found.registry, instance, enqueue: options.enqueue }),
            signal,
            configDir: options.configDir,
            dataDir: options.dataDir,
            ...(options.events ? { events: options.events } : {}),
            ...(signed ? { signed } : {}),
            ...(options.chat && found.integration.origin === 'builtin' && instance.domain === 'chat'
              ? { chat: options.chat() }
              : {}),
          });
          answer = await Promise.race([handled, abandoned.promise]);
          if (answer === abandoned.marker) {
            // Left running: the server's shutdown does not wait on it, and the process's backstop ends it.
            handled.catch(() => {});
            request.log.warn(
              `webhook ${instance.name}/${name} did not return within ${options.shutdownGraceMs} ms of the shutdown signal; leaving it behind`,
            );
            return sendError(reply, 503, {
              code: 'UNAVAILABLE',
              message: 'the server is shutting down; send the request again later',
            });
          }
        } catch (error) {
          // The handler's failure is the integration's bug, not the caller's: the details go to the log only.
          request.log.error({ err: error }, `webhook ${instance.name}/${name} failed`);
          return sendError(reply, 500, { code: 'INTERNAL', message: 'the webhook handler failed; see the server log' });
        } finally {
          abandoned.dispose();
          reply.raw.off('close', onClose);
        }
        const checked = replySchema.safeParse(answer);
        if (!checked.success) {
          request.log.error(
            `webhook ${instance.name}/${name} answered ${JSON.stringify(answer)?.slice(0, 200)}, not {status, body?}`,
          );
          return sendError(reply, 500, { code: 'INTERNAL', message: 'the webhook handler failed; see the server log' });
        }
        reply.code(checked.data.status);
        // A handler may echo a setting or an upstream error: no secret value leaves in its answer.
        const answerBody = scrubSecretsDeep(checked.data.body);
        if (answerBody === undefined) return reply.send();
        if (typeof answerBody === 'string') return reply.type('text/plain; charset=utf-8').send(answerBody);
        return reply.type('application/json; charset=utf-8').send(JSON.stringify(answerBody));
      },
    });
  });
}

type Refusal = {
  status: 401 | 404 | 405;
  error: { code: 'UNAUTHORIZED' | 'NOT_FOUND' | 'METHOD_NOT_ALLOWED'; message: string };
  /** What the server log says when the caller is told only `notAuthenticated`. */
  why: string;
};

type LookUp = Refusal | (NonNullable<ReturnType<typeof findWebhook>> & { registry: IntegrationRegistry });

/**
 * The webhook a request is for, or why it is refused before its body is read (token auth included). A caller with
 * the API token is told what is wrong (404, 405); one without is told only `notAuthenticated`, so webhooks cannot be
 * probed. An HMAC webhook's method is checked after its signature, in the handler.
 */
function lookUp(options: WebhookRoutesOptions, request: FastifyRequest): LookUp {
  const params = paramsSchema.safeParse(request.params);
  const found =
    params.success && options.registry
      ? findWebhook(options.registry, params.data.instance, params.data.name)
      : undefined;
  const where = request.url.split('?')[0];
  const credential = isAuthenticated(request);
  if (!found || !options.registry) {
    // One answer for an unknown instance, an unknown hook and a disabled instance: a caller learns nothing more.
    const why = `no enabled webhook at ${where}`;
    return credential
      ? { status: 404, error: { code: 'NOT_FOUND', message: `no webhook at ${where}` }, why }
      : { status: 401, error: notAuthenticated, why };
  }
  // A Standard Webhooks hook whose secret is not set does not exist for this instance (the owner has not enabled it).
  if (
    found.webhook.auth === 'standard-webhooks' &&
    revealed(settingAt(found.instance.settings, found.webhook.secret_setting ?? '')) === undefined
  ) {
    const why = `${where} is off: instance \`${found.instance.name}\` has no \`${found.webhook.secret_setting}\` set in config.yaml`;
    return credential
      ? { status: 404, error: { code: 'NOT_FOUND', message: `no webhook at ${where} (${why})` }, why }
      : { status: 401, error: notAuthenticated, why };
  }
  if (found.webhook.auth === 'token' && !credential) {
    return {
      status: 401,
      error: notAuthenticated,
      why: `${where} requires the API token (\`Authorization: Bearer <token>\`) and the request has none that matches`,
    };
  }
  // Without the token, an HMAC webhook's method is told only once the signature is checked (in the handler, which
  // has the body).
  if (credential && !found.webhook.methods.includes(request.method as (typeof methods)[number])) {
    const why = `${where} takes ${found.webhook.methods.join(', ')}, not ${request.method}`;
    return { status: 405, error: methodNotAllowed(found.webhook.methods, request.method), why };
  }
  return { ...found, registry: options.registry };
}

function methodNotAllowed(taken: readonly string[], method: string): { code: 'METHOD_NOT_ALLOWED'; message: string } {
  return { code: 'METHOD_NOT_ALLOWED', message: `this webhook takes ${taken.join(', ')}, not ${method}` };
}

/** Answers a refusal, logging why when the caller is told only that it is not authenticated. */
function refuse(request: FastifyRequest, reply: FastifyReply, refusal: Refusal): FastifyReply {
  if (refusal.status === 401) request.log.info(`webhook request refused: ${refusal.why}`);
  return sendError(reply, refusal.status, refusal.error);
}

/** The request's headers without the caller's credentials: a handler has no use for the API token. */
function withoutCredentials(headers: FastifyRequest['headers'], apiToken: string): FastifyRequest['headers'] {
  const kept: FastifyRequest['headers'] = {};
  for (const [name, value] of Object.entries(headers)) {
    if (credentialHeaders.has(name)) continue;
    const values = Array.isArray(value) ? value : [value ?? ''];
    if (apiToken !== '' && values.some((one) => one.includes(apiToken))) continue;
    kept[name] = value;
  }
  return kept;
}

/** Settles with `marker` `graceMs` after `signal` aborts (never before); `dispose` stops waiting. */
function abandonAfterShutdown(
  signal: AbortSignal,
  graceMs: number,
): { promise: Promise<symbol>; marker: symbol; dispose: () => void } {
  const marker = Symbol('abandoned');
  let timer: NodeJS.Timeout | undefined;
  let arm = () => {};
  const promise = new Promise<symbol>((resolve) => {
    arm = () => {
      timer = setTimeout(() => resolve(marker), graceMs);
    };
    if (signal.aborted) arm();
    else signal.addEventListener('abort', arm, { once: true });
  });
  return {
    promise,
    marker,
    dispose: () => {
      signal.removeEventListener('abort', arm);
      clearTimeout(timer);
    },
  };
}

/** Why the signature header does not authenticate the body, or undefined when it does. */
function signatureRefusal(options: {
  header: string;
  prefix: string;
  secret: unknown;
  secretSetting: string;
  instance: string;
  request: FastifyRequest;
  body: Buffer;
}): string | undefined {
  const secret = revealed(options.secret);
  if (secret === undefined) {
    return `instance \`${options.instance}\` has no \`${options.secretSetting}\` set in config.yaml, so no request to this webhook can be authenticated`;
  }
  const sent = options.request.headers[options.header];
  if (typeof sent !== 'string') return `the request has no ${options.header} header (an HMAC-SHA256 signature)`;
  const expected = `${options.prefix}${createHmac('sha256', secret).update(options.body).digest('hex')}`;
  // Hashing both sides gives equal lengths, so the comparison is constant-time and leaks no length either.
  const match = timingSafeEqual(digest(sent.trim().toLowerCase()), digest(expected.toLowerCase()));
  return match ? undefined : `the ${options.header} signature does not match the body`;
}

/** The value of a setting, or of a field of an object setting (`webhooks.secret`). */
function settingAt(settings: Readonly<Record<string, unknown>>, dotted: string): unknown {
  let value: unknown = settings;
  for (const key of dotted.split('.')) {
    if (typeof value !== 'object' || value === null || !Object.hasOwn(value, key)) return undefined;
    value = (value as Record<string, unknown>)[key];
  }
  return value;
}

/** A Secret setting's value, or undefined when unset or blank. */
function revealed(value: unknown): string | undefined {
  if (typeof value !== 'object' || value === null || !('reveal' in value)) return undefined;
  const reveal = (value as { reveal: unknown }).reveal;
  if (typeof reveal !== 'function') return undefined;
  const text = String(reveal.call(value));
  return text.trim() === '' ? undefined : text;
}

function digest(value: string): Buffer {
  return createHash('sha256').update(value).digest();
}
