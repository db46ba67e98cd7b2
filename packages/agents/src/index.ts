export type {
  GrantChain,
  GrantLayer,
  Persona,
  PersonaBudget,
  PersonaProblem,
  ToolGrants,
} from './persona-types.ts';
export { type AgentToolName, agentToolNames } from './personas/agent-tool-names.ts';
export { builtinToolNames } from './personas/builtin-tool-names.ts';
export {
  type PersonaConfig,
  type PersonaEntry,
  personaEntries,
  personaEntryJson,
  personaJson,
  personaProblemJson,
  personaSourcesOf,
  toolsSummary,
} from './personas/describe-personas.ts';
export { childGrantChain, type GrantVerdict, grants, grantVerdict, rootGrantChain } from './personas/grant-chain.ts';
export {
  builtinDefaultPersona,
  defaultPersonaName,
  formatPersonaProblem,
  type LoadPersonasOptions,
  type LoadPersonasResult,
  loadPersonas,
  personaConfigProblems,
  personaDefaults,
  personaNamed,
  personaNamePattern,
  personasFolder,
} from './personas/load-personas.ts';
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
  childOwner,
  childrenDir,
  claimChild,
  countLiveChildren,
  deliverChildResult,
  inboxDir,
  listIds,
  readChildRecord,
  readChildResult,
} from './subagents/agent-files.ts';
export { AgentLoopState, type AgentToolsOptions, agentTools, grantsGate } from './subagents/agent-tools.ts';
export { type AgentTreeNode, readAgentTree } from './subagents/agent-tree.ts';
export { FileSubAgents, type FileSubAgentsOptions, type SubAgentParent } from './subagents/file-sub-agents.ts';
export {
  type AppendBlackboardEntryOptions,
  appendBlackboardEntry,
  type BlackboardEntry,
  type CreateBlackboardOptions,
  createBlackboard,
  readBlackboard,
} from './workflows/blackboard.ts';
export {
  type LoadWorkflowsOptions,
  type LoadWorkflowsResult,
  loadWorkflows,
  maxMeshRounds,
  workflowConfigProblems,
  workflowNamePattern,
  workflowPersonas,
  workflowsFolder,
} from './workflows/load-workflows.ts';
export {
  blackboardPath,
  isTaskTimeout,
  newRunId,
  type RunWorkflowOptions,
  runIdPattern,
  runNotePath,
  runWorkflow,
} from './workflows/run-workflow.ts';
export {
  checkedWorkflow,
  formatWorkflowProblem,
  maxWorkflowInputChars,
  personaNamesOf,
  readWorkflowRun,
  type StartWorkflowRunOptions,
  startWorkflowRun,
} from './workflows/start-workflow-run.ts';
export type {
  MeshWorkflow,
  PipelineStep,
  PipelineWorkflow,
  StarWorkflow,
  Topology,
  Workflow,
  WorkflowProblem,
  WorkflowReplyTo,
  WorkflowRunResult,
  WorkflowTaskPayload,
} from './workflows/workflow-types.ts';
