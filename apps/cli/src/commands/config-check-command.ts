import path from 'node:path';
import { formatDuration, type IntegrationInstance, type LoadedConfig, nextRuns } from '@assistant/config';
import type { CliContext } from '../cli-context.ts';
import { formatLocalTime } from '../format-local-time.ts';
import type { GlobalOptions } from '../global-options.ts';
import { loadCliConfig } from '../load-cli-config.ts';

export interface ConfigCheckOptions {
  globals: GlobalOptions;
  context: CliContext;
  /** Next run times are computed from this instant. @default now */
  now?: Date;
}

/** Validates the config and summarises what it sets up; invalid config throws ConfigError (exit 2). */
export async function configCheckCommand(options: ConfigCheckOptions): Promise<void> {
  const { context } = options;
  const { config } = await loadCliConfig(options);
  const lines = [`${shownPath(config.paths.configFile, context.cwd)}: OK`, ...summarise(config, options.now)];
  context.stdout.write(`${lines.join('\n')}\n`);
}

function summarise(config: LoadedConfig, now = new Date()): string[] {
  const { server } = config;
  const lines = [
    `  data:         ${config.paths.dataDir}`,
    `  server:       http://${server.host.includes(':') ? `[${server.host}]` : server.host}:${server.port} (${server.token ? 'token required' : 'no token'})`,
  ];
  const profiles = Object.entries(config.llms);
  if (profiles.length === 0) lines.push('  llm profiles: none');
  else {
    lines.push(`  llm profiles: ${profiles.length}`);
    for (const [name, profile] of profiles) lines.push(`    ${name}: ${profile.model} at ${profile.baseUrl}`);
  }
  if (config.integrations.length === 0) lines.push('  integrations: none');
  else {
    lines.push(`  integrations: ${config.integrations.length}`);
    for (const integration of config.integrations) lines.push(...describeIntegration(integration, now));
  }
  return lines;
}

function describeIntegration(integration: IntegrationInstance, now: Date): string[] {
  const platforms = Object.keys(integration.platforms);
  const head =
    `    ${integration.name} (${integration.type})` +
    `${integration.enabled ? '' : ', disabled'}` +
    `${platforms.length > 0 ? `, platforms: ${platforms.join(', ')}` : ''}`;
  const { schedule } = integration;
  if (schedule === undefined) return [`${head}, no schedule`];
  const every =
    schedule.kind === 'every'
      ? `every ${formatDuration(schedule.everyMs)}`
      : `cron "${schedule.expression}"${schedule.timezone ? ` (${schedule.timezone})` : ''}`;
  const runs = nextRuns(schedule, { count: 3, from: now }).map(formatLocalTime);
  return [`${head}, ${every}`, `      next runs: ${runs.join(', ')}`];
}

function shownPath(file: string, cwd: string): string {
  const relative = path.relative(cwd, file);
  return relative.startsWith('..') || path.isAbsolute(relative) ? file : relative;
}
