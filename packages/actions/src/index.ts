export type { ActionInstance, ActionRegistry, ActionTaskType, HookAuthority } from './action-registry.ts';
export {
  type DecideApprovalOptions,
  type DecideApprovalResult,
  decideApproval,
  enqueueApproved,
} from './approval-decisions.ts';
export {
  type ApprovalRequest,
  approvalOfNote,
  approvalRendering,
  approvalsFolder,
  bindApproval,
  type CreateApprovalRequestOptions,
  type CreateHookApprovalRequestOptions,
  createApprovalRequest,
  createHookApprovalRequest,
  describeApproval,
  expireApprovals,
  type HookTask,
  hookTaskSchema,
  listApprovals,
  readApproval,
  renderHookFiring,
  sortApprovals,
  statusWithOutcome,
  withdrawTaskToolCalls,
  withRendering,
} from './approvals.ts';
export { ApprovalsIndex, type ApprovalsIndexOptions } from './approvals-index.ts';
export { checkActTask } from './check-act.ts';
export {
  type DecideApprovalsOptions,
  type DecideApprovalsResult,
  decideApprovals,
  type ShownApproval,
} from './decide-approvals.ts';
export {
  type ActionTaken,
  type ActPayload,
  actPayloadSchema,
  type EnqueueActionsOptions,
  type EnqueueActionsResult,
  enqueueActions,
} from './enqueue-actions.ts';
export {
  type ActionState,
  describeOutcome,
  describeSeen,
  type ExplainedAction,
  type ExplainedRule,
  type ExplainItemOptions,
  explainItem,
  type ItemExplanation,
  type ItemRef,
  itemOf,
  type RecordedAction,
  shownValue,
} from './explain-item.ts';
export {
  type RequestManualActionOptions,
  type RequestManualActionResult,
  requestManualAction,
} from './manual-action.ts';
export { approvalId, describe as describeAction, type PlannedAction, plannedActionSchema } from './planned-action.ts';
export {
  type ChatOrigin,
  findService,
  type ProposeActionOptions,
  type ProposedAction,
  proposeAction,
} from './propose-action.ts';
export {
  type ActionFailure,
  type ActionOutcome,
  actionFailureOf,
  type RecordActionOutcomeOptions,
  recordActionOutcome,
} from './record-action-outcome.ts';
export {
  type ApprovalRendering,
  digestOf,
  fitRendering,
  moreCharacters,
  renderAction,
  renderActions,
  renderToolCall,
  type ShownAction,
  type ShownToolCall,
  whereToOpen,
} from './render-approval.ts';
export { renderInputs, renderTemplate } from './render-template.ts';
export {
  auditKeys,
  type RoutedResult,
  type RouteServiceResultOptions,
  rerouteTask,
  routeServiceResult,
} from './route-service-result.ts';
export {
  ActionNotTakenError,
  type ActionStarted,
  type RunActionOnceOptions,
  type RunActionOnceResult,
  runActionOnce,
} from './run-action-once.ts';
export { type ShadowEntry, type ShadowReport, shadowReport } from './shadow-report.ts';
export {
  type CreateToolCallGateOptions,
  createToolCallGate,
  type ToolCallGateDecision,
  type ToolCallGateRequest,
} from './tool-call-gate.ts';
export { matchesToolPattern, type ToolPolicy, type ToolVerdict, toolVerdict } from './tool-policy.ts';
