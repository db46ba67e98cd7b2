import { isLoopbackHost } from '@assistant/config';
import type { FastifyRequest } from 'fastify';
import { sendError } from './error-replies.ts';
import type { AssistantServer } from './server-type.ts';

export interface RequestGuardOptions {
  /** `server.host`: the configured name is allowed unless it is a wildcard address (0.0.0.0, ::). */
  host: string;
  /** `server.allowed_hosts`: more names (without port) a `Host` header may carry. */
  allowedHosts: readonly string[];
}

const wildcardHosts = new Set(['0.0.0.0', '::', '[::]', '']);
const bodylessMethods = new Set(['GET', 'HEAD']);

/**
 * Refuses what a web page in the owner's browser could send, before authentication and before any body is read:
 * a `Host` that is not ours (421: DNS rebinding points an attacker's name at 127.0.0.1), an `Origin` other than our
 * own (403: a cross-site fetch, form post or EventSource), and a body that is not JSON (415: a cross-site form post
 * needs no CORS preflight, a JSON one does). A hook, so routes added later are covered without doing anything.
 */
export function registerRequestGuard(app: AssistantServer, options: RequestGuardOptions): void {
  const names = new Set(
    [options.host, ...options.allowedHosts]
      .map((name) => name.toLowerCase().replace(/^\[|\]$/g, ''))
      .filter((name) => !wildcardHosts.has(name)),
  );
  const listeningPort = (): number | undefined => {
    const address = app.server.address();
    return address !== null && typeof address === 'object' ? address.port : undefined;
  };

  app.addHook('onRequest', async (request, reply) => {
    const host = parseHost(request.headers.host);
    const port = listeningPort();
    const hostAllowed =
      host !== undefined &&
      (isLoopbackHost(host.name) || names.has(host.name)) &&
      // Not listening yet (injected requests): any port. Listening: the port we listen on, or none.
      (host.port === undefined || port === undefined || host.port === port);
    if (!hostAllowed) {
      return sendError(reply, 421, {
        code: 'MISDIRECTED_REQUEST',
        message: `the Host header ${JSON.stringify(shorten(request.headers.host ?? ''))} is not this server's name; allowed are localhost, 127.0.0.1, [::1]${[...names].map((name) => `, ${name}`).join('')} (server.allowed_hosts adds more)`,
      });
    }
    const refusal = crossSiteRefusal(request);
    if (refusal !== undefined) return sendError(reply, 403, { code: 'FORBIDDEN', message: refusal });
    // A webhook takes what its remote service sends (GitHub may send a form); it is authenticated by a signature
    // or the token, which a cross-site form post cannot carry, so the JSON-only rule has nothing to protect there.
    const routeConfig = request.routeOptions.config as { webhook?: boolean; dashboard?: boolean } | undefined;
    const webhook = routeConfig?.webhook === true;
    if (!bodylessMethods.has(request.method) && !webhook) {
      const contentType = request.headers['content-type'];
      const mediaType = contentType?.split(';')[0]?.trim().toLowerCase();
      // The dashboard's forms post urlencoded bodies; those routes check a CSRF token (dashboard-auth.ts), which a
      // cross-site form cannot know, on top of the Origin and Sec-Fetch-Site checks above.
      if (routeConfig?.dashboard === true && mediaType === 'application/x-www-form-urlencoded') return;
      const hasBody =
        request.headers['transfer-encoding'] !== undefined || Number(request.headers['content-length'] ?? 0) > 0;
      if ((contentType !== undefined && mediaType !== 'application/json') || (contentType === undefined && hasBody)) {
        return sendError(reply, 415, {
          code: 'UNSUPPORTED_MEDIA_TYPE',
          message: `the body must be JSON sent as \`content-type: application/json\`, got ${contentType === undefined ? 'no content type' : `\`${shorten(contentType)}\``}`,
        });
      }
    }
  });
}

/** Why a request from another site is refused, or undefined when it is our own or not from a browser page. */
function crossSiteRefusal(request: FastifyRequest): string | undefined {
  const origin = request.headers.origin;
  if (origin !== undefined) {
    const own = [`http://${request.headers.host}`, `https://${request.headers.host}`].map((value) =>
      value.toLowerCase(),
    );
    if (!own.includes(origin.toLowerCase())) {
      return `requests from web pages of other origins are refused (Origin ${JSON.stringify(shorten(origin))}); call the API from a program, which sends no Origin`;
    }
  }
  // Fetch metadata, where the browser sends it: a write from any other site, even one on localhost, is refused.
  const site = request.headers['sec-fetch-site'];
  if (!bodylessMethods.has(request.method) && site !== undefined && site !== 'same-origin' && site !== 'none') {
    return `requests from web pages of other sites are refused (Sec-Fetch-Site: ${shorten(String(site))})`;
  }
  return undefined;
}

/** `name`, `name:port`, `[v6]` or `[v6]:port`; undefined when the header is missing or malformed. */
function parseHost(header: string | undefined): { name: string; port?: number } | undefined {
  if (header === undefined) return undefined;
  const match = /^(?:\[([0-9a-fA-F:.]+)\]|([^:[\]]+))(?::(\d{1,5}))?$/.exec(header.trim());
  if (!match) return undefined;
  const name = (match[1] ?? match[2] ?? '').toLowerCase();
  if (name === '') return undefined;
  return match[3] === undefined ? { name } : { name, port: Number(match[3]) };
}

function shorten(text: string): string {
  return text.length > 100 ? `${text.slice(0, 100)}…` : text;
}
