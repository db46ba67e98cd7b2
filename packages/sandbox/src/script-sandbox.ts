import { checkBubblewrap, defaultBubblewrapPath, type ScriptSandboxStatus } from './bubblewrap.ts';

/**
 * How scripts would run now, from `worker.sandbox` and a trial of bubblewrap, for the worker's start line and
 * `assistant doctor`: `bubblewrap` with the trial's outcome (scripts are refused while it fails), or `none`, the
 * owner's choice. The gate itself is runScript's own check before every run.
 */
export type ScriptSandbox =
  | { mode: 'bubblewrap'; bubblewrapPath: string; status: ScriptSandboxStatus }
  | { mode: 'none' };

/** Options of {@link resolveScriptSandbox}. */
export interface ResolveScriptSandboxOptions {
  /** `worker.sandbox` from config.yaml. */
  mode: 'bubblewrap' | 'none';
  /**
   * The bwrap executable. An internal option for tests that need a missing one.
   * @default 'bwrap' (on PATH)
   */
  bubblewrapPath?: string;
}

/** Tries bubblewrap when the config asks for it (`none` tries nothing) and returns the decision. */
export async function resolveScriptSandbox(options: ResolveScriptSandboxOptions): Promise<ScriptSandbox> {
  if (options.mode === 'none') return { mode: 'none' };
  const bubblewrapPath = options.bubblewrapPath ?? defaultBubblewrapPath;
  return { mode: 'bubblewrap', bubblewrapPath, status: await checkBubblewrap({ bubblewrapPath }) };
}

/** What to tell the owner about a decision, at worker start and in `assistant doctor`. */
export interface ScriptSandboxReport {
  /** `ok` sandboxed, `warn` unsandboxed by choice, `refused` scripts will not run. */
  state: 'ok' | 'warn' | 'refused';
  message: string;
  hint?: string;
}

/** One sentence per decision, the same words in the worker's log and in `assistant doctor`. */
export function describeScriptSandbox(sandbox: ScriptSandbox): ScriptSandboxReport {
  if (sandbox.mode === 'none') {
    return {
      state: 'warn',
      message:
        'scripts run unsandboxed (worker.sandbox: none): they can read and write whatever Assistant can, secrets.yaml and the data folder included',
      hint: 'install bubblewrap (apt-get install bubblewrap) and remove `sandbox: none`',
    };
  }
  if (sandbox.status.usable) {
    return {
      state: 'ok',
      message: 'scripts run sandboxed by bubblewrap (they see only system files, their own file and work folder)',
    };
  }
  return {
    state: 'refused',
    message: `scripts will not run: they need the bubblewrap sandbox, and ${sandbox.status.problem}`,
    hint: 'install bubblewrap (apt-get install bubblewrap) and restart, or accept unsandboxed scripts with `worker.sandbox: none`',
  };
}
