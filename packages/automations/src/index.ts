export {
  type ActionCatalog,
  type ActionExplanation,
  type AutomationMatch,
  actionAllowed,
  actionKey,
  type CompiledRule,
  type ConditionExplanation,
  type ConditionNode,
  compileAutomations,
  type EvaluateRulesOptions,
  evaluateRules,
  explainRules,
  type ItemFacts,
  type Provenance,
  provenances,
  type ResolvedAction,
  type RuleExplanation,
  type RuleProblem,
} from './compile-automations.ts';
export {
  type CompileConditionTreeOptions,
  type ConditionProblem,
  compileConditionTree,
  conditionGroups,
  conditionTruth,
  describeConditionTree,
  type Truth,
} from './condition-tree.ts';
export type { Condition, ConditionSubject, ConditionValue, FieldType } from './conditions.ts';
export {
  automationChecks,
  compilePlatformAutomations,
  itemFacts,
  platformFields,
  platformTrustedFields,
  serviceResolver,
} from './platform-automations.ts';
