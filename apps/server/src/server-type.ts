// The server's type, at the bottom of the server's imports: every route family, dashboard page and guard takes the
// app as this type, and create-server.ts, which registers them, imports it from here too — so no route imports the
// file that imports it (issue 38: the server's routes were one import circle of 57 files through create-server.ts).
import type {
  FastifyInstance,
  RawReplyDefaultExpression,
  RawRequestDefaultExpression,
  RawServerDefault,
} from 'fastify';
import type { Logger } from 'pino';

/** The app with our pino logger's type, so route handlers get `request.log` typed as that logger. */
export type AssistantServer = FastifyInstance<
  RawServerDefault,
  RawRequestDefaultExpression,
  RawReplyDefaultExpression,
  Logger
>;
