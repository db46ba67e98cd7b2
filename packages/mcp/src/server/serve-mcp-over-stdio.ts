import type { Readable, Writable } from 'node:stream';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import type { AssistantBackend } from './assistant-backend.ts';
import { type CreateAssistantMcpServerOptions, createAssistantMcpServer } from './create-assistant-mcp-server.ts';

export interface ServeMcpOverStdioOptions extends CreateAssistantMcpServerOptions {
  backend: AssistantBackend;
  /** @default process.stdin */
  stdin?: Readable;
  /** Carries nothing but MCP's JSON-RPC messages: logs and warnings belong on stderr. @default process.stdout */
  stdout?: Writable;
  /** Stops serving (SIGINT, SIGTERM). */
  signal?: AbortSignal;
}

/**
 * Serves MCP on stdin/stdout until the client closes stdin (how MCP clients end a stdio server) or `signal` aborts.
 * Resolves once the server is closed.
 */
export async function serveMcpOverStdio(options: ServeMcpOverStdioOptions): Promise<void> {
  const stdin = options.stdin ?? process.stdin;
  const server = createAssistantMcpServer(options.backend, { version: options.version });
  const transport = new StdioServerTransport(stdin, options.stdout ?? process.stdout);
  const ended = new Promise<void>((resolve) => {
    stdin.once('end', resolve);
    stdin.once('close', resolve);
    options.signal?.addEventListener('abort', () => resolve(), { once: true });
  });
  options.signal?.throwIfAborted();
  await server.connect(transport);
  try {
    await ended;
  } finally {
    await server.close();
  }
}
