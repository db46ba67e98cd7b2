import { type ErrorCode, isAssistantError, scrubSecrets } from '@assistant/errors';
import type { FastifyError, FastifyReply } from 'fastify';
import { sendDashboardError } from './dashboard/error-page.ts';
import { statusByCode } from './route-table.ts';
import type { AssistantServer } from './server-type.ts';

/** The body of every error response: a stable code to match on and a message for people. */
export interface ErrorBody {
  code: ErrorCode;
  message: string;
}

// Stable codes by status, so clients never see framework-internal codes such as FST_ERR_CTP_INVALID_MEDIA_TYPE.
const codeByStatus: Partial<Record<number, ErrorCode>> = {
  400: 'BAD_REQUEST',
  401: 'UNAUTHORIZED',
  403: 'FORBIDDEN',
  404: 'NOT_FOUND',
  409: 'CONFLICT',
  405: 'METHOD_NOT_ALLOWED',
  406: 'NOT_ACCEPTABLE',
  413: 'PAYLOAD_TOO_LARGE',
  415: 'UNSUPPORTED_MEDIA_TYPE',
  429: 'TOO_MANY_REQUESTS',
  503: 'UNAVAILABLE',
};

export interface ErrorRepliesOptions {
  /** Makes the absolute paths a message names relative to the data directory (see DataPaths.scrub). */
  scrubPaths: (message: string) => string;
}

/** Each server's path scrubber, found from a reply through `reply.server` (or the instance it was derived from). */
const pathScrubbers = new WeakMap<object, (message: string) => string>();

function pathScrubberOf(server: object): ((message: string) => string) | undefined {
  for (let current: object | null = server; current !== null; current = Object.getPrototypeOf(current)) {
    const scrub = pathScrubbers.get(current);
    if (scrub) return scrub;
  }
  return undefined;
}

export function sendError(reply: FastifyReply, statusCode: number, error: ErrorBody): FastifyReply {
  // A message can quote what an upstream said (an LLM error echoing its token): no loaded secret leaves here. Nor
  // does the owner's directory layout: a file a message names is shown relative to the data directory.
  const scrubPaths = pathScrubberOf(reply.server) ?? ((message: string) => message);
  if (sendDashboardError(reply, statusCode, scrubPaths(scrubSecrets(error.message)))) return reply;
  return reply
    .code(statusCode)
    .type('application/json; charset=utf-8')
    .send({ error: { ...error, message: scrubPaths(scrubSecrets(error.message)) } });
}

/** Every error, thrown or routed, answers `{error: {code, message}}`. */
export function registerErrorReplies(app: AssistantServer, options: ErrorRepliesOptions): void {
  pathScrubbers.set(app, options.scrubPaths);
  app.setNotFoundHandler((request, reply) =>
    sendError(reply, 404, { code: 'NOT_FOUND', message: `no route for ${request.method} ${request.url}` }),
  );
  app.setErrorHandler((error: FastifyError, request, reply) => {
    // Our own errors carry a stable code; the ones a client can act on answer with their status and message.
    if (isAssistantError(error)) {
      const status = statusByCode[error.code];
      if (status !== undefined) return sendError(reply, status, { code: error.code, message: error.message });
    }
    const statusCode = error.statusCode !== undefined && error.statusCode >= 400 ? error.statusCode : 500;
    if (statusCode >= 500) {
      // The details stay in the log: a stack trace in a response tells a caller about our internals.
      request.log.error({ err: error }, `${request.method} ${request.url} failed`);
      return sendError(reply, statusCode, {
        code: codeByStatus[statusCode] ?? 'INTERNAL',
        message: 'internal error; see the server log',
      });
    }
    return sendError(reply, statusCode, {
      code: codeByStatus[statusCode] ?? 'BAD_REQUEST',
      message: error.message,
    });
  });
}
