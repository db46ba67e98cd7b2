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
