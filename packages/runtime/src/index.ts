// Fencing lives in @assistant/llm, below the agent loop that fences tool results; re-exported for integrations.
export {
  type FencedText,
  type FenceUntrustedOptions,
  fenceUntrusted,
  type UntrustedFields,
} from '@assistant/llm';
export {
  type ApprovalRequest,
  approvalsFolder,
  type CreateApprovalRequestOptions,
  createApprovalRequest,
  type DecideApprovalOptions,
  type DecideApprovalResult,
  decideApproval,
  expireApprovals,
  listApprovals,
  readApproval,
} from './actions/approvals.ts';
export { checkActTask } from './actions/check-act.ts';
export {
  type ActionTaken,
  type ActPayload,
  actPayloadSchema,
  approvalId,
  describe as describeAction,
  type EnqueueActionsOptions,
  type EnqueueActionsResult,
  enqueueActions,
  type PlannedAction,
  plannedActionSchema,
} from './actions/enqueue-actions.ts';
export {
  type RequestManualActionOptions,
  type RequestManualActionResult,
  requestManualAction,
} from './actions/manual-action.ts';
export { renderInputs, renderTemplate } from './actions/render-template.ts';
export {
  auditKeys,
  type RoutedResult,
  type RouteServiceResultOptions,
  rerouteTask,
  routeServiceResult,
} from './actions/route-service-result.ts';
export {
  ActionNotTakenError,
  type ActionStarted,
  type RunActionOnceOptions,
  type RunActionOnceResult,
  runActionOnce,
} from './actions/run-action-once.ts';
export { noteTranscript, transcriptsFolder } from './agent/note-transcript.ts';
export {
  type ActionCatalog,
  type AutomationMatch,
  actionAllowed,
  type CompiledRule,
  compileAutomations,
  evaluateRules,
  type ItemFacts,
  type Provenance,
  type ResolvedAction,
  type RuleProblem,
} from './automations/compile-automations.ts';
export type { Condition, ConditionSubject, FieldType } from './automations/conditions.ts';
export {
  automationChecks,
  compilePlatformAutomations,
  platformFields,
  platformTrustedFields,
} from './automations/platform-automations.ts';
export { type ApplySteeringOptions, applySteering, type SteerableTarget } from './control/apply-steering.ts';
export {
  type ControlEvent,
  ControlFiles,
  type SteeringAction,
  type SteeringOutcome,
  type SteeringRequest,
  steeringActions,
  steeringRequestSchema,
} from './control/control-files.ts';
export {
  builtinIntegrationsDir,
  type DiscoveredIntegration,
  type DiscoverIntegrationsOptions,
  discoverIntegrations,
  type IntegrationOrigin,
  unlistedPackageIntegrations,
} from './discover-integrations.ts';
export type {
  AgentTaskOptions,
  HandlerContext,
  HandlerEnqueueOptions,
  HumanLogDetails,
  InstanceContext,
  PlatformContext,
  ScriptsContext,
  TaskHandler,
} from './handler-context.ts';
export {
  type DoctorCheckFunction,
  type EntryTaskResult,
  IntegrationRegistry,
  integrationConfigSchemas,
  type RuntimeInstance,
  type TaskTypeInfo,
  type TaskTypeKind,
} from './integration-registry.ts';
export {
  ignoredPackageIntegrations,
  type LoadedRuntime,
  type LoadRuntimeOptions,
  loadRuntime,
} from './load-runtime.ts';
export {
  type Manifest,
  type ManifestPlatform,
  type ManifestService,
  manifestSchema,
  type ReversibilityTier,
  reversibilityTiers,
} from './manifest/manifest-schema.ts';
export {
  formatManifestProblem,
  ManifestError,
  type ManifestProblem,
  parseManifest,
  readManifest,
} from './manifest/read-manifest.ts';
export { type SettingSpec, type SettingType, settingTypes } from './manifest/setting-spec.ts';
export {
  durationBucketsSeconds,
  type MetricsSnapshot,
  mergeSnapshots,
  metricsSnapshotSchema,
  parseSnapshots,
  type RejectionReason,
  type RenderPrometheusOptions,
  readMetricsFiles,
  rejectionReasons,
  renderPrometheus,
  TaskMetrics,
  type TaskOutcomeName,
  taskOutcomes,
  writeMetricsFile,
} from './metrics/task-metrics.ts';
export {
  type BreakerState,
  type CircuitBreakerSettings,
  CircuitBreakers,
  type CircuitBreakersOptions,
  circuitBreakerFolder,
  type ScheduledRunPermission,
} from './scheduler/circuit-breakers.ts';
export { type Clock, FakeClock, systemClock } from './scheduler/clock.ts';
export {
  type ScheduledJob,
  type ScheduledJobStatus,
  type ScheduledRun,
  type ScheduledRunReason,
  Scheduler,
  type SchedulerOptions,
  scheduleFolder,
} from './scheduler/scheduler.ts';
export {
  type CheckBubblewrapOptions,
  checkBubblewrap,
  type ScriptSandboxStatus,
} from './scripts/bubblewrap.ts';
export {
  type RunnableScript,
  type RunScriptOptions,
  runScript,
  SandboxUnavailableError,
  ScriptFailedError,
  type ScriptLogLevel,
  type ScriptRunResult,
  ScriptTimeoutError,
} from './scripts/run-script.ts';
export {
  describeScriptSandbox,
  type ResolveScriptSandboxOptions,
  resolveScriptSandbox,
  type ScriptSandbox,
  type ScriptSandboxReport,
} from './scripts/script-sandbox.ts';
