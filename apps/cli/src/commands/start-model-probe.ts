import { loadConfig } from '@assistant/config';
import type { CliContext } from '../cli-context.ts';
import { checkLlmProfile } from '../doctor/check-llm-profile.ts';
import type { GlobalOptions } from '../global-options.ts';

export interface StartModelProbeOptions {
  globals: GlobalOptions;
  context: CliContext;
  /** How long each profile's endpoint may take to answer. @default 5000 */
  timeoutMs?: number;
}

/**
 * `assistant start --probe-models`, which the supervisor runs in the background once the server and the worker are
 * started (start is not delayed by it): asks each configured LLM profile's endpoint for its models with the probe
 * `assistant doctor` uses, and prints one warning line per profile that cannot be reached or does not serve its
 * model, and nothing when all answer. The config was checked by the preflight, so its warnings are not printed again.
 */
export async function startModelProbeCommand(options: StartModelProbeOptions): Promise<void> {
  const { globals, context } = options;
  const { config } = await loadConfig({
    configPath: globals.configPath,
    cwd: context.cwd,
    ...(globals.dataDir === undefined ? {} : { dataDir: globals.dataDir }),
  });
  const checks = await Promise.all(
    Object.entries(config.llms).map(async ([name, profile]) => ({
      name,
      check: await checkLlmProfile({ name, profile, timeoutMs: options.timeoutMs ?? 5_000 }),
    })),
  );
  for (const { name, check } of checks) {
    if (check.ok) continue;
    context.stdout.write(
      `warning: LLM profile \`${name}\` cannot be used: ${check.message}; tasks that need it wait until it answers${check.hint ? ` (${check.hint})` : ''}\n`,
    );
  }
}
