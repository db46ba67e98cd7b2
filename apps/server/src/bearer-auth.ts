import { createHash, timingSafeEqual } from 'node:crypto';
import type { Secret } from '@assistant/config';
import type { AssistantServer } from './create-server.ts';
import { sendError } from './error-replies.ts';

export interface BearerAuthOptions {
  /** The token every request must carry as `Authorization: Bearer <token>`. */
  token: Secret;
}

/** Requires the API token on every request, unknown routes included, so nothing can be probed without it. */
export function registerBearerAuth(app: AssistantServer, options: BearerAuthOptions): void {
  // Hashing both sides gives equal-length buffers, so timingSafeEqual neither throws nor leaks the token's length.
  const expected = digest(options.token.reveal());
  app.addHook('onRequest', async (request, reply) => {
    const match = /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(request.headers.authorization ?? '');
    if (match?.[1] !== undefined && timingSafeEqual(digest(match[1]), expected)) return;
    reply.header('www-authenticate', 'Bearer');
    return sendError(reply, 401, {
      code: 'UNAUTHORIZED',
      message:
        request.headers.authorization === undefined
          ? 'this server requires `Authorization: Bearer <token>`'
          : 'the bearer token is not the one in server.token',
    });
  });
}

function digest(value: string): Buffer {
  return createHash('sha256').update(value).digest();
}
