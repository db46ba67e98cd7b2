import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * One scripted HTTP answer of {@link WireServer}: a JSON body, a server-sent-event stream (optionally cut: ended
 * before its closing events), or an error status with headers.
 */
export type WireReply =
  | { status?: number; headers?: Record<string, string>; json: unknown }
  | { events: unknown[]; named?: boolean; cutAfter?: number };

/**
 * A minimal loopback server for the adapter contract tests: answers each request with the next scripted reply and
 * records what was sent. Until h32-fakes' full Anthropic/Gemini fakes are merged, the contract tests speak the wire
 * formats through this (the shapes follow the AI SDK's own provider tests).
 */
export class WireServer {
  readonly requests: { url: string; headers: IncomingMessage['headers']; body: Record<string, unknown> }[] = [];
  readonly #server: Server;
  readonly #replies: WireReply[];
  url = '';

  private constructor(replies: WireReply[]) {
    this.#replies = replies;
    this.#server = createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        this.requests.push({
          url: request.url ?? '',
          headers: request.headers,
          body: text === '' ? {} : (JSON.parse(text) as Record<string, unknown>),
        });
        const reply = this.#replies.shift();
        if (reply === undefined) {
          response.writeHead(500, { 'content-type': 'application/json' });
          response.end('{"error":{"message":"no scripted reply left"}}');
          return;
        }
        if ('json' in reply) {
          response.writeHead(reply.status ?? 200, { 'content-type': 'application/json', ...reply.headers });
          response.end(JSON.stringify(reply.json));
          return;
        }
        response.writeHead(200, { 'content-type': 'text/event-stream' });
        reply.events.forEach((event, index) => {
          if (reply.cutAfter !== undefined && index >= reply.cutAfter) return;
          const type = (event as { type?: string }).type;
          response.write(`${reply.named && type ? `event: ${type}\n` : ''}data: ${JSON.stringify(event)}\n\n`);
        });
        // A cut stream ends without its closing events, as when the provider's connection drops between events.
        response.end();
      });
    });
  }

  static async start(replies: WireReply[]): Promise<WireServer> {
    const server = new WireServer(replies);
    await new Promise<void>((resolve) => server.#server.listen(0, '127.0.0.1', resolve));
    server.url = `http://127.0.0.1:${(server.#server.address() as AddressInfo).port}`;
    return server;
  }

  async close(): Promise<void> {
    this.#server.closeAllConnections();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }
}
