import { describeScriptSandbox, resolveScriptSandbox } from '@assistant/sandbox';
import type { DoctorCheck } from './doctor-check.ts';

export interface CheckScriptSandboxOptions {
  /** `worker.sandbox` from config.yaml. */
  mode: 'bubblewrap' | 'none';
  /** How many scripts config.yaml defines: a sandbox that does not work only fails the check when there are some. */
  scriptCount: number;
  /**
   * The bwrap executable. An internal option for tests that need a missing one.
   * @default 'bwrap' (on PATH)
   */
  bubblewrapPath?: string;
}

/**
 * Whether scripts will run, in the same words as the worker's start: sandboxed (ok), unsandboxed by `sandbox: none`
 * (warn), or refused because bubblewrap does not work here (FAIL when scripts are configured, warn otherwise).
 */
export async function checkScriptSandbox(options: CheckScriptSandboxOptions): Promise<DoctorCheck> {
  const sandbox = await resolveScriptSandbox({
    mode: options.mode,
    ...(options.bubblewrapPath === undefined ? {} : { bubblewrapPath: options.bubblewrapPath }),
  });
  const report = describeScriptSandbox(sandbox);
  const hint = report.hint === undefined ? {} : { hint: report.hint };
  if (report.state === 'ok') return { ok: true, message: `sandbox: ${report.message}` };
  if (report.state === 'warn') return { ok: true, warning: true, message: `sandbox: ${report.message}`, ...hint };
  const none = options.scriptCount === 0;
  return {
    ok: none,
    ...(none ? { warning: true } : {}),
    message: `sandbox: ${report.message}${none ? ' (none are configured yet)' : ''}`,
    ...hint,
  };
}
