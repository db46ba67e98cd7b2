// `@assistant/mcp/client` is mcp-servers.ts alone, without Assistant's own MCP server below and the SDK it loads: the
// worker imports that, and loads the SDK's client only when it first starts a server.
export {
  type McpLogger,
  type McpServerStatus,
  McpServers,
  type McpServersOptions,
  type McpToolInfo,
  type RestartBackoff,
  type ServerState,
} from './mcp-servers.ts';
export * from './server/index.ts';
