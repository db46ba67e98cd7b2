export {
  type CheckBubblewrapOptions,
  checkBubblewrap,
  type ScriptSandboxStatus,
} from './bubblewrap.ts';
export {
  type RunnableScript,
  type RunScriptOptions,
  runScript,
  SandboxUnavailableError,
  ScriptFailedError,
  type ScriptLogLevel,
  type ScriptRunResult,
  ScriptTimeoutError,
} from './run-script.ts';
export {
  describeScriptSandbox,
  type ResolveScriptSandboxOptions,
  resolveScriptSandbox,
  type ScriptSandbox,
  type ScriptSandboxReport,
} from './script-sandbox.ts';
