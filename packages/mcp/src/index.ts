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
