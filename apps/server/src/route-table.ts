import { AssistantError, type ErrorCode } from '@assistant/errors';
import type { FastifyReply, FastifyRequest } from 'fastify';
import * as z from 'zod';
import type { AssistantServer } from './server-type.ts';

/** One documented response of a route. */
interface RouteResponse {
  description: string;
  /** The body's schema; error responses share one. @default none (text or empty) */
  schema?: z.ZodType;
  /** @default application/json */
  contentType?: string;
}

interface RouteInput<Params, Query, Body> {
  params: Params;
  query: Query;
  body: Body;
  request: FastifyRequest;
  reply: FastifyReply;
}

/** A route as written once: fastify registers it, zod checks its input, OpenAPI describes it. */
export interface RouteSpec<Params = unknown, Query = unknown, Body = unknown> {
  method: 'GET' | 'POST' | 'PATCH' | 'DELETE';
  /** fastify's syntax: `/api/tasks/:id`, `/api/notes/*`. */
  url: string;
  summary: string;
  description?: string;
  tag: string;
  params?: z.ZodType<Params>;
  query?: z.ZodType<Query>;
  body?: z.ZodType<Body>;
  responses: Record<number, RouteResponse>;
  /** Answers without the API token (only `GET /health`, for liveness probes). @default false */
  public?: boolean;
  /** The code of a 400 for input that does not match `params`, `query` or `body`. @default 'BAD_REQUEST' */
  inputErrorCode?: ErrorCode;
  handler: (input: RouteInput<Params, Query, Body>) => Promise<unknown>;
}

/** `{error: {code, message}}`, the body of every error response. */
export const errorBodySchema = z.object({ error: z.object({ code: z.string(), message: z.string() }) });

/** Routes registered through one table, so the OpenAPI document lists exactly what the server serves. */
export class RouteTable {
  readonly #routes: RouteSpec<never, never, never>[] = [];

  add<Params, Query, Body>(app: AssistantServer, spec: RouteSpec<Params, Query, Body>): void {
    this.#routes.push(spec as unknown as RouteSpec<never, never, never>);
    app.route({
      method: spec.method,
      url: spec.url,
      config: { public: spec.public === true },
      handler: async (request, reply) => {
        if (!spec.body && !isEmptyBody(request.body)) {
          throw new AssistantError('BAD_REQUEST', `${spec.method} ${spec.url} takes no body; send none (or \`{}\`)`);
        }
        const code = spec.inputErrorCode ?? 'BAD_REQUEST';
        const params = parse(spec.params, request.params, 'path', code);
        const query = parse(spec.query, request.query, 'query', code);
        const body = parse(spec.body, request.body, 'body', code);
        return spec.handler({ params, query, body, request, reply } as RouteInput<Params, Query, Body>);
      },
    });
  }

  /**
   * Lists a route that is registered some other way (webhooks read raw bodies in a scope of their own) in the
   * OpenAPI document, so the document still names every route the server serves.
   */
  describe(spec: Omit<RouteSpec, 'handler'>): void {
    this.#routes.push({ ...spec, handler: async () => undefined } as unknown as RouteSpec<never, never, never>);
  }

  /** The OpenAPI 3.1 document of every route added so far. */
  openApi(info: { title: string; version: string; description: string }): Record<string, unknown> {
    const paths: Record<string, Record<string, unknown>> = {};
    for (const route of this.#routes) {
      const path = route.url.replace(/:([A-Za-z_]+)/g, '{$1}').replace(/\*$/, '{path}');
      const parameters: unknown[] = [];
      // fastify names the wildcard `*`; OpenAPI has no wildcards, so it is the `{path}` parameter of the template.
      for (const [name, schema] of Object.entries(objectShape(route.params))) {
        parameters.push({ name: name === '*' ? 'path' : name, in: 'path', required: true, schema: jsonSchema(schema) });
      }
      if (route.url.endsWith('*') && !('*' in objectShape(route.params))) {
        parameters.push({ name: 'path', in: 'path', required: true, schema: { type: 'string' } });
      }
      for (const [name, schema] of Object.entries(objectShape(route.query))) {
        parameters.push({
          name,
          in: 'query',
          required: !(schema as z.ZodType).safeParse(undefined).success,
          schema: jsonSchema(schema),
        });
      }
      const responses: Record<string, unknown> = {};
      for (const [status, response] of Object.entries(route.responses)) {
        responses[status] = {
          description: response.description,
          ...(response.schema
            ? { content: { [response.contentType ?? 'application/json']: { schema: jsonSchema(response.schema) } } }
            : response.contentType
              ? { content: { [response.contentType]: { schema: { type: 'string' } } } }
              : {}),
        };
      }
      paths[path] ??= {};
      paths[path][route.method.toLowerCase()] = {
        summary: route.summary,
        ...(route.public ? { security: [] } : {}),
        ...(route.description ? { description: route.description } : {}),
        tags: [route.tag],
        ...(parameters.length > 0 ? { parameters } : {}),
        ...(route.body
          ? {
              requestBody: {
                // A body the route also takes absent (`POST /api/chats`) is optional.
                required: !route.body.safeParse(undefined).success,
                content: { 'application/json': { schema: jsonSchema(route.body) } },
              },
            }
          : {}),
        responses,
      };
    }
    return {
      openapi: '3.1.0',
      info,
      components: {
        securitySchemes: {
          bearer: {
            type: 'http',
            scheme: 'bearer',
            description:
              'every route but GET /health: the token in data/api-token (`assistant token` prints it), or server.token',
          },
        },
      },
      security: [{ bearer: [] }],
      paths,
    };
  }
}

/** Validates one part of a request; the first problem becomes a 400 naming where it is. */
function parse<T>(schema: z.ZodType<T> | undefined, value: unknown, where: string, code: ErrorCode): T {
  if (!schema) return value as T;
  const result = schema.safeParse(value ?? (where === 'body' ? undefined : {}));
  if (result.success) return result.data;
  const issue = result.error.issues[0];
  const at = [where, ...(issue?.path ?? []).map(String)].join('.');
  throw new AssistantError(code, `${at}: ${issue?.message ?? 'invalid'}`);
}

/** No body, or an empty JSON object: what a body-less POST may carry. */
function isEmptyBody(body: unknown): boolean {
  return (
    body === undefined ||
    body === null ||
    (typeof body === 'object' && !Array.isArray(body) && Object.keys(body).length === 0)
  );
}

function objectShape(schema: z.ZodType | undefined): Record<string, z.ZodType> {
  if (!schema) return {};
  const shape = (schema as unknown as { shape?: Record<string, z.ZodType> }).shape;
  return shape ?? {};
}

function jsonSchema(schema: z.ZodType): unknown {
  const { $schema: _ignored, ...rest } = z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' }) as Record<
    string,
    unknown
  >;
  return rest;
}

/** The HTTP status each error code answers with. */
export const statusByCode: Partial<Record<ErrorCode, number>> = {
  BAD_REQUEST: 400,
  UNAUTHORIZED: 401,
  FORBIDDEN: 403,
  NOT_FOUND: 404,
  CONFLICT: 409,
  PAYLOAD_TOO_LARGE: 413,
  TOO_MANY_REQUESTS: 429,
  EVENT_STREAMS_FULL: 429,
  UNAVAILABLE: 503,
  // Redis is down: the route that needed it answers at once (/health, /metrics), and again once Redis is back.
  QUEUE_UNAVAILABLE: 503,
  CHAT_NOT_FOUND: 404,
  CHAT_INPUT_INVALID: 400,
  CHAT_MESSAGE_TOO_LARGE: 413,
  CHAT_PENDING_FULL: 429,
  // A conversation note a person broke: the message names the file and line to fix.
  CHAT_NOTE_BROKEN: 409,
  // A fork from a message the conversation's transcript does not hold.
  CHAT_MESSAGE_NOT_FOUND: 404,
  // The event ledger's and the hooks' surfaces (routes/event-routes.ts, routes/hook-routes.ts).
  EVENT_CURSOR_INVALID: 400,
  EVENT_QUERY_INVALID: 400,
  HOOK_TEST_EVENT_INVALID: 400,
  // Personas (routes/persona-routes.ts).
  PERSONA_UNKNOWN: 404,
  WORKFLOW_UNKNOWN: 404,
  // A manifest the owner wrote has problems: the message names each file, line and key to fix.
  WORKFLOW_INVALID: 409,
  // Memory (routes/memory-routes.ts): a bad input to a store, an unknown contact, fact or task, and an extracted fact
  // that may not replace the owner's.
  MEMORY_INPUT_INVALID: 400,
  MEMORY_NOT_FOUND: 404,
  MEMORY_SUPERSEDE_REFUSED: 409,
};
