import { type TaskEntry, type TaskQueue, type TaskRecord, type TaskState, taskStates } from '@assistant/queue';
import type { FastifyRequest } from 'fastify';
import type { DataPaths } from '../../data-paths.ts';
import type { AssistantServer } from '../../server-type.ts';
import type { DashboardContext } from '../dashboard-context.ts';
import { dashboardRoute, queryField } from '../dashboard-route.ts';
import { html, queryString, type SafeHtml } from '../html.ts';
import { type ItemSubject, itemNoteOfTask, itemSubjects, payloadPreview, renderItemSubject } from '../item-subjects.ts';
import { sendFragment, sendPage, timeTag, wantsFragment } from '../layout.ts';
import { resultOutcome, stateWithOutcome } from '../task-steps.ts';
import { registerTaskPage } from './task-page.ts';
import { bulkNoticeId, registerTasksBulk, renderBulkTaskForms } from './tasks-bulk.ts';

/** Rows per page. */
export const tasksPerPage = 50;
/** A search by integration or text reads task files: at most this many per page view. */
export const scanFileLimit = 2_000;
/** …and for at most this long (then the page says so and links to where the search goes on). */
const scanTimeLimitMs = 100;
/** Files read at once. */
const readConcurrency = 16;
const errorExcerptLength = 140;

/** The filters of the Tasks page, as its GET form sends them. */
export interface TaskFilters {
  state: TaskState | undefined;
  type: string;
  integration: string;
  text: string;
  /** Where in the listing this page starts (an index into the names listing). */
  start: number;
}

const typePattern = /^[a-z0-9_*-]+(\.[a-z0-9_*-]+)*$/;

/** The filters from the query, or what is wrong with them (the page shows the form again with the problem). */
export function parseTaskFilters(query: (name: string) => string | undefined): {
  filters: TaskFilters;
  problems: string[];
} {
  const problems: string[] = [];
  const rawState = (query('state') ?? '').trim();
  let state: TaskState | undefined;
  if (rawState !== '' && rawState !== 'all') {
    if ((taskStates as readonly string[]).includes(rawState)) state = rawState as TaskState;
    else problems.push(`state must be one of all, ${taskStates.join(', ')}`);
  }
  let type = (query('type') ?? '').trim();
  if (type !== '' && (type.length > 200 || !typePattern.test(type))) {
    problems.push('type must be a task type such as email.inbox.check, or a pattern such as email.*');
    type = '';
  }
  let integration = (query('integration') ?? '').trim();
  if (integration.length > 200) {
    problems.push('integration is at most 200 characters');
    integration = '';
  }
  let text = (query('q') ?? '').trim();
  if (text.length > 500) {
    problems.push('text is at most 500 characters');
    text = '';
  }
  const rawStart = (query('start') ?? '').trim();
  let start = 0;
  if (rawStart !== '') {
    if (/^\d{1,9}$/.test(rawStart)) start = Number(rawStart);
    else problems.push('start must be a whole number');
  }
  return { filters: { state, type, integration, text, start }, problems };
}

/** The query string of a filter set (what links and the live refresh carry). */
function filterQuery(filters: TaskFilters, overrides: Partial<TaskFilters> = {}): string {
  const merged = { ...filters, ...overrides };
  return queryString({
    state: merged.state,
    type: merged.type,
    integration: merged.integration,
    q: merged.text,
    start: merged.start === 0 ? undefined : merged.start,
  });
}

/** Whether a task read in full matches the integration and text filters (the name filters were applied already). */
function matchesReadFilters(record: TaskRecord, filters: Pick<TaskFilters, 'integration' | 'text'>): boolean {
  const task = record.task;
  if (filters.integration !== '' && task?.integration !== filters.integration) return false;
  if (filters.text === '') return true;
  const needle = filters.text.toLowerCase();
  const haystack = [
    record.name?.id,
    record.name?.type,
    record.location,
    task?.integration,
    task === undefined ? record.problem : JSON.stringify(task.payload),
    task?.result === undefined ? '' : JSON.stringify(task.result),
    task?.error?.message,
  ]
    .filter((part) => typeof part === 'string')
    .join('\n')
    .toLowerCase();
  return haystack.includes(needle);
}

async function mapLimited<T, R>(items: readonly T[], limit: number, run: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array(items.length);
  let next = 0;
  const workers = Array.from({ length: Math.min(limit, items.length) }, async () => {
    while (next < items.length) {
      const index = next;
      next += 1;
      results[index] = await run(items[index] as T);
    }
  });
  await Promise.all(workers);
  return results;
}

/** A row: the entry, and the task read in full (undefined when it moved on or cannot be read). */
interface Row {
  entry: TaskEntry;
  record: TaskRecord | undefined;
}

interface TaskPage {
  rows: Row[];
  /** Names that matched the state and type filters. */
  listed: number;
  /** Where the next page starts, if there is one. */
  next: number | undefined;
  /** For a search: how many files this page view read, and why it stopped early (if it did). */
  scanned?: number;
  stoppedEarly?: string;
}

async function readEntry(queue: TaskQueue, entry: TaskEntry): Promise<TaskRecord | undefined> {
  if (!entry.name) return undefined;
  return queue.get(entry.name.id);
}

/**
 * The entries of the listing from index `start` on, in the queue's order (pending and active in run order, then done
 * and failed newest first). A state is listed only when the walk reaches it: `counts` (from file names) skip whole
 * states, so the first page of all tasks never sorts 5,000 done files by time.
 */
async function* entriesFrom(
  queue: TaskQueue,
  filters: TaskFilters,
  counts: Record<TaskState, number>,
): AsyncGenerator<{ entry: TaskEntry; index: number }> {
  let skip = filters.start;
  let index = filters.start;
  for (const state of filters.state ? [filters.state] : taskStates) {
    if (skip >= counts[state]) {
      skip -= counts[state];
      continue;
    }
    const entries = await queue.list({ state, ...(filters.type ? { type: filters.type } : {}) });
    for (const entry of entries.slice(skip)) {
      yield { entry, index };
      index += 1;
    }
    skip = 0;
  }
}

/**
 * One page of tasks. The state and type filters work on file names (cheap); the integration and text filters read
 * the files, from `start` on, until a page is full or `scanFileLimit` files were read (or `scanTimeLimitMs` passed):
 * a search never reads every task.
 */
async function findTasks(queue: TaskQueue, filters: TaskFilters, counts: Record<TaskState, number>): Promise<TaskPage> {
  const states: readonly TaskState[] = filters.state ? [filters.state] : taskStates;
  let listed = 0;
  for (const state of states) listed += counts[state];
  const walk = entriesFrom(queue, filters, counts);
  if (filters.integration === '' && filters.text === '') {
    const slice: TaskEntry[] = [];
    for await (const { entry } of walk) {
      slice.push(entry);
      if (slice.length >= tasksPerPage) break;
    }
    const records = await mapLimited(slice, readConcurrency, (entry) => readEntry(queue, entry));
    const end = filters.start + slice.length;
    return {
      rows: slice.map((entry, index) => ({ entry, record: records[index] })),
      listed,
      next: slice.length === tasksPerPage && end < listed ? end : undefined,
    };
  }
  const rows: Row[] = [];
  const startedMs = Date.now();
  let next: number | undefined;
  let scanned = 0;
  let stoppedEarly: string | undefined;
  let batch: { entry: TaskEntry; index: number }[] = [];
  // Reads in batches (a few files at once), stopping at a full page or at a limit.
  const flush = async (): Promise<boolean> => {
    const records = await mapLimited(batch, readConcurrency, ({ entry }) => readEntry(queue, entry));
    for (const [offset, { entry, index }] of batch.entries()) {
      scanned += 1;
      next = index + 1;
      const record = records[offset];
      if (record && matchesReadFilters(record, filters)) rows.push({ entry, record });
      if (rows.length >= tasksPerPage) return true;
    }
    batch = [];
    if (scanned >= scanFileLimit) stoppedEarly = `read ${scanFileLimit.toLocaleString('en')} tasks`;
    else if (Date.now() - startedMs > scanTimeLimitMs) stoppedEarly = `searched for ${scanTimeLimitMs} ms`;
    return stoppedEarly !== undefined;
  };
  let full = false;
  for await (const item of walk) {
    batch.push(item);
    if (batch.length >= Math.min(readConcurrency * 2, scanFileLimit - scanned) && (await flush())) {
      full = true;
      break;
    }
  }
  if (!full && batch.length > 0) await flush();
  const reachedEnd = !full && stoppedEarly === undefined;
  return {
    rows,
    listed,
    next: reachedEnd || next === undefined || next >= listed ? undefined : next,
    scanned,
    ...(stoppedEarly ? { stoppedEarly } : {}),
  };
}

/** Whether a task type matches the type filter: exact, or a pattern where `*` stands for anything (as the queue's). */
function typeMatches(pattern: string, type: string): boolean {
  if (!pattern.includes('*')) return pattern === type;
  const expression = pattern
    .split('*')
    .map((part) => part.replace(/[.+?^${}()|[\]\\]/g, '\\$&'))
    .join('.*');
  return new RegExp(`^${expression}$`).test(type);
}

/** Task counts per state (from file names), with the type filter applied. */
async function countsByState(queue: TaskQueue, type: string): Promise<Record<TaskState, number>> {
  const stats = await queue.stats();
  const counts = { pending: 0, active: 0, done: 0, failed: 0 };
  for (const state of taskStates) {
    if (type === '') {
      counts[state] = stats[state];
      continue;
    }
    for (const [name, count] of Object.entries(stats.typesByState[state])) {
      if (typeMatches(type, name)) counts[state] += count;
    }
  }
  return counts;
}

function errorExcerpt(record: TaskRecord | undefined, paths: DataPaths): string {
  const outcome = record?.state === 'done' ? resultOutcome(record.task?.result) : undefined;
  const message =
    record?.task?.error?.message ?? record?.problem ?? (outcome ? outcome.reason || outcome.status : undefined);
  if (!message) return '';
  const scrubbed = paths.scrub(message);
  return scrubbed.length > errorExcerptLength ? `${scrubbed.slice(0, errorExcerptLength)}…` : scrubbed;
}

/** What a row is about: the item by its subject (a link to its note), else a preview of the task's data. */
function subjectCell(
  record: TaskRecord | undefined,
  subjects: Map<string, ItemSubject | undefined>,
): SafeHtml | string {
  const task = record?.task;
  if (!task) return '';
  const notePath = itemNoteOfTask(task);
  const subject = notePath === undefined ? undefined : subjects.get(notePath);
  if (subject) return renderItemSubject(subject);
  if (notePath !== undefined) return html`<span class="muted">${notePath}</span>`;
  const preview = payloadPreview(task.payload);
  return preview === '' ? '' : html`<code class="data-preview">${preview}</code>`;
}

function renderRow(row: Row, paths: DataPaths, subjects: Map<string, ItemSubject | undefined>): SafeHtml {
  const { entry, record } = row;
  const task = record?.task;
  const id = entry.name?.id;
  const finished = task?.finishedAt;
  return html`<tr>
<td>${stateWithOutcome(record?.state ?? entry.state, task?.result)}</td>
<td>${id ? html`<a href="/tasks/${id}"><code>${entry.name?.type ?? '?'}</code></a>` : html`<code>${entry.name?.type ?? '?'}</code>`}</td>
<th scope="row">${id ? html`<a href="/tasks/${id}">${id}</a>` : html`<span class="muted">${entry.location}</span>`}</th>
<td class="task-subject">${subjectCell(record, subjects)}</td>
<td>${task?.integration ?? ''}</td>
<td class="hide-narrow">${entry.name?.priority ?? ''}</td>
<td class="hide-narrow">${timeTag(task?.createdAt)}</td>
<td class="hide-narrow">${timeTag(entry.name ? new Date(entry.name.readyAtMs).toISOString() : undefined)}</td>
<td class="hide-narrow">${timeTag(finished)}</td>
<td>${task ? `${task.attempts}/${task.maxAttempts}` : ''}</td>
<td>${errorExcerpt(record, paths)}</td>
</tr>`;
}

/** The part of the page that refreshes: counts, the table and the pager. Refetches itself on queue events. */
function renderResults(
  filters: TaskFilters,
  page: TaskPage,
  counts: Record<TaskState, number>,
  paths: DataPaths,
  subjects: Map<string, ItemSubject | undefined>,
  problems: readonly string[],
  request: FastifyRequest,
): SafeHtml {
  const problemNotice =
    problems.length === 0
      ? ''
      : html`<div class="notice bad" role="alert"><p>Some filters were ignored:</p><ul>${problems.map((problem) => html`<li>${problem}</li>`)}</ul></div>`;
  const self = `/tasks${filterQuery(filters)}`;
  const countLinks = [
    html`<li><a href="/tasks${filterQuery(filters, { state: undefined, start: 0 })}"${filters.state === undefined ? html` aria-current="true"` : ''}>all <strong>${counts.pending + counts.active + counts.done + counts.failed}</strong></a></li>`,
    ...taskStates.map(
      (state) =>
        html`<li><a href="/tasks${filterQuery(filters, { state, start: 0 })}"${filters.state === state ? html` aria-current="true"` : ''}>${state} <strong>${counts[state]}</strong></a></li>`,
    ),
  ];
  const searching = filters.integration !== '' || filters.text !== '';
  const previous =
    filters.start > 0
      ? searching
        ? html`<a href="/tasks${filterQuery(filters, { start: 0 })}">First page</a>`
        : html`<a href="/tasks${filterQuery(filters, { start: Math.max(0, filters.start - tasksPerPage) })}" rel="prev">Previous ${tasksPerPage}</a>`
      : '';
  const next =
    page.next === undefined
      ? ''
      : html`<a href="/tasks${filterQuery(filters, { start: page.next })}" rel="next">${searching ? 'Search on' : `Next ${tasksPerPage}`}</a>`;
  const summary = searching
    ? html`<p class="muted" id="task-summary-line">${page.rows.length} match(es) among tasks ${filters.start + 1}–${filters.start + (page.scanned ?? 0)} of ${page.listed}${page.stoppedEarly ? html`; stopped after it ${page.stoppedEarly}: refine the filters, or search on` : ''}.</p>`
    : html`<p class="muted" id="task-summary-line">${page.listed === 0 ? 'No tasks.' : `Tasks ${Math.min(filters.start + 1, page.listed)}–${filters.start + page.rows.length} of ${page.listed}.`}</p>`;
  return html`<div id="task-results" hx-get="${self}" hx-trigger="live-refresh" data-live-events="queue" hx-select="#task-results > *" hx-swap="innerHTML" hx-sync="this:queue last" hx-disinherit="*">
${problemNotice}
<nav aria-label="Tasks per state"><ul class="state-counts">${countLinks}</ul></nav>
${summary}
${
  page.rows.length === 0
    ? html`<p>No task matches.</p>`
    : html`<div class="table-wrap"><table class="tasks">
<caption class="visually-hidden">Tasks</caption>
<thead><tr><th scope="col">State</th><th scope="col">Type</th><th scope="col">Id</th><th scope="col">Subject</th><th scope="col">Integration</th><th scope="col" class="hide-narrow">Priority</th><th scope="col" class="hide-narrow">Created</th><th scope="col" class="hide-narrow">Ready</th><th scope="col" class="hide-narrow">Finished</th><th scope="col">Attempts</th><th scope="col">Error</th></tr></thead>
<tbody>${page.rows.map((row) => renderRow(row, paths, subjects))}</tbody>
</table></div>`
}
${renderBulkTaskForms(request, {
  query: filterQuery(filters),
  failedIds: page.rows.flatMap((row) => (row.entry.state === 'failed' && row.entry.name ? [row.entry.name.id] : [])),
})}
<nav class="pager" aria-label="Pages">${previous}${next}</nav>
</div>`;
}

function renderFilterForm(filters: TaskFilters): SafeHtml {
  const option = (value: string, label: string) =>
    html`<option value="${value}"${(filters.state ?? 'all') === value ? html` selected` : ''}>${label}</option>`;
  return html`<form method="get" action="/tasks" class="toolbar" role="search" aria-label="Filter tasks" hx-get="/tasks" hx-target="#task-results" hx-swap="outerHTML" hx-push-url="true" hx-trigger="submit, change">
<label>State <select name="state">${option('all', 'all')}${taskStates.map((state) => option(state, state))}</select></label>
<label>Type <input type="text" name="type" value="${filters.type}" placeholder="email.*" spellcheck="false"></label>
<label>Integration <input type="text" name="integration" value="${filters.integration}" spellcheck="false"></label>
<label>Text <input type="search" name="q" value="${filters.text}"></label>
<button type="submit">Filter</button>
${filters.state || filters.type || filters.integration || filters.text ? html`<a class="button secondary" href="/tasks">Clear</a>` : ''}
</form>`;
}

/** The Tasks page (`/tasks`) and a task's page (`/tasks/:id`, task-page.ts). */
export function registerTasksPage(app: AssistantServer, context: DashboardContext): void {
  dashboardRoute(app, {
    method: 'GET',
    url: '/tasks',
    handler: async (request: FastifyRequest, reply) => {
      const { filters, problems } = parseTaskFilters((name) => queryField(request, name));
      const queue = context.queue();
      const counts = await countsByState(queue, filters.type);
      const page = await findTasks(queue, filters, counts);
      // The items' subjects, from their notes: one stat per row, a read only for a note that changed.
      const subjects = await itemSubjects(context).lookup(
        page.rows.flatMap((row) => {
          const notePath = row.record?.task ? itemNoteOfTask(row.record.task) : undefined;
          return notePath === undefined ? [] : [notePath];
        }),
      );
      const results = renderResults(filters, page, counts, context.paths, subjects, problems, request);
      if (wantsFragment(request)) return sendFragment(reply, results);
      return sendPage(reply, {
        request,
        title: 'Tasks',
        section: 'tasks',
        body: html`${renderFilterForm(filters)}<div id="${bulkNoticeId}"></div>${results}`,
        live: '/live?topics=queue',
      });
    },
  });
  registerTaskPage(app, context);
  registerTasksBulk(app, context);
}
