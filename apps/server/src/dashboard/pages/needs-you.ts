import { readdir } from 'node:fs/promises';
import { describeApproval } from '@assistant/actions';
import { AssistantError } from '@assistant/errors';
import { type PauseState, PauseStore } from '@assistant/notes';
import type { TaskRecord } from '@assistant/queue';
import { healthDetails } from '../../health-route.ts';
import { modelStatus } from '../../model-status.ts';
import type { AssistantServer } from '../../server-type.ts';
import type { DashboardContext } from '../dashboard-context.ts';
import { dashboardRoute, formField, redirectAfterPost } from '../dashboard-route.ts';
import { html, queryString, type SafeHtml } from '../html.ts';
import { type ItemSubject, itemNoteOfTask, itemSubjects, payloadPreview, renderItemSubject } from '../item-subjects.ts';
import { csrfField, timeTag } from '../layout.ts';
import { pendingApprovals } from '../pending-approvals.ts';
import { markFailuresSeen, readFailuresSeenUntil } from '../seen-failures.ts';
import { clarificationsOf, readTaskEvents, type TaskEventLine } from '../task-steps.ts';
import { dueOwnerTasks, hasDueTasks, renderDueTasks } from './due-owner-tasks.ts';

/** Entries listed per group; each group links to the page with all of them. */
const listed = 5;
/** Running tasks looked at (their events read for questions and progress): more than a worker's concurrency. */
const runningLooked = 20;
/** Failed tasks read (for their subject and error) when listing the unseen ones. */
const failedListed = 10;
const errorExcerptLength = 160;

interface Running {
  record: TaskRecord;
  events: TaskEventLine[];
}

function excerpt(text: string): string {
  return text.length > errorExcerptLength ? `${text.slice(0, errorExcerptLength)}…` : text;
}

/** A task named by its item's subject, else by a preview of its data. */
function taskLabel(record: TaskRecord, subjects: Map<string, ItemSubject | undefined>): SafeHtml {
  const task = record.task;
  const type = record.name?.type ?? task?.type ?? '?';
  const id = record.name?.id ?? task?.id ?? '';
  const notePath = task ? itemNoteOfTask(task) : undefined;
  const subject = notePath === undefined ? undefined : subjects.get(notePath);
  const about = subject
    ? html` ${renderItemSubject(subject)}`
    : task && payloadPreview(task.payload, 80) !== ''
      ? html` <code class="data-preview">${payloadPreview(task.payload, 80)}</code>`
      : '';
  return html`<a href="/tasks/${id}"><code>${type}</code></a>${about}`;
}

/** Progress where the task tells it: an agent's steps so far and its last notification; the attempt otherwise. */
function progressOf(running: Running): SafeHtml {
  const task = running.record.task;
  const steps = running.events.filter((event) => event.type === 'step-started').length;
  const notification = running.events.findLast((event) => event.type === 'notification');
  const attempt = task ? `attempt ${task.attempts + 1} of ${task.maxAttempts}` : '';
  const message = notification && typeof notification.message === 'string' ? excerpt(notification.message) : undefined;
  return html`<span class="muted">${steps > 0 ? `step ${steps}, ` : ''}${attempt}</span>${message ? html` — ${message}` : ''}`;
}

async function chatQuestions(context: DashboardContext): Promise<{ conversation: string; question: string }[]> {
  try {
    const turns = context.chat().turns;
    const names = (await readdir(turns.directory).catch(() => [] as string[])).filter((name) => name.endsWith('.json'));
    const found: { conversation: string; question: string }[] = [];
    for (const name of names.slice(0, 100)) {
      const state = await turns.read(name.slice(0, -'.json'.length)).catch(() => undefined);
      if (state?.question && turns.isLive(state)) {
        found.push({ conversation: state.conversation, question: state.question.text });
      }
    }
    return found;
  } catch {
    // No chat on this server: no chat questions.
    return [];
  }
}

/**
 * "Needs you", the Overview's first part: what waits for the owner (approvals, questions from agents and chats, tasks
 * that failed for good since they last looked, open breakers and model outages), then what runs now, each named by
 * its subject and linked to where it is dealt with. A fragment (`/overview/needs`) refreshed on queue, approvals and
 * models events.
 */
export async function renderNeedsPart(
  context: DashboardContext,
  request: Parameters<typeof csrfField>[0],
): Promise<SafeHtml> {
  const queue = context.queue();
  const dataDir = context.config.paths.dataDir;
  const [approvals, activeEntries, failedEntries, seenUntilMs, health, models, chats, paused, dueTasks] =
    await Promise.all([
      pendingApprovals(context),
      queue.list({ state: 'active' }),
      queue.list({ state: 'failed' }),
      readFailuresSeenUntil(dataDir),
      healthDetails({ queue, status: context.status, catalog: context.catalog, llms: context.config.llms }),
      modelStatus({ queue, catalog: context.catalog, llms: context.config.llms }),
      chatQuestions(context),
      // What the owner paused stays in view until resumed: a pause forgotten is work silently not done.
      new PauseStore({ notes: context.notes })
        .read()
        .catch((error: unknown): PauseState => ({ entries: [], problems: [], broken: String(error) })),
      // The owner's own tasks (tasks/*.md) due today or overdue (decision 0061).
      dueOwnerTasks(context),
    ]);
  const running: Running[] = (
    await Promise.all(
      activeEntries.slice(0, runningLooked).map(async (entry): Promise<Running | undefined> => {
        if (!entry.name) return undefined;
        const record = await queue.get(entry.name.id);
        if (!record) return undefined;
        const { events } = await readTaskEvents(context.controlRoot, entry.name.id).catch(() => ({
          events: [] as TaskEventLine[],
        }));
        return { record, events };
      }),
    )
  ).filter((item): item is Running => item !== undefined);
  const unseen = failedEntries.filter((entry) => (entry.finishedAtMs ?? 0) > seenUntilMs);
  const failedRecords = (
    await Promise.all(unseen.slice(0, failedListed).map((entry) => (entry.name ? queue.get(entry.name.id) : undefined)))
  ).filter((record): record is TaskRecord => record !== undefined);
  const subjects = await itemSubjects(context).lookup(
    [...running.map((item) => item.record), ...failedRecords].flatMap((record) => {
      const notePath = record.task ? itemNoteOfTask(record.task) : undefined;
      return notePath === undefined ? [] : [notePath];
    }),
  );

  const questions = running.flatMap((item) =>
    clarificationsOf(item.events)
      .filter((clarification) => !clarification.answered)
      .map((clarification) => ({ record: item.record, question: clarification.question })),
  );
  const outages = models.models.filter((model) => model.state === 'open' || model.state === 'half_open');
  const breakers = health.circuit_breakers;
  const newestUnseenMs = unseen[0]?.finishedAtMs;

  const groups: SafeHtml[] = [];
  if (approvals.length > 0) {
    groups.push(html`<section aria-labelledby="needs-approvals"><h3 id="needs-approvals">${approvals.length} approval${approvals.length === 1 ? '' : 's'} waiting</h3>
<ul class="plain">${approvals
      .slice(0, listed)
      .map(
        (approval) =>
          html`<li><a href="/approvals/${approval.id}">${describeApproval(approval)} <span class="muted">for</span> ${approval.title}</a> <span class="muted">asked ${timeTag(approval.created_at)}, expires ${timeTag(approval.expires_at)}</span></li>`,
      )}</ul>
<p><a href="/approvals">Decide on the Approvals page</a></p></section>`);
  }
  if (questions.length + chats.length > 0) {
    groups.push(html`<section aria-labelledby="needs-questions"><h3 id="needs-questions">${questions.length + chats.length} question${questions.length + chats.length === 1 ? '' : 's'} from agents</h3>
<ul class="plain">${questions.map(
      ({ record, question }) =>
        html`<li>“${question}” <span class="muted">asks</span> ${taskLabel(record, subjects)} <a href="/tasks/${record.name?.id ?? ''}#clarifications-heading">Answer</a></li>`,
    )}${chats.map(
      (chat) =>
        html`<li>“${chat.question}” <span class="muted">asks the chat</span> <a href="/chat/${encodeURIComponent(chat.conversation)}">Answer in the conversation</a></li>`,
    )}</ul></section>`);
  }
  if (hasDueTasks(dueTasks)) groups.push(renderDueTasks(request, context, dueTasks));
  if (unseen.length > 0) {
    groups.push(html`<section aria-labelledby="needs-failed"><h3 id="needs-failed">${unseen.length} task${unseen.length === 1 ? '' : 's'} failed since you last looked</h3>
<ul class="plain">${failedRecords.map(
      (record) =>
        html`<li>${taskLabel(record, subjects)} <span class="muted">failed ${timeTag(record.task?.finishedAt)}</span>${record.task?.error ? html`: ${context.paths.scrub(excerpt(record.task.error.message))}` : record.problem ? html`: ${context.paths.scrub(excerpt(record.problem))}` : ''}</li>`,
    )}</ul>
<div class="actions"><a href="/tasks${queryString({ state: 'failed' })}">All failed tasks</a>
<form method="post" action="/overview/failed-seen">${csrfField(request)}<input type="hidden" name="until" value="${String(Math.ceil(newestUnseenMs ?? 0))}"><button type="submit" class="secondary">Mark as seen</button></form></div></section>`);
  }
  if (breakers.length + outages.length > 0) {
    groups.push(html`<section aria-labelledby="needs-outages"><h3 id="needs-outages">Outages</h3>
<ul class="plain">${outages.map(
      (model) =>
        html`<li>Model <strong>${model.profile}</strong> is ${model.state === 'open' ? 'unavailable' : 'being tried again'}${model.retryAt ? html` until ${timeTag(model.retryAt)}` : ''}${model.lastError ? html`: ${excerpt(model.lastError)}` : ''}; ${model.backlog} task${model.backlog === 1 ? '' : 's'} wait for it. <a href="#overview-models">Models</a></li>`,
    )}${breakers.map(
      (breaker) =>
        html`<li>Circuit breaker <a href="/tasks${queryString({ type: breaker.task_type })}"><code>${breaker.task_type}</code></a> is ${breaker.state} after ${breaker.consecutive_failures} failures${breaker.retry_at ? html`, tries again ${timeTag(breaker.retry_at)}` : ''}${breaker.last_error ? html`: ${excerpt(breaker.last_error)}` : ''}</li>`,
    )}</ul></section>`);
  }
  if (paused.entries.length > 0 || paused.broken !== undefined) {
    groups.push(html`<section aria-labelledby="needs-paused"><h3 id="needs-paused">${paused.entries.length} paused</h3>
${paused.broken === undefined ? '' : html`<p class="notice bad">The pause note does not parse, so nothing is paused: ${paused.broken}</p>`}
<ul class="plain">${paused.entries.map(
      (entry) =>
        html`<li><span class="tier">paused</span> ${entry.kind} <code>${entry.name}</code>${entry.at ? html` <span class="muted">since ${timeTag(entry.at)}</span>` : ''}${entry.reason ? html`: ${excerpt(entry.reason)}` : ''}</li>`,
    )}</ul>
<p><a href="/config#paused">Resume on the Config page</a></p></section>`);
  }
  const runningList =
    running.length === 0
      ? html`<p class="muted">Nothing is running.</p>`
      : html`<ul class="plain" id="needs-running-list">${running.map(
          (item) => html`<li>${taskLabel(item.record, subjects)} ${progressOf(item)}</li>`,
        )}</ul>${activeEntries.length > running.length ? html`<p><a href="/tasks?state=active">All ${activeEntries.length} running</a></p>` : ''}`;
  return html`<section class="card overview-needs needs-you" aria-labelledby="overview-needs-title" id="overview-needs" hx-get="/overview/needs" hx-trigger="live-refresh" data-live-events="queue approvals models" hx-swap="outerHTML">
<h2 id="overview-needs-title">Needs you</h2>
${groups.length === 0 ? html`<p class="notice ok">Nothing needs you: no approvals, questions, tasks of yours due, new failures, outages or pauses.</p>` : groups}
<section aria-labelledby="needs-running"><h3 id="needs-running">Running now</h3>
${runningList}</section>
</section>`;
}

/** "Mark as seen": failures up to the newest one the page showed (one that failed after it was drawn stays new). */
export function registerNeedsRoutes(app: AssistantServer, context: DashboardContext): void {
  dashboardRoute(app, {
    method: 'POST',
    url: '/overview/failed-seen',
    handler: async (request, reply) => {
      const until = formField(request, 'until') ?? '';
      if (!/^\d{1,16}$/.test(until)) {
        throw new AssistantError(
          'BAD_REQUEST',
          `until must be a time in ms since the epoch, got \`${until.slice(0, 40)}\``,
        );
      }
      await markFailuresSeen({ dataDir: context.config.paths.dataDir, untilMs: Number(until) });
      return redirectAfterPost(request, reply, '/');
    },
  });
}
