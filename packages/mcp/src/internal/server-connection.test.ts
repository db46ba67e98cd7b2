import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { isAssistantError } from '@assistant/errors';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it } from 'vitest';
import { ServerConnection } from './server-connection.ts';

/** An MCP server on loopback (stateless streamable HTTP) whose tools/list always says there is another page. */
async function endlessToolsServer() {
  let pagesServed = 0;
  const http = createServer((request, response) => {
    const server = new Server({ name: 'endless', version: '1.0.0' }, { capabilities: { tools: {} } });
    server.setRequestHandler(ListToolsRequestSchema, async () => {
      pagesServed += 1;
      return {
        tools: [{ name: `tool_${pagesServed}`, inputSchema: { type: 'object' } }],
        nextCursor: `page-${pagesServed}`,
      };
    });
    const transport = new StreamableHTTPServerTransport({ enableJsonResponse: true });
    response.on('close', () => {
      void transport.close();
      void server.close();
    });
    void server.connect(transport).then(() => transport.handleRequest(request, response));
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  const { port } = http.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    pagesServed: () => pagesServed,
    [Symbol.asyncDispose]: () =>
      new Promise<void>((resolve) => {
        http.closeAllConnections();
        http.close(() => resolve());
      }),
  };
}

describe('ServerConnection', () => {
  it('gives up on a server whose tools/list never ends, instead of reading pages forever', async () => {
    await using remote = await endlessToolsServer();
    const connection = new ServerConnection({
      name: 'endless',
      config: {
        transport: 'http',
        url: remote.url,
        headers: {},
        allow: ['*'],
        deny: [],
        readOnly: [],
        timeoutMs: 5_000,
        trustAnnotations: true,
        maxResponseBytes: 1024 * 1024,
      },
      logger: { info: () => {}, warn: () => {} },
      backoff: { initialMs: 1_000, maxMs: 60_000 },
    });
    try {
      const error = await connection.tools().catch((caught: unknown) => caught);
      expect(isAssistantError(error, 'MCP_CALL_FAILED')).toBe(true);
      expect((error as Error).message).toMatch(/more than 100 pages of tools/);
      expect(remote.pagesServed()).toBe(100);
    } finally {
      await connection.close();
    }
  });
});
