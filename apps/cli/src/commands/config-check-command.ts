import path from 'node:path';
import { loadWorkflows } from '@assistant/agents';
import { formatDuration, formatProblem, type LoadedConfig, nextRuns } from '@assistant/config';
import type { IntegrationRegistry, RuntimeInstance } from '@assistant/integration-host';
import type { CliContext } from '../cli-context.ts';
import { formatLocalTime } from '../format-local-time.ts';
import type { GlobalOptions } from '../global-options.ts';
import { checkCliConfig } from '../load-cli-config.ts';
import { actionNeedsWarnings } from './action-needs-warnings.ts';

export interface ConfigCheckOptions {
  globals: GlobalOptions;
  context: CliContext;
  /** Next run times are computed from this instant. @default now */
  now?: Date;
}

/** Validates the config and summarises what it sets up; invalid config throws ConfigError (exit 2). */
export async function configCheckCommand(options: ConfigCheckOptions): Promise<void> {
  const { context } = options;
  const { config, registry } = await checkCliConfig(options);
  // Rules whose action cannot run on their instance (no `smtp:` for send_reply): valid config that will fail.
  for (const warning of actionNeedsWarnings({ config, registry })) {
    context.stderr.write(`warning: ${formatProblem(warning)}\n`);
  }
  const workflows = await workflowNames(config);
  const found = registry.integrations.map((integration) => `${integration.manifest.domain} (${integration.origin})`);
  const lines = [
    `${shownPath(config.paths.configFile, context.cwd)}: OK`,
    ...summarise(config, registry, options.now),
    `  manifests:    ${found.join(', ')}; ${registry.taskTypes().length} task types`,
    `  workflows:    ${workflows.length === 0 ? 'none' : workflows.join(', ')}`,
  ];
  context.stdout.write(`${lines.join('\n')}\n`);
}

/** The workflows of agents/*.yaml beside config.yaml, for the summary (their problems failed the check already). */
async function workflowNames(config: LoadedConfig): Promise<string[]> {
  const { workflows } = await loadWorkflows({ configDir: path.dirname(config.paths.configFile) });
  return [...workflows.values()].map((workflow) => `${workflow.name} (${workflow.topology})`);
}

function summarise(config: LoadedConfig, registry: IntegrationRegistry, now = new Date()): string[] {
  const { server } = config;
  const lines = [
    `  data:         ${config.paths.dataDir}`,
    `  server:       http://${server.host.includes(':') ? `[${server.host}]` : server.host}:${server.port} (token: ${server.token ? 'server.token' : 'data/api-token'})`,
  ];
  const profiles = Object.entries(config.llms);
  if (profiles.length === 0) lines.push('  llm profiles: none');
  else {
    lines.push(`  llm profiles: ${profiles.length}`);
    for (const [name, profile] of profiles) {
      const provider = profile.provider === 'openai-compatible' ? '' : ` (${profile.provider})`;
      lines.push(`    ${name}: ${profile.model} at ${profile.baseUrl}${provider}`);
    }
  }
  const instances = registry.instances();
  if (instances.length === 0) lines.push('  integrations: none');
  else {
    lines.push(`  integrations: ${instances.length}`);
    // What the server will actually schedule: enabled instances with a schedule and at least one enabled platform.
    const scheduled = new Set(registry.scheduledInstances().map(({ instance }) => instance.name));
    for (const instance of instances) lines.push(...describeIntegration(instance, scheduled.has(instance.name), now));
  }
  return lines;
}

function describeIntegration(integration: RuntimeInstance, scheduled: boolean, now: Date): string[] {
  const platforms = Object.values(integration.platforms)
    .filter((platform) => platform.enabled)
    .map((platform) => platform.name);
  const head =
    `    ${integration.name} (${integration.domain}${integration.configured ? '' : ', built in'})` +
    `${integration.enabled ? '' : ', disabled'}` +
    `${integration.shadow ? ', shadow mode (proposes only)' : ''}` +
    `${platforms.length > 0 ? `, platforms: ${platforms.join(', ')}` : ''}`;
  const { schedule } = integration;
  if (schedule === undefined) return [`${head}, no schedule`];
  const every =
    schedule.kind === 'every'
      ? `every ${formatDuration(schedule.everyMs)}`
      : `cron "${schedule.expression}"${schedule.timezone ? ` (${schedule.timezone})` : ''}`;
  // Listing run times for an instance the server will not schedule would tell the owner it runs.
  if (!scheduled) {
    const why = integration.enabled ? 'none: no platform is enabled' : 'none while disabled';
    return [`${head}, ${every}`, `      next runs: ${why}`];
  }
  const runs = nextRuns(schedule, { count: 3, from: now }).map(formatLocalTime);
  return [`${head}, ${every}`, `      next runs: ${runs.join(', ')}`];
}

function shownPath(file: string, cwd: string): string {
  const relative = path.relative(cwd, file);
  return relative.startsWith('..') || path.isAbsolute(relative) ? file : relative;
}
