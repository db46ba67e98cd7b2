export type {
  GrantChain,
  GrantLayer,
  Persona,
  PersonaBudget,
  PersonaProblem,
  ToolGrants,
} from './persona-types.ts';
export { childGrantChain, type GrantVerdict, grants, grantVerdict, rootGrantChain } from './personas/grant-chain.ts';
export type {
  ChildRecord,
  ChildResult,
  ChildState,
  ChildStatus,
  SpawnContext,
  SpawnRequest,
  SubAgents,
} from './subagent-types.ts';
export {
  agentsRoot,
  childIdFor,
  childrenDir,
  countLiveChildren,
  deliverChildResult,
  inboxDir,
  listIds,
  readChildRecord,
  readChildResult,
} from './subagents/agent-files.ts';
export { AgentLoopState, type AgentToolsOptions, agentTools, grantsGate } from './subagents/agent-tools.ts';
export { FileSubAgents, type FileSubAgentsOptions, type SubAgentParent } from './subagents/file-sub-agents.ts';
export {
  type AppendBlackboardEntryOptions,
  appendBlackboardEntry,
  type BlackboardEntry,
  type CreateBlackboardOptions,
  createBlackboard,
  readBlackboard,
} from './workflows/blackboard.ts';
