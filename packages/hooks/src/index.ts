export {
  type AskCache,
  type AskHookOptions,
  askCacheFolder,
  askHook,
  fileAskCache,
  hookPrompt,
  hookVerdictSchema,
} from './ask-hook.ts';
export {
  type CompileHookOptions,
  type CompileHookResult,
  compileHook,
  describeAction,
  type HookCompileProblem,
  type HookEventRegistry,
  hookProvenance,
  hookVersion,
} from './compile-hook.ts';
export {
  type AskHook,
  actionNeedsApproval,
  checkFastPath,
  type DecideHookOptions,
  decideHook,
  effectiveProvenance,
  type HookVerdict,
} from './decide-hook.ts';
export {
  describeHook,
  dryRunHook,
  dryRunJson,
  eventForTest,
  formatDryRun,
  type HookDescription,
  type HookDryRun,
  hookStateJson,
  testEventSchema,
} from './explain-hook.ts';
export { type HookCatalog, type HookTaskType, hookCatalog } from './hook-catalog.ts';
export { actionKinds, hookNamePattern } from './hook-schema.ts';
export type { CompiledHook, HookAction, HookCheck, HookDecision, HookTier } from './hook-types.ts';
export {
  type HookProblem,
  hookConfigProblems,
  hooksFolder,
  type LoadHooksOptions,
  type LoadHooksResult,
  loadHooks,
} from './load-hooks.ts';
export { resolveAt } from './notify-at.ts';
export {
  type HookRequestedBy,
  hookTaskTypes,
  notificationsConversation,
  type PerformHookActionsOptions,
  type PerformHookActionsResult,
  type PlanHookTasksOptions,
  type PlannedHookTask,
  performHookActions,
  planHookTasks,
} from './perform-hook-actions.ts';
export { renderFencedPrompt, renderHookAction, summarizeAction, templateData } from './render-hook-action.ts';
export {
  type FiringRecord,
  firingIdOf,
  HookRunner,
  type HookRunnerLogger,
  type HookRunnerOptions,
  type HookState,
  hookBreakerFailures,
  hookBreakerPauseMs,
  readHookStates,
  type TimerRecord,
} from './runner/hook-runner.ts';
