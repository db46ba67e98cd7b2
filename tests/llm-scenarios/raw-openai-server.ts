import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A loopback server for the OpenAI chat completions API that answers with captured frames as they are, for the
 * fixture builder: the {@link FakeOpenAiServer} of @assistant/llm/testing composes its answers from scripted text,
 * and the builder needs the provider's own frames (its ids, usage and `reasoning_content`) sent byte for byte.
 */
export interface RawOpenAiReply {
  rawEvents?: object[];
  rawBody?: object;
}

export interface RawOpenAiServer extends AsyncDisposable {
  /** The base URL for a client: `http://127.0.0.1:<port>/v1`. */
  readonly url: string;
  /** The parsed bodies of the chat completion requests, in order. */
  readonly requests: Record<string, unknown>[];
  close(): Promise<void>;
}

export async function startRawOpenAiServer(options: {
  respond: (body: Record<string, unknown>, index: number) => RawOpenAiReply;
}): Promise<RawOpenAiServer> {
  const requests: Record<string, unknown>[] = [];
  const server: Server = createServer((request, response) => {
    void (async () => {
      if (request.method !== 'POST' || !request.url?.endsWith('/chat/completions')) {
        response.writeHead(404, { 'content-type': 'application/json' });
        response.end(JSON.stringify({ error: { message: `Not found: ${request.method} ${request.url}` } }));
        return;
      }
      const body = JSON.parse(await readBody(request)) as Record<string, unknown>;
      requests.push(body);
      let reply: RawOpenAiReply;
      try {
        reply = options.respond(body, requests.length - 1);
      } catch (error) {
        response.writeHead(500, { 'content-type': 'application/json' });
        response.end(JSON.stringify({ error: { message: String(error), type: 'server_error' } }));
        return;
      }
      if (reply.rawEvents !== undefined) {
        response.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
        for (const event of reply.rawEvents) response.write(`data: ${JSON.stringify(event)}\n\n`);
        response.end('data: [DONE]\n\n');
        return;
      }
      response.writeHead(200, { 'content-type': 'application/json' });
      response.end(JSON.stringify(reply.rawBody ?? {}));
    })();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  let closed: Promise<void> | undefined;
  const close = () => {
    closed ??= new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
    return closed;
  };
  return { url: `http://127.0.0.1:${port}/v1`, requests, close, [Symbol.asyncDispose]: close };
}

async function readBody(request: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}
