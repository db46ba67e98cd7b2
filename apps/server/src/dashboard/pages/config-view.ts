import {
  type ConfigProblem,
  configData,
  formatDuration,
  formatPath,
  type LoadedConfig,
  nextRuns,
  Secret,
  toYamlText,
  Yolo,
} from '@assistant/config';
import { scrubSecrets } from '@assistant/errors';
import type { IntegrationRegistry } from '@assistant/integration-host';
import { html, type SafeHtml } from '../html.ts';
import { timeTag } from '../layout.ts';

/**
 * The Config page's view of a loaded config, in config.yaml's own keys and units: the sections that take defaults
 * from the validated config read back into config.yaml's terms (`configData`), leaving out what does not apply; the
 * integration instances and their rules from config.yaml as the server read it at start, as the owner wrote them. A secret (a `Secret`: `!secret name` or an inline secret field) shows as
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
  if (value instanceof Yolo) return `!yolo ${plainValue(value.value)}`;
  if (typeof value === 'number' && /Ms$/.test(key) && Number.isInteger(value) && value >= 0) {
    return formatDuration(value);
  }
  if (typeof value === 'string') return scrubSecrets(value);
  if (value === undefined) return '—';
  if (value === null || typeof value !== 'object') return String(value);
  return scrubSecrets(
    JSON.stringify(value, (_key, inner: unknown) =>
      inner instanceof Secret ? secretLabel(inner) : inner instanceof Yolo ? `!yolo ${plainValue(inner.value)}` : inner,
    ),
  );
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return (
    typeof value === 'object' &&
    value !== null &&
    !Array.isArray(value) &&
    !(value instanceof Secret) &&
    !(value instanceof Yolo)
  );
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

/** config.yaml as the server read it when it started: the owner's own keys, units and rules (secrets by name). */
export interface ConfigSource {
  /** The parsed document (`readYaml`'s data): plain values, `Secret` for `!secret name`, `Yolo` for `!yolo`. */
  data: Record<string, unknown>;
}

/** A value as YAML, as the owner would write it: `!secret name` for a secret (never its value), `!yolo` kept. */
function yamlSnippet(value: unknown): string {
  return scrubSecrets(toYamlText(value).trimEnd());
}

function sourceInstance(
  source: ConfigSource | undefined,
  name: string,
  index: number,
): Record<string, unknown> | undefined {
  const list = source?.data.integrations;
  if (!Array.isArray(list)) return undefined;
  const named = list.find((item) => isRecord(item) && item.name === name);
  if (isRecord(named)) return named;
  // A builtin-typed instance written without a name is still at its place in the list.
  const placed = list[index];
  return isRecord(placed) && placed.name === undefined ? placed : undefined;
}

/**
 * The sections that take defaults, in config.yaml's keys and units (`poll_interval: 100ms`), with the settings that do
 * not apply left out: the Redis connection unless `queue.backend` is `redis`, the cache directory while the LLM cache
 * is off.
 */
export function effectiveSections(config: LoadedConfig): Record<string, Record<string, unknown>> {
  const data = configData(config);
  const queue = { ...(data.queue as Record<string, unknown>) };
  const { redis, backend } = config.queue;
  const shownQueue: Record<string, unknown> = {
    backend,
    ...(backend === 'redis'
      ? {
          redis: {
            url: redis.url,
            prefix: redis.prefix,
            ...(redis.password === undefined ? {} : { password: redis.password }),
          },
        }
      : {}),
    lease: formatDuration(config.queue.leaseMs),
    ...queue,
  };
  const llmCache = data.llm_cache as { mode: string; directory: string };
  return {
    server: data.server as Record<string, unknown>,
    worker: data.worker as Record<string, unknown>,
    queue: shownQueue,
    llms: data.llms as Record<string, unknown>,
    scripts: data.scripts as Record<string, unknown>,
    other: {
      data_dir: data.data_dir,
      directories: data.directories,
      integration_dirs: data.integration_dirs,
      integration_packages: data.integration_packages,
      // `live` and its older name `off` neither read nor write: the directory means nothing then.
      llm_cache: llmCache.mode === 'off' || llmCache.mode === 'live' ? { mode: llmCache.mode } : llmCache,
      circuit_breaker: data.circuit_breaker,
      approvals: data.approvals,
      tools: data.tools,
      owner: data.owner,
    },
  };
}

/** One automation as the owner wrote it in config.yaml, or (no source) as the config reads it back. */
function automationText(written: unknown, fallback: unknown): string {
  return yamlSnippet(written ?? fallback);
}

/** Every section of the config the server runs with. */
export function configSections(options: {
  config: LoadedConfig;
  registry: IntegrationRegistry | undefined;
  now: Date;
  /** config.yaml as read at start; without it, instances and rules are shown as the config reads them back. */
  source?: ConfigSource | undefined;
}): SafeHtml {
  const { config, registry, now, source } = options;
  const section = (id: string, title: string, body: SafeHtml) =>
    html`<section class="card config-section" aria-labelledby="config-${id}"><h2 id="config-${id}">${title}</h2>${body}</section>`;
  const effective = effectiveSections(config);
  const readBack = configData(config).integrations as Record<string, unknown>[];
  const integrations = config.integrations.map((instance, index) => {
    const written = sourceInstance(source, instance.name, index);
    const shown = { ...(written ?? readBack[index] ?? {}) };
    const platforms = isRecord(shown.platforms) ? shown.platforms : {};
    shown.platforms = Object.fromEntries(
      Object.entries(platforms).map(([name, platform]) => {
        if (!isRecord(platform)) return [name, platform];
        const { automations, ...platformRest } = platform;
        const count = Array.isArray(automations) ? automations.length : 0;
        return [name, count === 0 ? platformRest : { ...platformRest, automations: `${count} (see Automations)` }];
      }),
    );
    return html`<h3>${String(instance.name)} <span class="muted">(${String(instance.type)})</span></h3>
${valueTable(shown, `integration instance ${String(instance.name)}`)}`;
  });
  const writtenNote = source
    ? html`<p class="muted">As written in config.yaml; a setting not written takes its default (the integration's README lists them).</p>`
    : html`<p class="muted">config.yaml could not be read again: shown as the server reads its config back.</p>`;
  const automationRows = config.integrations.flatMap((instance, instanceIndex) => {
    const written = sourceInstance(source, instance.name, instanceIndex);
    const readBackPlatforms = (readBack[instanceIndex]?.platforms ?? {}) as Record<string, { automations?: unknown[] }>;
    return Object.entries(instance.platforms ?? {}).flatMap(([platform, settings]) =>
      (settings?.automations ?? []).map((automation, index) => {
        const writtenPlatform = isRecord(written?.platforms) ? written.platforms[platform] : undefined;
        const writtenRule =
          isRecord(writtenPlatform) && Array.isArray(writtenPlatform.automations)
            ? writtenPlatform.automations[index]
            : undefined;
        return html`<tr>
<td>${String(instance.name)} / ${platform}</td>
<td>${index + 1}. ${automation.name ?? html`<span class="muted">(no name)</span>`}</td>
<td><pre class="config-rule">${automationText(writtenRule, readBackPlatforms[platform]?.automations?.[index])}</pre></td>
</tr>`;
      }),
    );
  });
  const schedules = (registry?.scheduledInstances() ?? []).map(({ instance, schedule, entries }) => {
    const every =
      schedule.kind === 'every'
        ? `every: ${formatDuration(schedule.everyMs)}`
        : `cron: "${schedule.expression}"${schedule.timezone ? ` (timezone: ${schedule.timezone})` : ''}`;
    const runs = nextRuns(schedule, { count: 3, from: now }).map((run) => timeTag(run.toISOString()));
    return html`<tr><td>${instance.name}</td><td><code>${every}</code></td><td>${entries.map((entry) => entry.type).join(', ')}</td>
<td>${runs.map((run, index) => html`${index > 0 ? ', ' : ''}${run}`)}</td></tr>`;
  });
  const server = { ...effective.server };
  server.token ??= 'data/api-token (no server.token)';
  return html`${section('server', 'Server', valueTable(server, 'server'))}
${section('worker', 'Worker', valueTable(effective.worker ?? {}, 'worker'))}
${section('queue', 'Queue', valueTable(effective.queue ?? {}, 'queue'))}
${section(
  'llms',
  'LLM profiles',
  Object.keys(config.llms).length === 0
    ? html`<p class="muted">No LLM profile.</p>`
    : valueTable(effective.llms ?? {}, 'LLM profiles'),
)}
${section(
  'integrations',
  'Integration instances',
  integrations.length === 0
    ? html`<p class="muted">None configured (builtin instances only).</p>`
    : html`${writtenNote}${integrations}`,
)}
${section(
  'automations',
  'Automations per platform',
  automationRows.length === 0
    ? html`<p class="muted">No automation.</p>`
    : html`<p class="muted">Each rule as written in config.yaml.</p><div class="table-wrap"><table><caption class="visually-hidden">Automations by instance and platform, in order</caption>
<thead><tr><th scope="col">Instance / platform</th><th scope="col">Automation</th><th scope="col">Rule</th></tr></thead>
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
    : valueTable(effective.scripts ?? {}, 'scripts'),
)}
${section('other', 'Data, limits and approvals', valueTable(effective.other ?? {}, 'data, limits and approvals'))}`;
}
