import {
  llmUsageFile,
  type ModelSummary,
  parseWorkerProcesses,
  readUsage,
  type UsageCounts,
  usageToday,
} from '@assistant/metrics';
import { assistantVersion } from '@assistant/process';
import { type TaskEntry, taskStates } from '@assistant/queue';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { type HealthDetails, healthDetails } from '../../health-route.ts';
import { modelStatus } from '../../model-status.ts';
import type { AssistantServer } from '../../server-type.ts';
import type { DashboardContext } from '../dashboard-context.ts';
import { dashboardRoute } from '../dashboard-route.ts';
import { html, queryString, type SafeHtml } from '../html.ts';
import { readLogBefore, renderLogLine } from '../human-log-view.ts';
import { logLinkSubjects } from '../item-subjects.ts';
import { sendFragment, sendPage, timeTag, wantsFragment } from '../layout.ts';
import { countThroughput, describeThroughput, renderSparkline } from '../sparkline.ts';
import { registerNeedsRoutes, renderNeedsPart } from './needs-you.ts';

/** Lines of today's human log on the overview; the Log page has the rest. */
const overviewLogLines = 50;

/**
 * The overview at `/`: health, workers, queue counts with the last hour's throughput, the LLM profiles and their
 * backlog, schedules, open breakers, listeners and the end of today's human log. Each part is also a fragment
 * (`/overview/<part>`) that the page fetches again when the live stream says something changed: the queue and
 * workers on `queue` (at most once a second), the models on `queue` and `models`, the log on `log`.
 */
export function registerOverviewPage(app: AssistantServer, context: DashboardContext): void {
  dashboardRoute(app, {
    method: 'GET',
    url: '/',
    handler: async (request, reply) => {
      const [needsPart, queuePart, workersPart, modelsPart, statusPart, logPart] = await Promise.all([
        renderNeedsPart(context, request),
        renderQueuePart(context),
        renderWorkersPart(context),
        renderModelsPart(context),
        renderStatusPart(context),
        renderLogPart(context),
      ]);
      return sendPage(reply, {
        request,
        title: 'Overview',
        section: 'overview',
        body: html`<div class="overview">${needsPart}${queuePart}${workersPart}${modelsPart}${statusPart}${logPart}</div>`,
        live: '/live?topics=queue,log,models,approvals',
      });
    },
  });

  registerNeedsRoutes(app, context);
  const fragment = (part: string, render: (request: FastifyRequest) => Promise<SafeHtml>) =>
    dashboardRoute(app, {
      method: 'GET',
      url: `/overview/${part}`,
      handler: async (request: FastifyRequest, reply: FastifyReply) => {
        // A fragment is for htmx; a person who opens its address gets the page, at the part.
        if (!wantsFragment(request)) return reply.redirect(`/#overview-${part}`, 303);
        return sendFragment(reply, await render(request));
      },
    });
  fragment('needs', (request) => renderNeedsPart(context, request));
  fragment('queue', () => renderQueuePart(context));
  fragment('workers', () => renderWorkersPart(context));
  fragment('models', () => renderModelsPart(context));
  fragment('log', () => renderLogPart(context));
}

/**
 * Refreshes from the live stream: dashboard.js sends the element `live-refresh` at most once a second while `event`s
 * arrive (and once after the last), and the element fetches its fragment again and replaces itself.
 */
function liveAttributes(part: string, events: string): SafeHtml {
  return html` id="overview-${part}" hx-get="/overview/${part}" hx-trigger="live-refresh" data-live-events="${events}" hx-swap="outerHTML"`;
}

async function renderQueuePart(context: DashboardContext): Promise<SafeHtml> {
  const queue = context.queue();
  const nowMs = Date.now();
  const [stats, finished] = await Promise.all([
    queue.stats(),
    // Finish times come from the queue's listing (file times, remembered between calls), never from task files.
    queue.list({ finishedSinceMs: nowMs - 60 * 60_000 }),
  ]);
  const throughput = countThroughput(finishedTimes(finished), { nowMs });
  const counts = taskStates.map(
    (state) => html`<div><dt><a href="/tasks${queryString({ state })}">${state}</a></dt><dd>${stats[state]}</dd></div>`,
  );
  return html`<section class="card overview-queue" aria-labelledby="overview-queue-title"${liveAttributes('queue', 'queue')}>
<h2 id="overview-queue-title">Queue</h2>
<dl class="stats">${counts}</dl>
<p class="muted">${stats.ready} ready, ${stats.scheduled} scheduled for later.</p>
<figure class="throughput">
${renderSparkline(throughput)}
<figcaption>${describeThroughput(throughput)} (per minute: done, then failed on top).</figcaption>
</figure>
</section>`;
}

function finishedTimes(entries: readonly TaskEntry[]): { state: 'done' | 'failed'; finishedAtMs: number }[] {
  const times: { state: 'done' | 'failed'; finishedAtMs: number }[] = [];
  for (const entry of entries) {
    if ((entry.state === 'done' || entry.state === 'failed') && entry.finishedAtMs !== undefined) {
      times.push({ state: entry.state, finishedAtMs: entry.finishedAtMs });
    }
  }
  return times;
}

function formatBytes(bytes: number | undefined): string {
  if (bytes === undefined) return '—';
  if (bytes >= 1024 ** 3) return `${(bytes / 1024 ** 3).toFixed(2)} GiB`;
  return `${Math.round(bytes / 1024 ** 2)} MiB`;
}

async function renderWorkersPart(context: DashboardContext): Promise<SafeHtml> {
  const queue = context.queue();
  const [workers, published, active] = await Promise.all([
    queue.workers.list(),
    queue.workers.readMetrics(),
    queue.list({ state: 'active' }),
  ]);
  const processes = parseWorkerProcesses(published);
  const running = new Map<string, number>();
  for (const entry of active) {
    if (entry.worker !== undefined) running.set(entry.worker, (running.get(entry.worker) ?? 0) + 1);
  }
  const alive = workers.filter((worker) => worker.alive).length;
  const rows = workers.map(
    (worker) => html`<tr>
<th scope="row"><code>${worker.id}</code></th>
<td><span class="badge ${worker.alive ? 'ok' : 'bad'}">${worker.alive ? 'alive' : 'gone'}</span></td>
<td>${running.get(worker.id) ?? 0}</td>
<td>${formatBytes(processes.get(worker.id)?.memory.rss_bytes)}</td>
<td class="hide-narrow">${timeTag(worker.startedAt)}</td>
<td>${timeTag(worker.heartbeatAt)}</td>
</tr>`,
  );
  const summary =
    workers.length === 0
      ? html`<p class="notice warn">No worker has started: tasks wait in pending until one runs (<code>assistant start</code> or <code>assistant work</code>).</p>`
      : html`<p>${alive} of ${workers.length} alive; ${active.length} tasks running.</p>`;
  return html`<section class="card overview-workers" aria-labelledby="overview-workers-title"${liveAttributes('workers', 'queue')}>
<h2 id="overview-workers-title">Workers</h2>
${summary}
${
  workers.length === 0
    ? ''
    : html`<div class="table-wrap"><table>
<thead><tr><th scope="col">Worker</th><th scope="col">State</th><th scope="col">Running</th><th scope="col">Memory (RSS)</th><th scope="col" class="hide-narrow">Started</th><th scope="col">Last heartbeat</th></tr></thead>
<tbody>${rows}</tbody>
</table></div>`
}
</section>`;
}

/** `1.2 s`, `850 ms`; a dash when unknown. */
function formatLatency(latencyMs: number | null): string {
  if (latencyMs === null) return '—';
  return latencyMs >= 1_000 ? `${(latencyMs / 1_000).toFixed(1)} s` : `${Math.round(latencyMs)} ms`;
}

/** `45 s`, `12 min`, `3 h 20 min`; a dash when unknown. */
function formatDuration(seconds: number | null): string {
  if (seconds === null) return '—';
  if (seconds < 60) return `${seconds} s`;
  const minutes = Math.ceil(seconds / 60);
  if (minutes < 60) return `${minutes} min`;
  return `${Math.floor(minutes / 60)} h${minutes % 60 === 0 ? '' : ` ${minutes % 60} min`}`;
}

const stateLabels: Record<ModelSummary['state'], { label: string; badge: string }> = {
  closed: { label: 'available', badge: 'ok' },
  half_open: { label: 'trying', badge: 'pending' },
  open: { label: 'unavailable', badge: 'bad' },
  unknown: { label: 'no worker', badge: 'pending' },
};

function renderModelState(model: ModelSummary): SafeHtml {
  const { label, badge } = stateLabels[model.state];
  const until =
    model.state !== 'closed' && model.state !== 'unknown' && model.retryAt !== undefined
      ? html` until ${timeTag(model.retryAt)}`
      : '';
  const why =
    model.state !== 'closed' && model.lastError !== undefined ? html`<br><small>${model.lastError}</small>` : '';
  return html`<span class="badge ${badge}">${label}</span>${until}${why}`;
}

async function renderModelsPart(context: DashboardContext): Promise<SafeHtml> {
  const [{ models, held }, usage] = await Promise.all([
    modelStatus({ queue: context.queue(), catalog: context.catalog, llms: context.config.llms }),
    readUsage(llmUsageFile(context.config.paths.dataDir)),
  ]);
  const { timeZone, currency } = context.config.owner;
  const today = usageToday(usage, { timeZone, now: new Date() });
  const rows = models.map(
    (model) => html`<tr>
<th scope="row">${model.profile}${model.model === null ? '' : html` <code class="muted">${model.model}</code>`}</th>
<td>${renderModelState(model)}</td>
<td>${model.inFlight} / ${model.maxInFlight ?? '—'}${model.adaptive ? html` <span class="muted" title="found from the model's latency (max_in_flight unset)">adaptive</span>` : ''}</td>
<td>${model.waiting}</td>
<td>${model.backlog}</td>
<td>${formatLatency(model.latencyMs)}</td>
<td class="hide-narrow">${model.tokensLastMinute}</td>
<td>${formatDuration(model.etaSeconds)}</td>
<td>${renderTokensToday(today[model.profile])}</td>
<td>${renderCostToday(today[model.profile], context.config.llms[model.profile]?.prices !== undefined, currency)}</td>
</tr>`,
  );
  const table =
    models.length === 0
      ? html`<p class="muted">No LLM profiles: add one under <code>llms:</code> in config.yaml.</p>`
      : html`<div class="table-wrap" tabindex="0" role="region" aria-label="LLM profiles (scrolls sideways on a narrow screen)"><table>
<thead><tr><th scope="col">Profile</th><th scope="col">State</th><th scope="col">In flight / max</th><th scope="col">Waiting</th><th scope="col">Backlog</th><th scope="col">Latency</th><th scope="col" class="hide-narrow">Tokens / min</th><th scope="col">Time to drain</th><th scope="col">Tokens today</th><th scope="col">Cost today</th></tr></thead>
<tbody>${rows}</tbody>
</table></div>
<p class="muted">Backlog: tasks waiting for or in an LLM stage. Time to drain: backlog × latency ÷ max in flight. Today: since midnight in ${timeZone}; tokens in and out, with the prompt tokens read from the provider’s cache; cost estimated from the profile’s <code>prices:</code>.</p>`;
  const heldList =
    held.length === 0
      ? ''
      : html`<p>Held back:</p><ul>${held.map(
          (lane) =>
            html`<li><a href="/tasks${queryString({ type: lane.taskType })}">${lane.taskType}</a>: ${lane.reason}</li>`,
        )}</ul>`;
  return html`<section class="card overview-models" aria-labelledby="overview-models-title"${liveAttributes('models', 'queue models')}>
<h2 id="overview-models-title">Models</h2>
${table}
${heldList}
</section>`;
}

/** `12,345 in (8,000 cached) / 1,234 out`, or a dash before the first call of the day. */
function renderTokensToday(counts: UsageCounts | undefined): SafeHtml | string {
  if (!counts || counts.calls === 0) return '—';
  const number = (value: number) => value.toLocaleString('en-US');
  const cached =
    counts.cached_prompt_tokens > 0
      ? html` <span class="muted">(${number(counts.cached_prompt_tokens)} cached)</span>`
      : '';
  return html`${number(counts.prompt_tokens)} in${cached} / ${number(counts.completion_tokens)} out`;
}

/** Today's estimated cost, or why there is none: the profile has no prices. */
function renderCostToday(counts: UsageCounts | undefined, priced: boolean, currency: string): SafeHtml | string {
  if (!priced && (!counts || counts.unpriced_calls === counts.calls))
    return html`<span class="muted">no prices set</span>`;
  const cost = counts?.cost ?? 0;
  // Below one unit, two decimals would round a day of small calls to 0.00 or 0.03: show four.
  const text = cost > 0 && cost < 1 ? cost.toFixed(4) : cost.toFixed(2);
  const partly =
    counts && counts.unpriced_calls > 0
      ? html` <span class="muted">(${counts.unpriced_calls} calls without prices)</span>`
      : '';
  return html`${text} ${currency}${partly}`;
}

async function renderStatusPart(context: DashboardContext): Promise<SafeHtml> {
  const details: Omit<HealthDetails, 'status' | 'version' | 'queue'> = await healthDetails({
    queue: context.queue(),
    status: context.status,
    catalog: context.catalog,
    llms: context.config.llms,
  });
  const health = details.worker.alive
    ? html`<p class="notice ok">Server ${assistantVersion} is up; ${details.worker.workers} worker${details.worker.workers === 1 ? '' : 's'} alive (last heartbeat ${timeTag(details.worker.last_heartbeat_at ?? undefined)}).</p>`
    : html`<p class="notice warn">Server ${assistantVersion} is up, but no worker is alive${details.worker.last_heartbeat_at ? html` (last heartbeat ${timeTag(details.worker.last_heartbeat_at)})` : ''}: nothing runs.</p>`;
  // Only news: a child of `assistant start` that was started again after it crashed or stopped answering.
  const restarted = details.processes.filter((child) => child.restarts > 0);
  const restarts =
    restarted.length === 0
      ? ''
      : html`${restarted.map(
          (child) =>
            html`<p class="notice warn">The ${child.name} restarted ${child.restarts} time${child.restarts === 1 ? '' : 's'}${child.last_restart ? html`, last: ${child.last_restart.reason} at ${timeTag(child.last_restart.at)}` : ''}${!child.running && child.next_start_at ? html`; it starts again ${timeTag(child.next_start_at)}` : ''}.</p>`,
        )}`;
  const schedules =
    details.schedules.length === 0
      ? html`<p class="muted">No schedules.</p>`
      : html`<div class="table-wrap"><table>
<thead><tr><th scope="col">Schedule</th><th scope="col">Next run</th><th scope="col" class="hide-narrow">Last run</th></tr></thead>
<tbody>${details.schedules.map(
          (job) => html`<tr>
<th scope="row">${job.description} <code class="muted">${job.id}</code></th>
<td>${job.paused ? html`<span class="badge pending">paused</span> ${job.paused}` : timeTag(job.next_run_at)}</td>
<td class="hide-narrow">${timeTag(job.last_fired_at)}</td>
</tr>`,
        )}</tbody>
</table></div>`;
  const breakers =
    details.circuit_breakers.length === 0
      ? html`<p class="muted">All circuit breakers are closed.</p>`
      : html`<div class="table-wrap"><table>
<thead><tr><th scope="col">Task type</th><th scope="col">State</th><th scope="col">Failures</th><th scope="col">Retry at</th><th scope="col">Last error</th></tr></thead>
<tbody>${details.circuit_breakers.map(
          (breaker) => html`<tr>
<th scope="row"><a href="/tasks${queryString({ type: breaker.task_type })}">${breaker.task_type}</a>${breaker.worker ? html` <span class="muted">(worker ${breaker.worker})</span>` : ''}</th>
<td><span class="badge open">${breaker.state}</span></td>
<td>${breaker.consecutive_failures}</td>
<td>${timeTag(breaker.retry_at)}</td>
<td>${breaker.last_error ?? ''}</td>
</tr>`,
        )}</tbody>
</table></div>`;
  // A hook's breaker (after 5 errors in a row) is news only while open or half-open, as /health says.
  const hookBreakers =
    details.hook_breakers.length === 0
      ? ''
      : html`<div class="table-wrap"><table>
<thead><tr><th scope="col">Hook</th><th scope="col">State</th><th scope="col">Failures</th><th scope="col">Opened</th></tr></thead>
<tbody>${details.hook_breakers.map(
          (breaker) => html`<tr>
<th scope="row"><a href="/hooks/${encodeURIComponent(breaker.hook)}">hook ${breaker.hook}</a></th>
<td><span class="badge open">${breaker.state}</span></td>
<td>${breaker.failures}</td>
<td>${timeTag(breaker.opened_at)}</td>
</tr>`,
        )}</tbody>
</table></div>`;
  const listeners =
    details.listeners.length === 0
      ? html`<p class="muted">No listeners.</p>`
      : html`<div class="table-wrap"><table>
<thead><tr><th scope="col">Listener</th><th scope="col">State</th><th scope="col">Source</th><th scope="col">Restarts</th><th scope="col">Last error</th></tr></thead>
<tbody>${details.listeners.map(
          (listener) => html`<tr>
<th scope="row"><code>${listener.id}</code></th>
<td><span class="badge ${listener.state === 'running' ? 'ok' : 'bad'}">${listener.state}</span>${listener.restart_at ? html` restarts ${timeTag(listener.restart_at)}` : ''}</td>
<td>${renderListenerCondition(listener)}</td>
<td>${listener.restarts}</td>
<td>${listener.last_error ?? ''}${listener.last_error_at ? html` (${timeTag(listener.last_error_at)})` : ''}</td>
</tr>`,
        )}</tbody>
</table></div>`;
  return html`<section class="card overview-health" aria-labelledby="overview-health-title">
<h2 id="overview-health-title">Health</h2>
${health}
${restarts}
<h3>Schedules</h3>
${schedules}
<h3>Open circuit breakers</h3>
${breakers}
${hookBreakers}
<h3>Listeners</h3>
${listeners}
</section>`;
}

/** How a listener's source is doing, as it reported it: `—` until it reports. */
function renderListenerCondition(listener: HealthDetails['listeners'][number]): SafeHtml | string {
  if (listener.condition === undefined) return '—';
  const label = { ok: 'ok', outage: 'outage', credentials_refused: 'credentials refused' }[listener.condition];
  return html`<span class="badge ${listener.condition === 'ok' ? 'ok' : 'bad'}">${label}</span>${listener.condition === 'ok' ? '' : html` since ${timeTag(listener.since)}`}${listener.detail ? html` <span class="muted">${listener.detail}</span>` : ''}`;
}

async function renderLogPart(context: DashboardContext): Promise<SafeHtml> {
  const file = context.humanLog.fileFor(new Date());
  const chunk = await readLogBefore(file, { maxLines: overviewLogLines, maxBytes: 64 * 1024 });
  const subjects = await logLinkSubjects(context, chunk.lines);
  return html`<section class="card overview-log" aria-labelledby="overview-log-title"${liveAttributes('log', 'log')}>
<h2 id="overview-log-title">Today’s log</h2>
${
  chunk.lines.length === 0
    ? html`<p class="muted">Nothing logged today yet.</p>`
    : html`<ul class="log">${chunk.lines.map((line) => renderLogLine(line, subjects))}</ul>`
}
<p><a href="/log">The whole log${chunk.startOffset > 0 ? ' (earlier lines and other days)' : ' and other days'}</a></p>
</section>`;
}
