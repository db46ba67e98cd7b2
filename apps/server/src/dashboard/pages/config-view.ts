import { type ConfigProblem, formatDuration, formatPath, type LoadedConfig, nextRuns, Secret } from '@assistant/config';
import { scrubSecrets } from '@assistant/errors';
import type { IntegrationRegistry } from '@assistant/integration-host';
import { html, type SafeHtml } from '../html.ts';
import { timeTag } from '../layout.ts';

/**
 * The Config page's view of a loaded config: every section as tables, built from the validated (normalised) config,
 * never from the file's text. A secret (a `Secret`: `!secret name` or an inline secret field) shows as
 * "(secret: name)"; every other string is scrubbed of the values of loaded secrets as well, in case one was pasted
 * into a field that is not a secret field.
 */

/** A secret as the page shows it: its name, never its value. */
function secretLabel(secret: Secret): string {
  return `(secret: ${secret.name})`;
}

/** A value as one line of text: secrets by name, durations (`…Ms` keys) in words, objects as JSON. */
export function plainValue(value: unknown, key = ''): string {
  if (value instanceof Secret) return secretLabel(value);
  if (typeof value === 'number' && /Ms$/.test(key) && Number.isInteger(value) && value >= 0) {
    return formatDuration(value);
  }
  if (typeof value === 'string') return scrubSecrets(value);
  if (value === undefined) return '—';
  if (value === null || typeof value !== 'object') return String(value);
  return scrubSecrets(
    JSON.stringify(value, (_key, inner: unknown) => (inner instanceof Secret ? secretLabel(inner) : inner)),
  );
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && !(value instanceof Secret);
}

/** A nested key/value table; arrays of scalars on one line, deeper values as nested tables (at most 4 levels). */
export function valueTable(value: Record<string, unknown>, caption: string, depth = 0): SafeHtml {
  const rows = Object.entries(value).map(([key, inner]) => {
    let cell: SafeHtml;
    if (isRecord(inner) && Object.keys(inner).length > 0 && depth < 3) cell = valueTable(inner, key, depth + 1);
    else if (inner instanceof Secret) cell = html`<span class="secret">${secretLabel(inner)}</span>`;
    else if (isRecord(inner) && Object.keys(inner).length === 0) cell = html`<span class="muted">none</span>`;
    else if (Array.isArray(inner) && inner.length === 0) cell = html`<span class="muted">none</span>`;
    else cell = html`<code>${plainValue(inner, key)}</code>`;
    return html`<tr><th scope="row">${key}</th><td>${cell}</td></tr>`;
  });
  if (rows.length === 0) return html`<p class="muted">Nothing set.</p>`;
  return html`<table class="kv config-kv"><caption class="visually-hidden">${caption}</caption><tbody>${rows}</tbody></table>`;
}

/** The problems of a config check, each with its file, line and key. */
export function problemsTable(problems: readonly ConfigProblem[]): SafeHtml {
  const rows = problems.map(
    (problem) => html`<tr>
<td><span class="badge ${problem.severity === 'error' ? 'bad' : 'pending'}">${problem.severity}</span></td>
<td><code>${problem.file}</code></td>
<td>${problem.position ? `${problem.position.line}:${problem.position.col}` : '—'}</td>
<td><code>${formatPath(problem.path)}</code></td>
<td>${scrubSecrets(problem.message)}${problem.hint ? html`<br><span class="muted">hint: ${scrubSecrets(problem.hint)}</span>` : ''}</td>
</tr>`,
  );
  return html`<div class="table-wrap"><table class="config-problems">
<caption class="visually-hidden">Problems found by the checks of assistant config check</caption>
<thead><tr><th scope="col">Severity</th><th scope="col">File</th><th scope="col">Line</th><th scope="col">Key</th><th scope="col">Problem</th></tr></thead>
<tbody>${rows}</tbody></table></div>`;
}

/** Every section of the config the server runs with. */
export function configSections(config: LoadedConfig, registry: IntegrationRegistry | undefined, now: Date): SafeHtml {
  const section = (id: string, title: string, body: SafeHtml) =>
    html`<section class="card config-section" aria-labelledby="config-${id}"><h2 id="config-${id}">${title}</h2>${body}</section>`;
  const { server } = config;
  const integrations = config.integrations.map((instance) => {
    const { platforms, ...rest } = instance as unknown as { platforms: Record<string, unknown> } & Record<
      string,
      unknown
    >;
    const platformRows = Object.fromEntries(
      Object.entries(platforms ?? {}).map(([name, platform]) => {
        const { automations, ...platformRest } = (platform ?? {}) as Record<string, unknown>;
        const count = Array.isArray(automations) ? automations.length : 0;
        return [name, { ...platformRest, automations: `${count} (see Automations)` }];
      }),
    );
    return html`<h3>${String(instance.name)} <span class="muted">(${String(instance.type)})</span></h3>
${valueTable({ ...rest, platforms: platformRows }, `integration instance ${String(instance.name)}`)}`;
  });
  const automationRows = config.integrations.flatMap((instance) =>
    Object.entries(
      (instance as unknown as { platforms: Record<string, { automations?: unknown[] }> }).platforms ?? {},
    ).flatMap(([platform, settings]) =>
      (settings?.automations ?? []).map((automation, index) => {
        const { name, when, then, ...rest } = automation as Record<string, unknown>;
        return html`<tr>
<td>${String(instance.name)} / ${platform}</td>
<td>${index + 1}. ${plainValue(name)}</td>
<td><code>${plainValue(when)}</code></td>
<td><code>${plainValue(then)}</code>${Object.keys(rest).length > 0 ? html`<br><small class="muted">${plainValue(rest)}</small>` : ''}</td>
</tr>`;
      }),
    ),
  );
  const schedules = (registry?.scheduledInstances() ?? []).map(({ instance, schedule, entries }) => {
    const every =
      schedule.kind === 'every'
        ? `every ${formatDuration(schedule.everyMs)}`
        : `cron "${schedule.expression}"${schedule.timezone ? ` (${schedule.timezone})` : ''}`;
    const runs = nextRuns(schedule, { count: 3, from: now }).map((run) => timeTag(run.toISOString()));
    return html`<tr><td>${instance.name}</td><td>${every}</td><td>${entries.map((entry) => entry.type).join(', ')}</td>
<td>${runs.map((run, index) => html`${index > 0 ? ', ' : ''}${run}`)}</td></tr>`;
  });
  return html`${section(
    'server',
    'Server',
    valueTable(
      {
        host: server.host,
        port: server.port,
        allowedHosts: server.allowedHosts,
        token: server.token ?? 'data/api-token (no server.token)',
      },
      'server',
    ),
  )}
${section('worker', 'Worker', valueTable(config.worker as unknown as Record<string, unknown>, 'worker'))}
${section('queue', 'Queue', valueTable(config.queue as unknown as Record<string, unknown>, 'queue'))}
${section(
  'llms',
  'LLM profiles',
  Object.keys(config.llms).length === 0
    ? html`<p class="muted">No LLM profile.</p>`
    : valueTable(config.llms as unknown as Record<string, unknown>, 'LLM profiles'),
)}
${section(
  'integrations',
  'Integration instances',
  integrations.length === 0
    ? html`<p class="muted">None configured (builtin instances only).</p>`
    : html`${integrations}`,
)}
${section(
  'automations',
  'Automations per platform',
  automationRows.length === 0
    ? html`<p class="muted">No automation.</p>`
    : html`<div class="table-wrap"><table><caption class="visually-hidden">Automations by instance and platform, in order</caption>
<thead><tr><th scope="col">Instance / platform</th><th scope="col">Automation</th><th scope="col">When</th><th scope="col">Then</th></tr></thead>
<tbody>${automationRows}</tbody></table></div>`,
)}
${section(
  'schedules',
  'Schedules',
  schedules.length === 0
    ? html`<p class="muted">Nothing scheduled (no enabled instance with a schedule and an enabled platform).</p>`
    : html`<div class="table-wrap"><table><caption class="visually-hidden">Scheduled instances and their next runs</caption>
<thead><tr><th scope="col">Instance</th><th scope="col">Schedule</th><th scope="col">Entry tasks</th><th scope="col">Next runs</th></tr></thead>
<tbody>${schedules}</tbody></table></div>`,
)}
${section(
  'scripts',
  'Scripts',
  Object.keys(config.scripts).length === 0
    ? html`<p class="muted">No script.</p>`
    : valueTable(config.scripts as unknown as Record<string, unknown>, 'scripts'),
)}
${section(
  'other',
  'Data, limits and approvals',
  valueTable(
    {
      dataDir: config.dataDir,
      directories: config.directories,
      integrationDirs: config.integrationDirs,
      integrationPackages: config.integrationPackages,
      llmCache: config.llmCache,
      circuitBreaker: config.circuitBreaker,
      approvals: config.approvals,
    } as Record<string, unknown>,
    'data, limits and approvals',
  ),
)}`;
}
