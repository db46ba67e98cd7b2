import type { AssistantBackend } from '@assistant/mcp';
import { assistantVersion } from '@assistant/process';
import * as z from 'zod';
import { errorBodySchema, type RouteTable } from '../route-table.ts';
import type { AssistantServer } from '../server-type.ts';

export interface McpRouteOptions {
  /** The server's own stores behind the tools (storeMcpBackend). */
  backend: AssistantBackend;
}

/**
 * `/mcp`: Assistant as an MCP server over streamable HTTP (stateless: every call is one POST). It sits behind the
 * same hooks as every /api route, registered before it: the Host and Origin checks, the bearer token, the JSON-only
 * body parser. GET and DELETE are answered 405, which MCP clients take as "no server-sent stream, no session".
 */
export function registerMcpRoute(app: AssistantServer, routes: RouteTable, options: McpRouteOptions): void {
  app.route({
    method: ['POST', 'GET', 'DELETE'],
    url: '/mcp',
    handler: async (request, reply) => {
      // The SDK's transport writes the response itself (JSON, or an event stream while a tool waits).
      reply.hijack();
      try {
        // Loaded at the first call: the MCP SDK's server, its JSON Schema validator (ajv) and web transport cost an
        // idle server that nobody reaches over MCP several MB (issue 38).
        const { handleMcpHttpRequest } = await import('@assistant/mcp');
        await handleMcpHttpRequest({
          backend: options.backend,
          request: request.raw,
          response: reply.raw,
          body: request.body,
          version: assistantVersion,
        });
      } catch (error) {
        request.log.error({ err: error }, 'MCP request failed');
        if (!reply.raw.headersSent) {
          reply.raw.writeHead(500, { 'content-type': 'application/json' });
          reply.raw.end(
            JSON.stringify({ jsonrpc: '2.0', error: { code: -32603, message: 'Internal server error' }, id: null }),
          );
        } else reply.raw.end();
      }
    },
  });
  routes.describe({
    method: 'POST',
    url: '/mcp',
    tag: 'mcp',
    summary: 'Assistant as an MCP server (streamable HTTP)',
    description:
      'A JSON-RPC message of the Model Context Protocol (initialize, tools/list, tools/call, resources/list, resources/read…), answered in stateless mode. Send `accept: application/json, text/event-stream`. Tools: search_notes, read_note, list_tasks, show_task, trigger, list_approvals, send_chat_message, read_chat_reply; notes are resources `assistant://notes/{path}`. None approves, steers or writes notes. docs/mcp.md describes them.',
    body: z.looseObject({ jsonrpc: z.literal('2.0'), method: z.string() }),
    responses: {
      200: { description: 'the JSON-RPC response', schema: z.looseObject({ jsonrpc: z.literal('2.0') }) },
      202: { description: 'a notification or response was accepted' },
      400: {
        description: 'not a valid JSON-RPC message (a JSON-RPC error body), or a body that is not JSON',
        schema: z.looseObject({}),
      },
      401: { description: 'no bearer token, or a wrong one', schema: errorBodySchema },
      406: { description: '`accept` does not list both application/json and text/event-stream' },
      405: { description: 'GET and DELETE: the endpoint is stateless' },
    },
  });
}
