import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface OutboxServer extends AsyncDisposable {
  url: string;
  /** Every `send` and `slow_send` the server received, in order: `send:<to>`, `slow_send:<to>`. */
  sent(): string[];
  /** `list` calls received. */
  lists(): number;
  /** `slow_send` calls waiting for their answer. */
  held(): number;
  /** Answers every held `slow_send`. */
  release(): void;
}

/**
 * A streamable-HTTP MCP server on loopback that stands for something irreversible: `list` (read only) answers the
 * addresses it was given, `send {to}` records a send and answers at once, `slow_send {to}` records its send and holds
 * its answer until `release()` (a worker can be killed while it runs). It lives in the test's process, so it outlives
 * the workers a test kills, and what it recorded is the truth about what ran. Stateless, as huge-answer-mcp-server.
 */
export async function startOutboxServer(options: { addresses: string[] }): Promise<OutboxServer> {
  const sent: string[] = [];
  let lists = 0;
  const held = new Set<() => void>();
  const http = createServer((request, response) => {
    void handle(request, response).catch(() => response.destroy());
  });

  async function handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    if (request.method !== 'POST') {
      response.writeHead(405, { allow: 'POST' }).end();
      return;
    }
    let text = '';
    for await (const part of request) text += String(part);
    const message = JSON.parse(text) as { id?: number | string; method: string; params?: Record<string, unknown> };
    if (message.id === undefined) {
      response.writeHead(202).end();
      return;
    }
    const answer = (result: unknown) =>
      response
        .writeHead(200, { 'content-type': 'application/json' })
        .end(JSON.stringify({ jsonrpc: '2.0', id: message.id, result }));
    if (message.method === 'initialize') {
      answer({
        protocolVersion: message.params?.protocolVersion,
        capabilities: { tools: {} },
        serverInfo: { name: 'outbox', version: '1.0.0' },
      });
      return;
    }
    const toSchema = {
      type: 'object',
      properties: { to: { type: 'string', description: 'The address.' } },
      required: ['to'],
    };
    if (message.method === 'tools/list') {
      answer({
        tools: [
          {
            name: 'list',
            description: 'Lists the addresses to write to.',
            inputSchema: { type: 'object' },
            annotations: { readOnlyHint: true },
          },
          { name: 'send', description: 'Sends the letter to one address.', inputSchema: toSchema },
          { name: 'slow_send', description: 'Sends the letter to one address, slowly.', inputSchema: toSchema },
        ],
      });
      return;
    }
    if (message.method !== 'tools/call') {
      answer({});
      return;
    }
    const name = message.params?.name;
    const to = String((message.params?.arguments as { to?: unknown } | undefined)?.to ?? '');
    if (name === 'list') {
      lists += 1;
      answer({ content: [{ type: 'text', text: JSON.stringify(options.addresses) }] });
      return;
    }
    sent.push(`${String(name)}:${to}`);
    if (name === 'slow_send') {
      await new Promise<void>((resolve) => {
        held.add(resolve);
        response.on('close', () => {
          held.delete(resolve);
          resolve();
        });
      });
      if (response.destroyed || response.writableEnded) return;
    }
    answer({ content: [{ type: 'text', text: `sent to ${to}` }] });
  }

  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  const { port } = http.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    sent: () => [...sent],
    lists: () => lists,
    held: () => held.size,
    release: () => {
      for (const resolve of [...held]) {
        held.delete(resolve);
        resolve();
      }
    },
    [Symbol.asyncDispose]: () =>
      new Promise<void>((resolve) => {
        for (const answerHeld of [...held]) answerHeld();
        http.closeAllConnections();
        http.close(() => resolve());
      }),
  };
}
