import type { LoadedConfig } from '@assistant/config';
import { AssistantError } from '@assistant/errors';
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
}

/** Builds the Fastify app for a config without listening, so tests can `inject` requests into it. */
export function createServer(options: CreateServerOptions): AssistantServer {
  const app = Fastify({
    loggerInstance: options.logger ?? pino({ level: 'silent' }),
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
  registerHealthRoute(app, options.config);
  return app;
}
