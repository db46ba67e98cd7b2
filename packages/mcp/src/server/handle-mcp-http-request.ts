import type { IncomingMessage, ServerResponse } from 'node:http';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { AssistantBackend } from './assistant-backend.ts';
import { type CreateAssistantMcpServerOptions, createAssistantMcpServer } from './create-assistant-mcp-server.ts';

export interface HandleMcpHttpRequestOptions extends CreateAssistantMcpServerOptions {
  backend: AssistantBackend;
  request: IncomingMessage;
  response: ServerResponse;
  /** The JSON body, already parsed by the web framework (undefined for GET and DELETE). */
  body: unknown;
}

/**
 * Answers one streamable-HTTP MCP request in stateless mode (no session id generator): a fresh server and transport
 * per request, closed when the response is. A tool call is answered as a short event stream, so `read_chat_reply`
 * can send progress notifications while it waits. Stateless because every tool is a single request and reply (even
 * `read_chat_reply`, which holds its response open while it waits), so sessions would only add state to expire. GET
 * (a stream of messages the server starts, which ours never sends) and DELETE (ending a session, of which there are
 * none) are answered 405, as the protocol allows; clients then use POST alone. Authentication, Host and Origin checks
 * are the caller's.
 */
export async function handleMcpHttpRequest(options: HandleMcpHttpRequestOptions): Promise<void> {
  if (options.request.method !== 'POST') {
    options.response.writeHead(405, { allow: 'POST', 'content-type': 'application/json' }).end(
      JSON.stringify({
        jsonrpc: '2.0',
        error: {
          code: -32000,
          message: 'Method not allowed: this MCP endpoint is stateless; send each request as a POST',
        },
        id: null,
      }),
    );
    return;
  }
  const server = createAssistantMcpServer(options.backend, { version: options.version });
  const transport = new StreamableHTTPServerTransport({});
  options.response.on('close', () => {
    void transport.close();
    void server.close();
  });
  await server.connect(transport);
  await transport.handleRequest(options.request, options.response, options.body);
}
