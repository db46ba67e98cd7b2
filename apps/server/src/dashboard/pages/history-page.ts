import { type HistorySeries, type HistoryWindow, historyFile, historySeries, readHistory } from '@assistant/metrics';
import type { AssistantServer } from '../../server-type.ts';
import type { DashboardContext } from '../dashboard-context.ts';
import { dashboardRoute, queryField } from '../dashboard-route.ts';
import { means, renderBars, shownMs } from '../history-charts.ts';
import { html, type SafeHtml } from '../html.ts';
import { sendPage } from '../layout.ts';

const windows: Record<HistoryWindow, { label: string; span: string; bucket: string }> = {
  day: { label: '24 h', span: 'the last 24 hours', bucket: '10 minutes' },
  week: { label: '7 d', span: 'the last 7 days', bucket: 'hour' },
};

const sum = (values: readonly number[]) => values.reduce((total, value) => total + value, 0);

function taskRows(series: HistorySeries, span: string): SafeHtml[] {
  return Object.entries(series.tasks)
    .sort(([left], [right]) => left.localeCompare(right))
    .map(([type, line]) => {
      const done = sum(line.done);
      const failed = sum(line.failed);
      const runs = done + failed;
      const meanMs = runs === 0 ? 0 : sum(line.durationMs) / runs;
      const label = `${type}: ${done} done, ${failed} failed in ${span}`;
      return html`<tr data-type="${type}">
<th scope="row"><code>${type}</code></th>
<td class="number">${done}</td>
<td class="number">${failed > 0 ? html`<strong>${failed}</strong>` : '0'}</td>
<td class="number">${runs === 0 ? '—' : shownMs(meanMs)}</td>
<td class="chart">${renderBars({ values: line.done, stacked: line.failed, label })}</td>
</tr>`;
    });
}

function modelRows(series: HistorySeries, span: string): SafeHtml[] {
  return Object.entries(series.models)
    .sort(([left], [right]) => left.localeCompare(right))
    .map(([profile, line]) => {
      const calls = sum(line.calls);
      const tokens = sum(line.tokens);
      const meanMs = calls === 0 ? 0 : sum(line.latencyMs) / calls;
      return html`<tr data-profile="${profile}">
<th scope="row">${profile}</th>
<td class="number">${calls}</td>
<td class="number">${calls === 0 ? '—' : shownMs(meanMs)}</td>
<td class="number">${tokens.toLocaleString('en')}</td>
<td class="chart">${renderBars({ values: means(line.latencyMs, line.calls), label: `${profile}: mean latency ${shownMs(meanMs)} over ${calls} calls in ${span}`, kind: 'spark-value' })}</td>
<td class="chart">${renderBars({ values: line.tokens, label: `${profile}: ${tokens} tokens in ${span}`, kind: 'spark-value' })}</td>
</tr>`;
    });
}

/**
 * The History page (`/history`, `?window=week`): per task type what finished and failed, how long runs took, and per
 * model profile its calls, mean latency and tokens, over 24 h (ten-minute bars) or 7 d (hourly bars), from the
 * series the workers keep in `data/metrics/history.json` (packages/metrics' history-series.ts: fixed rings, so the
 * file stays small however long Assistant runs).
 */
export function registerHistoryPage(app: AssistantServer, context: DashboardContext): void {
  dashboardRoute(app, {
    method: 'GET',
    url: '/history',
    handler: async (request, reply) => {
      const asked = queryField(request, 'window');
      const window: HistoryWindow = asked === 'week' ? 'week' : 'day';
      const { span, bucket } = windows[window];
      const series = historySeries(await readHistory(historyFile(context.config.paths.dataDir)), {
        window,
        nowMs: Date.now(),
      });
      const tasks = taskRows(series, span);
      const models = modelRows(series, span);
      const switcher = html`<nav aria-label="Time window"><ul class="filters">${(['day', 'week'] as const).map(
        (name) =>
          html`<li><a href="/history${name === 'day' ? '' : '?window=week'}"${name === window ? html` aria-current="page"` : ''}>${windows[name].label}</a></li>`,
      )}</ul></nav>`;
      const body = html`<p class="muted">What the workers did over ${span}, one bar per ${bucket}, oldest on the left. Kept in <code>data/metrics/history.json</code>, a file of fixed size.</p>
${switcher}
<section class="card" aria-labelledby="history-tasks"><h2 id="history-tasks">Tasks per type</h2>
${
  tasks.length === 0
    ? html`<p class="muted">No task finished in ${span}.</p>`
    : html`<div class="table-wrap"><table class="history"><caption class="visually-hidden">Finished tasks per type over ${span}</caption>
<thead><tr><th scope="col">Type</th><th scope="col">Done</th><th scope="col">Failed</th><th scope="col">Mean run</th><th scope="col">Done and failed per ${bucket}</th></tr></thead>
<tbody>${tasks}</tbody></table></div>`
}
</section>
<section class="card" aria-labelledby="history-models"><h2 id="history-models">Models per profile</h2>
${
  models.length === 0
    ? html`<p class="muted">No model call completed in ${span}.</p>`
    : html`<div class="table-wrap"><table class="history"><caption class="visually-hidden">Model calls per profile over ${span}</caption>
<thead><tr><th scope="col">Profile</th><th scope="col">Calls</th><th scope="col">Mean latency</th><th scope="col">Tokens</th><th scope="col">Latency per ${bucket}</th><th scope="col">Tokens per ${bucket}</th></tr></thead>
<tbody>${models}</tbody></table></div>`
}
</section>`;
      return sendPage(reply, { request, title: 'History', section: 'history', body });
    },
  });
}
