import type { DashboardContext } from './dashboard-context.ts';
import { html, type SafeHtml } from './html.ts';
import { dashboardHrefOf, formatLogDate, readLogBefore } from './human-log-view.ts';
import { type IndexedTask, itemTimelineIndex } from './item-timeline.ts';
import { timeTag } from './layout.ts';
import { notePageUrl } from './markdown.ts';
import { allApprovals } from './pending-approvals.ts';

/** How long a note page waits for the task index before it shows what it has (the first build reads every task). */
const indexWaitMs = 1_500;
/** Days of human log read for one item, at most (the days its tasks and approvals happened on). */
const maxLogDays = 14;
/** Bytes read from the end of each day's log. */
const logBytesPerDay = 1024 * 1024;
/** Entries a timeline shows, the newest kept (an item acted on every day for months has many). */
const maxEntries = 300;

interface Entry {
  atMs: number;
  /** Orders entries of the same instant: a task before its log line, a log line before the approval it announces. */
  order: number;
  view: SafeHtml;
}

function localDay(iso: string | undefined): string | undefined {
  if (iso === undefined) return undefined;
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? undefined : formatLogDate(date);
}

function stageOf(type: string): string {
  return type.slice(type.lastIndexOf('.') + 1);
}

function taskEntry(task: IndexedTask, role: string | undefined): Entry {
  const finished = task.finishedAt ? html`, ${task.state} ${timeTag(task.finishedAt)}` : '';
  return {
    atMs: Date.parse(task.createdAt),
    order: 0,
    view: html`<li data-kind="task" data-stage="${stageOf(task.type)}">${timeTag(task.createdAt)} <span class="timeline-kind">task</span> <a href="/tasks/${task.id}"><code>${task.type}</code></a>${role ? html` <span class="muted">(${role})</span>` : ''} <span class="badge ${task.state}">${task.state}</span>${finished}${task.error ? html`: <span class="timeline-error">${task.error}</span>` : ''}</li>`,
  };
}

/**
 * An item's timeline on its note page: the tasks about it (and the check that found it), its approval requests and the
 * human log's lines about it, in time order, each a link to where it is dealt with. Undefined for a note no task, request or line is
 * about (a note that is not an item): then nothing more is read.
 */
export async function renderTimeline(context: DashboardContext, notePath: string): Promise<SafeHtml | undefined> {
  const index = itemTimelineIndex(context);
  await index.refreshWithin(indexWaitMs);
  const tasks = index.tasksOf(notePath);
  const approvals = (await allApprovals(context)).filter((request) => request.item === notePath);
  if (tasks.length === 0 && approvals.length === 0) {
    return index.ready
      ? undefined
      : html`<section class="card timeline" aria-labelledby="timeline-heading"><h2 id="timeline-heading">Timeline</h2>${buildingNotice(index.progress)}</section>`;
  }
  const entries: Entry[] = [];
  const first = tasks[0];
  // The check that found the item: it ran when the item's first task was enqueued (a webhook's collect has none).
  const entry =
    first === undefined
      ? undefined
      : index
          .entryTaskAround({
            typePrefix: first.type.slice(0, first.type.lastIndexOf('.') + 1),
            integration: first.integration,
            atIso: first.createdAt,
          })
          .at(-1);
  if (entry) entries.push(taskEntry(entry, 'found it'));
  for (const task of tasks) entries.push(taskEntry(task, undefined));
  for (const request of approvals) {
    entries.push({
      atMs: Date.parse(request.created_at),
      order: 2,
      view: html`<li data-kind="approval">${timeTag(request.created_at)} <span class="timeline-kind">approval</span> <a href="/approvals/${request.id}">${request.id}</a>: ${request.title} <span class="badge ${request.status}">${request.status}</span>${request.decided_at ? html` <span class="muted">by ${request.decided_by ?? 'someone'}</span> ${timeTag(request.decided_at)}` : ''}</li>`,
    });
  }
  entries.push(...(await logEntries(context, notePath, [...tasks, ...(entry ? [entry] : [])], approvals)));
  // The log writes whole seconds: within one second, a task comes before its line, and a line before the request.
  const second = (entry: Entry) => Math.floor(entry.atMs / 1_000);
  entries.sort((left, right) => second(left) - second(right) || left.order - right.order || left.atMs - right.atMs);
  const shown = entries.slice(-maxEntries);
  return html`<section class="card timeline" aria-labelledby="timeline-heading">
<h2 id="timeline-heading">Timeline</h2>
${index.ready ? '' : buildingNotice(index.progress)}
${shown.length < entries.length ? html`<p class="muted">The newest ${shown.length} of ${entries.length} entries.</p>` : ''}
<ol class="timeline plain" id="item-timeline">${shown.map((item) => item.view)}</ol>
</section>`;
}

function buildingNotice(progress: { read: number; toRead: number }): SafeHtml {
  return html`<p class="notice warn">The timeline is still reading the queue (${progress.read} of ${progress.toRead} tasks): reload for the rest.</p>`;
}

/** The human log's lines that link to the item, from the days its tasks and approvals happened on. */
async function logEntries(
  context: DashboardContext,
  notePath: string,
  tasks: readonly IndexedTask[],
  approvals: readonly { id: string; created_at: string; decided_at?: string | undefined }[],
): Promise<Entry[]> {
  const days = new Set<string>();
  for (const task of tasks) for (const at of [task.createdAt, task.finishedAt]) days.add(localDay(at) ?? '');
  for (const request of approvals)
    for (const at of [request.created_at, request.decided_at]) days.add(localDay(at) ?? '');
  days.delete('');
  // Lines about the item, and about its approval requests (asked, approved, rejected, expired).
  const hrefs = new Set(
    [notePath, ...approvals.map((request) => `approvals/${request.id}.md`)].map((linked) => notePageUrl(linked)),
  );
  const chosen = [...days].sort().slice(-maxLogDays);
  const perDay = await Promise.all(
    chosen.map(async (day) => {
      const [year, month, date] = day.split('-').map(Number) as [number, number, number];
      const file = context.humanLog.fileFor(new Date(year, month - 1, date, 12));
      const chunk = await readLogBefore(file, { maxLines: 100_000, maxBytes: logBytesPerDay }).catch(() => undefined);
      const found: Entry[] = [];
      for (const line of chunk?.lines ?? []) {
        const lineHref = dashboardHrefOf(line.link);
        if (line.time === undefined || lineHref === undefined || !hrefs.has(lineHref)) continue;
        const [hours, minutes, seconds] = line.time.split(':').map(Number) as [number, number, number];
        const at = new Date(year, month - 1, date, hours, minutes, seconds);
        found.push({
          atMs: at.getTime(),
          order: 1,
          view: html`<li data-kind="log">${timeTag(at.toISOString())} <span class="timeline-kind">log</span> <span class="log-source">${line.source ?? ''}</span> ${line.message}${line.reason === undefined ? '' : html` <span class="log-reason">(${line.reason})</span>`} <a href="/log/${day}">in the log</a></li>`,
        });
      }
      return found;
    }),
  );
  return perDay.flat();
}
