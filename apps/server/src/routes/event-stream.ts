import type { ServerResponse } from 'node:http';
import { AssistantError } from '@assistant/errors';
import type { FastifyReply, FastifyRequest } from 'fastify';

/**
 * Takes a reply over for a server-sent event stream: Fastify lets go of it, and the head goes out at once with the
 * headers every stream of this server sends (no caching, and no buffering by a proxy in front).
 */
export function openEventStream(reply: FastifyReply): ServerResponse {
  reply.hijack();
  const raw = reply.raw;
  raw.writeHead(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache',
    connection: 'keep-alive',
    'x-accel-buffering': 'no',
  });
  return raw;
}

/** Seconds a client refused a stream is told to wait: streams are long-lived, so one of its own may have ended. */
const streamRetryAfterSeconds = 10;

/**
 * Counts the event streams each client holds open (`/api/chats/:id/events` and `/live` together), so one client
 * cannot hold thousands: each costs a socket, buffers and a heartbeat timer. A client is its remote address (behind
 * a reverse proxy on this machine, every client is the proxy: raise `server.event_streams_per_client` there).
 */
export class EventStreamLimiter {
  readonly perClient: number;
  readonly #open = new Map<string, number>();

  constructor(options: { perClient: number }) {
    this.perClient = options.perClient;
  }

  /** Streams open now, over all clients. */
  get open(): number {
    let total = 0;
    for (const count of this.#open.values()) total += count;
    return total;
  }

  /**
   * Counts one more stream for the request's client and returns what uncounts it (call it once the stream ended);
   * at the limit, sets `retry-after` on the reply and throws EVENT_STREAMS_FULL (429) instead.
   */
  acquire(request: FastifyRequest, reply: FastifyReply): () => void {
    const client = request.ip;
    const open = this.#open.get(client) ?? 0;
    if (open >= this.perClient) {
      reply.header('retry-after', String(streamRetryAfterSeconds));
      throw new AssistantError(
        'EVENT_STREAMS_FULL',
        `this client (${client}) already has ${open} event streams open, the most server.event_streams_per_client allows (${this.perClient}); close one (a browser tab, a client that follows a conversation) or retry after ${streamRetryAfterSeconds} s`,
      );
    }
    this.#open.set(client, open + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const left = (this.#open.get(client) ?? 1) - 1;
      if (left <= 0) this.#open.delete(client);
      else this.#open.set(client, left);
    };
  }
}
