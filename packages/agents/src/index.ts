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
  workflowsFolder,
} from './workflows/load-workflows.ts';
export {
  blackboardPath,
  newRunId,
  type RunWorkflowOptions,
  runIdPattern,
  runNotePath,
  runWorkflow,
} from './workflows/run-workflow.ts';
export type {
  MeshWorkflow,
  PipelineStep,
  PipelineWorkflow,
  StarWorkflow,
  Topology,
  Workflow,
  WorkflowProblem,
  WorkflowRunResult,
  WorkflowTaskPayload,
} from './workflows/workflow-types.ts';
