import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import {
  domainEnqueue,
  findWebhook,
  type IntegrationRegistry,
  importInboundHandler,
  type QueueEnqueue,
  type WebhookFunction,
} from '@assistant/integration-host';
import type { FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import * as z from 'zod';
import { isAuthenticated } from '../bearer-auth.ts';
import type { AssistantServer } from '../create-server.ts';
import { sendError } from '../error-replies.ts';
import { errorBodySchema, type RouteTable } from '../route-table.ts';

export interface WebhookRoutesOptions {
  /** @default none: every hook is 404 */
  registry: IntegrationRegistry | undefined;
  enqueue: QueueEnqueue;
  configDir: string;
  /** The server's logger: handlers get a child of it. */
  logger: Logger;
  /** Aborted when the server shuts down; handlers see it through their signal. */
  signal: AbortSignal;
}

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
      'Called by a remote service, without the API token: the manifest says how a request is authenticated (`auth: hmac-sha256` over the raw body, or `auth: token`). The body is passed to the handler as raw bytes; the handler chooses the answer.',
    params: z.strictObject({ instance: z.string(), name: z.string() }),
    public: true,
    responses: {
      200: { description: "the handler's answer (it chooses the status)" },
      400: { description: 'not a valid request', schema: errorBodySchema },
      401: { description: 'the signature or the token is missing or wrong', schema: errorBodySchema },
      404: { description: 'no such instance or webhook, or the instance is disabled', schema: errorBodySchema },
      405: { description: 'the webhook does not take this method', schema: errorBodySchema },
      413: { description: "the body is larger than the webhook's max_body", schema: errorBodySchema },
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
        if ('status' in found) return sendError(reply, found.status, found.error);
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
        if ('status' in found) return sendError(reply, found.status, found.error);
        const { instance, webhook, integration } = found;
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
            secret: instance.settings[webhook.secret_setting ?? ''],
            secretSetting: webhook.secret_setting ?? '',
            instance: instance.name,
            request,
            body,
          });
          if (refusal !== undefined) {
            request.log.warn(`webhook ${instance.name}/${paramsSchema.parse(request.params).name} refused: ${refusal}`);
            return sendError(reply, 401, { code: 'UNAUTHORIZED', message: refusal });
          }
        }
        const handle = await importInboundHandler<WebhookFunction>(integration, webhook.handler);
        const controller = new AbortController();
        const onClose = () => {
          if (!reply.raw.writableFinished) controller.abort(new Error('the client went away'));
        };
        reply.raw.once('close', onClose);
        const signal = AbortSignal.any([controller.signal, options.signal]);
        const { name } = paramsSchema.parse(request.params);
        let answer: unknown;
        try {
          answer = await handle({
            request: {
              method: request.method,
              headers: request.headers,
              query: request.query as Record<string, string | string[] | undefined>,
              body,
            },
            instance: { name: instance.name, domain: instance.domain, settings: instance.settings },
            webhook: name,
            logger: options.logger.child({ webhook: `${instance.name}/${name}`, request: request.id }),
            enqueue: domainEnqueue({ registry: found.registry, instance, enqueue: options.enqueue }),
            signal,
            configDir: options.configDir,
          });
        } catch (error) {
          // The handler's failure is the integration's bug, not the caller's: the details go to the log only.
          request.log.error({ err: error }, `webhook ${instance.name}/${name} failed`);
          return sendError(reply, 500, { code: 'INTERNAL', message: 'the webhook handler failed; see the server log' });
        } finally {
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
        if (checked.data.body === undefined) return reply.send();
        if (typeof checked.data.body === 'string')
          return reply.type('text/plain; charset=utf-8').send(checked.data.body);
        return reply.type('application/json; charset=utf-8').send(JSON.stringify(checked.data.body));
      },
    });
  });
}

type LookUp =
  | { status: 401 | 404 | 405; error: { code: 'UNAUTHORIZED' | 'NOT_FOUND' | 'METHOD_NOT_ALLOWED'; message: string } }
  | (NonNullable<ReturnType<typeof findWebhook>> & { registry: IntegrationRegistry });

/** The webhook a request is for, or why it is refused before its body is read (token auth included). */
function lookUp(options: WebhookRoutesOptions, request: FastifyRequest): LookUp {
  const params = paramsSchema.safeParse(request.params);
  const found =
    params.success && options.registry
      ? findWebhook(options.registry, params.data.instance, params.data.name)
      : undefined;
  if (!found || !options.registry) {
    // One answer for an unknown instance, an unknown hook and a disabled instance: a caller learns nothing more.
    return { status: 404, error: { code: 'NOT_FOUND', message: `no webhook at ${request.url.split('?')[0]}` } };
  }
  if (!found.webhook.methods.includes(request.method as (typeof methods)[number])) {
    return {
      status: 405,
      error: {
        code: 'METHOD_NOT_ALLOWED',
        message: `this webhook takes ${found.webhook.methods.join(', ')}, not ${request.method}`,
      },
    };
  }
  if (found.webhook.auth === 'token' && !isAuthenticated(request)) {
    return {
      status: 401,
      error: {
        code: 'UNAUTHORIZED',
        message: 'this webhook requires `Authorization: Bearer <token>`; `assistant token` prints the token',
      },
    };
  }
  return { ...found, registry: options.registry };
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
