export { type ApiToken, type ResolveApiTokenOptions, resolveApiToken } from './api-token.ts';
export { type ConfiguredChatServiceOptions, configuredChatService } from './chat-service.ts';
export { type CreateServerOptions, createServer, type ServerTimeouts } from './create-server.ts';
export type { HealthBody, HealthDetails } from './health-route.ts';
export { type StoreMcpBackendOptions, storeMcpBackend } from './mcp/store-mcp-backend.ts';
export {
  checkDue,
  contactDetail,
  contactNamed,
  normaliseAbout,
  ownerTaskNamed,
} from './memory/owner-memory.ts';
export { type OwnerMemory, openOwnerMemory } from './memory/server-memory.ts';
export { type RunServerOptions, runServer } from './run-server.ts';
export type { AssistantServer } from './server-type.ts';
export { serverShutdownGraceMs } from './shutdown-grace.ts';
