import { ConfigError, formatProblem, type LoadedConfig } from '@assistant/config';
import { isAssistantError } from '@assistant/errors';
import { type IntegrationRegistry, ignoredPackageIntegrations } from '@assistant/integration-host';
import { installation } from '@assistant/process';
import type { CliContext } from '../cli-context.ts';
import { checkDataDirectories } from '../doctor/check-data-directories.ts';
import { checkIntegrationCredentials } from '../doctor/check-integration-credentials.ts';
import { checkLlmProfile } from '../doctor/check-llm-profile.ts';
import { checkQueue } from '../doctor/check-queue.ts';
import { checkScriptSandbox } from '../doctor/check-script-sandbox.ts';
import { type DoctorCheck, formatDoctorCheck } from '../doctor/doctor-check.ts';
import { profileLines } from '../doctor/profile-lines.ts';
import type { GlobalOptions } from '../global-options.ts';
import { loadCliConfig } from '../load-cli-config.ts';

export interface DoctorCommandOptions {
  globals: GlobalOptions;
  context: CliContext;
}

/** Checks what `assistant start` needs, one line each. Resolves to the exit code: 0 all ok or warn, 1 any FAIL. */
export async function doctorCommand(options: DoctorCommandOptions): Promise<number> {
  const { context } = options;
  let failed = false;
  const print = (checks: DoctorCheck[]) => {
    for (const check of checks) {
      failed ||= !check.ok;
      context.stdout.write(`${formatDoctorCheck(check)}\n`);
    }
  };

  let config: LoadedConfig;
  let registry: IntegrationRegistry;
  try {
    ({ config, registry } = await loadCliConfig(options));
    print([{ ok: true, message: `config ${config.paths.configFile} is valid` }]);
  } catch (error) {
    // The other checks all need a config, so there is nothing more to check.
    if (error instanceof ConfigError) {
      print([
        {
          ok: false,
          message: error.message.split('\n')[0] ?? 'invalid configuration',
          details: error.problems.map(formatProblem),
          ...(error.hint ? { hint: error.hint } : {}),
        },
      ]);
      return 1;
    }
    if (isAssistantError(error, 'CONFIG_NOT_FOUND')) {
      print([{ ok: false, message: error.message, ...(error.hint ? { hint: error.hint } : {}) }]);
      return 1;
    }
    throw error;
  }

  print(await checkDataDirectories({ paths: config.paths }));
  print([await checkQueue(config)]);
  print([await checkScriptSandbox({ mode: config.worker.sandbox, scriptCount: Object.keys(config.scripts).length })]);
  const profiles = Object.entries(config.llms);
  if (profiles.length === 0) print([{ ok: true, message: 'llm: no profiles configured' }]);
  const lines = await profileLines({ configFile: config.paths.configFile, cwd: context.cwd });
  // In parallel: an unreachable endpoint costs its whole timeout, and there may be several.
  print(
    await Promise.all(
      profiles.map(([name, profile]) => {
        const where = lines.get(name);
        return checkLlmProfile({ name, profile, ...(where ? { where } : {}) });
      }),
    ),
  );
  if (config.integrations.length === 0) print([{ ok: true, message: 'integrations: none configured' }]);
  print(config.integrations.map(checkIntegrationCredentials));
  const ignored = await ignoredPackageIntegrations(config, installation);
  if (ignored.length > 0) {
    print([
      {
        ok: true,
        message: `integrations: not loaded, since integration_packages does not list them: ${ignored.join(', ')}`,
        hint: 'list a package under `integration_packages:` in config.yaml to load it as an integration',
      },
    ]);
  }
  // Each integration's own check (an IMAP login), for enabled instances, in parallel, each bounded in time.
  const checks = await Promise.all(
    config.integrations
      .filter((instance) => instance.enabled)
      .map(async (instance): Promise<DoctorCheck | undefined> => {
        const check = await registry.doctorCheck(instance.type);
        if (!check) return undefined;
        try {
          return await check({
            instance: { name: instance.name, settings: registry.instance(instance.name)?.settings ?? {} },
            signal: AbortSignal.timeout(60_000),
            configFile: config.paths.configFile,
          });
        } catch (error) {
          return { ok: false, message: `${instance.name}: ${(error as Error).message}` };
        }
      }),
  );
  print(checks.filter((check): check is DoctorCheck => check !== undefined));
  return failed ? 1 : 0;
}
