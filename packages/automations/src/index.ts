export {
  type ActionCatalog,
  type AutomationMatch,
  actionAllowed,
  actionKey,
  type CompiledRule,
  compileAutomations,
  evaluateRules,
  type ItemFacts,
  type Provenance,
  provenances,
  type ResolvedAction,
  type RuleProblem,
} from './compile-automations.ts';
export type { Condition, ConditionSubject, FieldType } from './conditions.ts';
export {
  automationChecks,
  compilePlatformAutomations,
  platformFields,
  platformTrustedFields,
} from './platform-automations.ts';
