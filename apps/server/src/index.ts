export { type AssistantServer, type CreateServerOptions, createServer } from './create-server.ts';
export type { HealthBody } from './health-route.ts';
export { type RunServerOptions, runServer } from './run-server.ts';
