export {
  type CallLog,
  type CallLogEntry,
  type CallLogHeader,
  codeDigest,
  FileCallLog,
  type LoggedOutcome,
} from './call-log.ts';
export { escapeSignals } from './escape-signals.ts';
export {
  type CallRecord,
  type CellErrorKind,
  type CellResult,
  createExecutor,
  type Executor,
  type ExecutorOptions,
  type RunCellOptions,
} from './executor.ts';
export type { JSONValue } from './json-value.ts';
export {
  type CallHost,
  type LiveCall,
  type LoggedCellOptions,
  type LoggedCellResult,
  runLoggedCell,
} from './logged-cell.ts';
export type { PrimitiveCall, PrimitiveHandler, Primitives } from './primitives.ts';
export {
  createToolRegistry,
  type RegisteredTool,
  type RegisteredToolHandler,
  type RegistryEntry,
  type RegistryTier,
  registryPrimitives,
  type ToolRegistry,
  type ToolRegistryOptions,
} from './tool-registry.ts';
