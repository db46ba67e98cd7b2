import { rerouteTask } from '@assistant/actions';
import { type AgentTreeNode, agentsRoot, readAgentTree } from '@assistant/agents';
import { AssistantError, scrubSecrets } from '@assistant/errors';
import { type JsonValue, type TaskRecord, taskIdPattern } from '@assistant/queue';
import { type SteeringAction, steeringActions } from '@assistant/steering';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { type SteerInput, steerTask } from '../../routes/steering-routes.ts';
import type { AssistantServer } from '../../server-type.ts';
import type { DashboardContext } from '../dashboard-context.ts';
import { dashboardRoute, formField, queryField, redirectAfterPost } from '../dashboard-route.ts';
import { html, queryString, type SafeHtml } from '../html.ts';
import { type ItemSubject, itemNoteOfTask, itemSubjects, renderItemSubject } from '../item-subjects.ts';
import { csrfField, sendFragment, sendPage, timeTag, wantsFragment } from '../layout.ts';
import {
  clarificationsOf,
  readTaskEvents,
  registerTaskTopic,
  renderEvent,
  shownEventLimit,
  stateWithOutcome,
  type TaskEventLine,
} from '../task-steps.ts';

/** Payload and result longer than this (as pretty JSON) are cut, with a link to the whole. */
export const jsonShownLimit = 20_000;

/** The task id of a route, checked before anything touches the disk; anything else is a 404 page. */
function taskIdOf(request: FastifyRequest): string {
  const id = (request.params as { id?: unknown }).id;
  if (typeof id !== 'string' || !taskIdPattern.test(id)) {
    throw new AssistantError('NOT_FOUND', 'not a task id: expected 26 lower-case letters and digits');
  }
  return id;
}

/** Pretty JSON in a `<pre>`, escaped, cut at `jsonShownLimit` unless `full`. */
function renderJson(value: JsonValue | undefined, options: { full: boolean; moreHref: string }): SafeHtml {
  if (value === undefined) return html`<p class="muted">none</p>`;
  // A payload is kept as it was enqueued: a secret someone put in one is not shown (results are scrubbed on disk).
  const text = scrubSecrets(JSON.stringify(value, null, 2));
  if (options.full || text.length <= jsonShownLimit) return html`<pre>${text}</pre>`;
  return html`<pre>${text.slice(0, jsonShownLimit)}…</pre><p><a href="${options.moreHref}">Show all (${text.length.toLocaleString('en')} characters)</a></p>`;
}

const steerStatuses = ['applied', 'queued', 'refused'] as const;

/** What a notice code in the query says (fixed texts: nothing from the query is shown as it came). */
function noticeText(request: FastifyRequest): { text: string; tone: 'ok' | 'warn' | 'bad' } | undefined {
  const notice = queryField(request, 'notice');
  if (notice === 'retried')
    return { text: 'Retried: the task is pending again, with a fresh set of attempts.', tone: 'ok' };
  if (notice === 'rerouted') {
    const count = (name: string) => {
      const value = queryField(request, name) ?? '';
      return /^\d{1,6}$/.test(value) ? Number(value) : 0;
    };
    return {
      text: `Rerouted: the result went to ${count('notes')} note(s) and ${count('enqueued')} new task(s).`,
      tone: 'ok',
    };
  }
  const match = /^([a-z]+)-([a-z]+)$/.exec(notice ?? '');
  const action = match?.[1] as SteeringAction | undefined;
  const status = match?.[2] as (typeof steerStatuses)[number] | undefined;
  if (!action || !status || !steeringActions.includes(action) || !steerStatuses.includes(status)) return undefined;
  if (status === 'applied') return { text: `${action}: applied by the worker.`, tone: 'ok' };
  if (status === 'queued') {
    return { text: `${action}: sent; the task applies it when it runs (it has not yet).`, tone: 'warn' };
  }
  return { text: `${action}: refused by the task.`, tone: 'bad' };
}

function row(label: string, value: SafeHtml | string | number | undefined): SafeHtml {
  return html`<tr><th scope="row">${label}</th><td>${value === undefined || value === '' ? html`<span class="muted">—</span>` : value}</td></tr>`;
}

/**
 * The worker holding an active task. A claim renames the file (its name then ends in `@<worker id>`) without
 * rewriting it: the attempt, start and worker reach the file when the attempt ends.
 */
export function activeWorker(location: string): string | undefined {
  return /@([^/@]+)\.yaml$/.exec(location)?.[1];
}

interface SummaryInput {
  id: string;
  record: TaskRecord;
  events: TaskEventLine[];
  full: boolean;
  /** The item the task is about (its note path), and its subject when the note names one. */
  item?: { notePath: string; subject: ItemSubject | undefined } | undefined;
}

/** The item a task is about, by its subject, a link to its note; the note's path when the note is gone. */
async function itemOf(context: DashboardContext, record: TaskRecord): Promise<SummaryInput['item']> {
  const notePath = record.task ? itemNoteOfTask(record.task) : undefined;
  if (notePath === undefined) return undefined;
  const subject = (await itemSubjects(context).lookup([notePath])).get(notePath);
  return { notePath, subject };
}

function itemCell(item: SummaryInput['item']): SafeHtml | undefined {
  if (!item) return undefined;
  if (item.subject) {
    return html`${renderItemSubject(item.subject)}<br><small class="muted"><code>${item.notePath}</code></small>`;
  }
  return html`<code>${item.notePath}</code> <span class="muted">(the note is not there)</span>`;
}

/**
 * Everything but the event list: fields, buttons, steering, clarifications, payload, result, error, history.
 * The summary is fetched again whenever the task's state changes and once when the live stream opens (just after the
 * page loads), so the steering forms that take text and the ask's answer are `hx-preserve`d: a refresh while the
 * owner types, or while a question waits for its answer, keeps the text and lands the answer where it is seen (it once
 * went into the replaced, detached element). They go with the section when the task finishes.
 */
function renderSummary(request: FastifyRequest, context: DashboardContext, input: SummaryInput): SafeHtml {
  const { id, record, events } = input;
  const task = record.task;
  const paths = context.paths;
  const running = record.state === 'pending' || record.state === 'active';
  const active = record.state === 'active';
  const csrf = csrfField(request);
  const buttons: SafeHtml[] = [];
  if (record.state === 'failed' && task) {
    buttons.push(
      html`<form method="post" action="/tasks/${id}/retry">${csrf}<button type="submit">Retry this task</button></form>`,
    );
  }
  if (record.state === 'done' && task?.type.startsWith('service.')) {
    buttons.push(
      html`<form method="post" action="/tasks/${id}/reroute">${csrf}<button type="submit" class="secondary">Route the result again</button></form>`,
    );
  }
  const steerable = running && (events.length > 0 || task?.type === 'system.agent');
  const steerForm = (action: SteeringAction, label: string, extra: SafeHtml = html``, style = '') =>
    html`<form method="post" action="/tasks/${id}/steer">${csrf}<input type="hidden" name="action" value="${action}">${extra}<button type="submit"${style ? html` class="${style}"` : ''}>${label}</button></form>`;
  const steering = steerable
    ? html`<section aria-labelledby="steer-heading" class="card steer">
<h2 id="steer-heading">Steer</h2>
<div class="actions">${steerForm('pause', 'Pause', html``, 'secondary')}${steerForm('resume', 'Resume', html``, 'secondary')}</div>
<form method="post" action="/tasks/${id}/steer" class="steer-line" id="steer-interject" hx-preserve="true">${csrf}<input type="hidden" name="action" value="interject">
<label for="interject-message">Message to the agent</label><input type="text" id="interject-message" name="message" required maxlength="20000">
<button type="submit">Interject</button></form>
<form method="post" action="/tasks/${id}/steer" class="steer-line" id="steer-ask" hx-preserve="true" hx-post="/tasks/${id}/steer" hx-target="#ask-answer" hx-swap="innerHTML">${csrf}<input type="hidden" name="action" value="ask">
<label for="ask-message">Question (answered from its transcript; it keeps working)</label><input type="text" id="ask-message" name="message" required maxlength="20000">
<button type="submit">Ask</button></form>
<div id="ask-answer" aria-live="polite" hx-preserve="true"></div>
<form method="post" action="/tasks/${id}/steer" class="steer-line" id="steer-stop" hx-preserve="true">${csrf}<input type="hidden" name="action" value="stop">
<label for="stop-reason">Reason to stop (optional)</label><input type="text" id="stop-reason" name="reason" maxlength="2000">
<button type="submit" class="danger">Stop</button></form>
</section>`
    : '';
  const clarifications = clarificationsOf(events);
  const clarificationSection =
    clarifications.length === 0
      ? ''
      : html`<section aria-labelledby="clarifications-heading" class="card">
<h2 id="clarifications-heading">Clarifications</h2>
<ul class="plain clarifications">${clarifications.map(
          (clarification, index) =>
            html`<li>${
              clarification.answered || !running
                ? html`<p>${clarification.question} <span class="badge ${clarification.answered ? 'done' : 'failed'}">${clarification.answered ? 'answered' : 'not answered'}</span></p>`
                : html`<form method="post" action="/tasks/${id}/steer" class="steer-line">${csrf}<input type="hidden" name="action" value="answer"><input type="hidden" name="clarification_id" value="${clarification.id}">
<label for="answer-${index}">The agent asks: ${clarification.question}</label><input type="text" id="answer-${index}" name="message" required maxlength="20000">
<button type="submit">Answer</button></form>`
            }</li>`,
        )}</ul>
</section>`;
  const moreHref = `/tasks/${id}?full=1`;
  const error = task?.error;
  return html`<div id="task-summary" hx-get="/tasks/${id}/summary" hx-trigger="sse:task-state" hx-select="#task-summary > *" hx-swap="innerHTML" hx-sync="this:queue last" hx-disinherit="*">
<table class="kv">
<caption class="visually-hidden">Task fields</caption>
<tbody>
${row('State', stateWithOutcome(record.state, record.task?.result))}
${row('Type', task ? html`<code>${task.type}</code>` : (record.name?.type ?? ''))}
${row('Item', itemCell(input.item))}
${row('Id', html`<code>${id}</code>`)}
${row('Integration', task?.integration)}
${row('Source', task?.source)}
${row('Priority', task?.priority)}
${row('Created', task ? timeTag(task.createdAt) : undefined)}
${row('Ready', task ? timeTag(task.readyAt) : undefined)}
${row('Started', task?.startedAt ? timeTag(task.startedAt) : active ? 'running now (the file records the start when the attempt ends)' : undefined)}
${row('Finished', task?.finishedAt ? timeTag(task.finishedAt) : undefined)}
${row('Attempts', task ? (active ? `${task.attempts + 1} of ${task.maxAttempts} (this one running)` : `${task.attempts} of ${task.maxAttempts}`) : undefined)}
${row('Worker', active ? activeWorker(record.location) : task?.worker?.id)}
${row('File', html`<code>${record.location}</code>`)}
</tbody>
</table>
${record.problem ? html`<p class="notice bad">This file cannot be read as a task: ${paths.scrub(record.problem)}</p>` : ''}
${buttons.length > 0 ? html`<div class="actions task-actions">${buttons}</div>` : ''}
${steering}
${clarificationSection}
${
  task
    ? html`<section aria-labelledby="payload-heading"><h2 id="payload-heading">Payload</h2>${renderJson(task.payload, { full: input.full, moreHref })}</section>
${task.result === undefined ? '' : html`<section aria-labelledby="result-heading"><h2 id="result-heading">Result</h2>${renderJson(task.result, { full: input.full, moreHref })}</section>`}
${
  error
    ? html`<section aria-labelledby="error-heading"><h2 id="error-heading">Error</h2>
<p><strong>${error.type}</strong>: ${paths.scrub(error.message)}</p>
${error.stack ? html`<details><summary>Stack</summary><pre>${paths.scrub(error.stack)}</pre></details>` : ''}</section>`
    : ''
}
${
  task.history.length === 0
    ? ''
    : html`<section aria-labelledby="history-heading"><h2 id="history-heading">Earlier attempts</h2><div class="table-wrap"><table>
<thead><tr><th scope="col">Attempt</th><th scope="col">Started</th><th scope="col">Finished</th><th scope="col" class="hide-narrow">Worker</th><th scope="col">Error</th></tr></thead>
<tbody>${task.history.map(
        (attempt) =>
          html`<tr><th scope="row">${attempt.attempt}</th><td>${timeTag(attempt.startedAt)}</td><td>${timeTag(attempt.finishedAt)}</td><td class="hide-narrow">${attempt.worker ?? ''}</td><td><strong>${attempt.error.type}</strong>: ${paths.scrub(attempt.error.message)}</td></tr>`,
      )}</tbody></table></div></section>`
}`
    : ''
}
</div>`;
}

async function loadTask(context: DashboardContext, id: string) {
  const record = await context.queue().get(id);
  if (!record) throw new AssistantError('NOT_FOUND', `no task with id ${id}`);
  const { events, offset } = await readTaskEvents(context.controlRoot, id);
  return { record, events, offset };
}

async function sendTaskPage(
  request: FastifyRequest,
  reply: FastifyReply,
  context: DashboardContext,
  extra: { notice?: { text: string; tone: 'ok' | 'warn' | 'bad' }; answer?: SafeHtml } = {},
): Promise<FastifyReply> {
  const id = taskIdOf(request);
  const { record, events, offset } = await loadTask(context, id);
  const item = await itemOf(context, record);
  const full = queryField(request, 'full') === '1';
  const running = record.state === 'pending' || record.state === 'active';
  const shown = events.slice(-shownEventLimit);
  const notice = extra.notice ?? noticeText(request);
  const tree = await readAgentTree({ root: agentsRoot(context.config.paths.dataDir), taskId: id }).catch(() => []);
  const treeSection =
    tree.length === 0
      ? ''
      : html`<section aria-labelledby="agents-heading">
<h2 id="agents-heading">Sub-agents</h2>
<p class="muted">The agents this task spawned, and theirs: each its own task. Their steps are also in this task's steps below, tagged with their lineage.</p>
${renderAgentTree(tree)}
</section>`;
  const eventsSection =
    events.length === 0 && !running
      ? ''
      : html`<section aria-labelledby="events-heading">
<h2 id="events-heading">Agent steps</h2>
${events.length > shown.length ? html`<p class="muted">The newest ${shown.length} of ${events.length} events; <code>assistant task watch ${id}</code> prints them all.</p>` : ''}
<ul class="log task-events" id="task-events"${running ? html` sse-swap="task-events" hx-swap="beforeend"` : ''}>${shown.map((event) => renderEvent(event))}</ul>
${events.length === 0 ? html`<p class="muted">No agent events yet.</p>` : ''}
</section>`;
  return sendPage(reply, {
    request,
    title: `Task ${record.task?.type ?? record.name?.type ?? id}${item?.subject?.subject ? `: ${item.subject.subject}` : ''}`,
    section: 'tasks',
    body: html`<p><a href="/tasks">← All tasks</a></p>
${notice ? html`<p class="notice ${notice.tone}" role="status">${notice.text}</p>` : ''}
${extra.answer ?? ''}
${renderSummary(request, context, { id, record, events, full, item })}
${treeSection}
${eventsSection}`,
    ...(running ? { live: `/live${queryString({ topics: 'queue', task: `${id}@${offset}` })}` } : {}),
  });
}

/** The steering request a form post carries; BAD_REQUEST for an unknown action. */
function steerInput(request: FastifyRequest): SteerInput {
  const action = formField(request, 'action');
  if (!action || !(steeringActions as readonly string[]).includes(action)) {
    throw new AssistantError('BAD_REQUEST', `action must be one of ${steeringActions.join(', ')}`);
  }
  const field = (name: string) => {
    const value = formField(request, name)?.trim();
    return value === undefined || value === '' ? undefined : value;
  };
  const message = field('message');
  const reason = field('reason');
  const clarification = field('clarification_id');
  if ((action === 'interject' || action === 'ask' || action === 'answer') && message === undefined) {
    throw new AssistantError('BAD_REQUEST', `${action} needs a message`);
  }
  if (message !== undefined && message.length > 20_000) {
    throw new AssistantError('BAD_REQUEST', 'the message is at most 20,000 characters');
  }
  if (reason !== undefined && reason.length > 2_000) {
    throw new AssistantError('BAD_REQUEST', 'the reason is at most 2,000 characters');
  }
  return {
    action: action as SteeringAction,
    ...(message === undefined || action === 'pause' || action === 'resume' || action === 'stop' ? {} : { message }),
    ...(action === 'stop' && reason !== undefined ? { reason } : {}),
    ...(action === 'answer' && clarification !== undefined ? { clarification_id: clarification } : {}),
  };
}

function renderAnswer(question: string, outcome: Awaited<ReturnType<typeof steerTask>>): SafeHtml {
  if (outcome.status === 'applied') {
    return html`<div class="card ask-answer"><p class="muted">You asked: ${question}</p><p>${outcome.answer ?? ''}</p></div>`;
  }
  if (outcome.status === 'queued') {
    return html`<p class="notice warn">No answer yet: the task answers when it runs.</p>`;
  }
  return html`<p class="notice bad">The question was refused: ${outcome.message ?? 'no reason given'}</p>`;
}

/** A task's page (`/tasks/:id`) with its actions (retry, reroute, steer) and the live `task` topic. */
export function registerTaskPage(app: AssistantServer, context: DashboardContext): void {
  registerTaskTopic(context.live, { queue: context.queue, controlRoot: context.controlRoot });

  dashboardRoute(app, {
    method: 'GET',
    url: '/tasks/:id',
    handler: (request, reply) => sendTaskPage(request, reply, context),
  });

  dashboardRoute(app, {
    method: 'GET',
    url: '/tasks/:id/summary',
    handler: async (request, reply) => {
      const id = taskIdOf(request);
      if (!wantsFragment(request)) return reply.redirect(`/tasks/${id}`, 303);
      const { record, events } = await loadTask(context, id);
      const item = await itemOf(context, record);
      return sendFragment(reply, renderSummary(request, context, { id, record, events, full: false, item }));
    },
  });

  dashboardRoute(app, {
    method: 'POST',
    url: '/tasks/:id/retry',
    handler: async (request, reply) => {
      const id = taskIdOf(request);
      await context.queue().retry(id);
      return redirectAfterPost(request, reply, `/tasks/${id}?notice=retried`);
    },
  });

  dashboardRoute(app, {
    method: 'POST',
    url: '/tasks/:id/reroute',
    handler: async (request, reply) => {
      const id = taskIdOf(request);
      // The same code path as `POST /api/tasks/:id/reroute` and `assistant task reroute`.
      const routed = await rerouteTask({
        id,
        queue: context.queue(),
        notes: context.notes,
        humanLog: context.humanLog,
        ...(context.registry ? { registry: context.registry } : {}),
      });
      return redirectAfterPost(
        request,
        reply,
        `/tasks/${id}${queryString({ notice: 'rerouted', notes: routed.notes.length, enqueued: routed.enqueued.length })}`,
      );
    },
  });

  dashboardRoute(app, {
    method: 'POST',
    url: '/tasks/:id/steer',
    handler: async (request, reply) => {
      const id = taskIdOf(request);
      const body = steerInput(request);
      // The same logic as `POST /api/tasks/:id/steer`: write the request, wait for the worker to apply it.
      const outcome = await steerTask({
        queue: context.queue(),
        controlRoot: context.controlRoot,
        id,
        body,
        source: 'dashboard',
      });
      if (body.action === 'ask') {
        const answer = renderAnswer(body.message ?? '', outcome);
        if (wantsFragment(request)) return sendFragment(reply, answer);
        return sendTaskPage(request, reply, context, { answer });
      }
      if (outcome.status === 'refused' && !wantsFragment(request)) {
        return sendTaskPage(request, reply, context, {
          notice: { text: `${body.action} was refused: ${outcome.message ?? 'no reason given'}`, tone: 'bad' },
        });
      }
      return redirectAfterPost(request, reply, `/tasks/${id}?notice=${body.action}-${outcome.status}`);
    },
  });
}

/** A task's sub-agents as nested lists: persona, state or how it ended, the task it was given, a link to its task. */
function renderAgentTree(nodes: readonly AgentTreeNode[]): SafeHtml {
  return html`<ul class="agent-tree">${nodes.map(
    (node) => html`<li data-agent="${node.id}"><strong>${node.persona}</strong> ${
      node.taskId === undefined
        ? html`<span class="muted">(starting)</span>`
        : html`<a href="/tasks/${node.taskId}">${node.taskId}</a>`
    } · ${node.result === undefined ? html`<span class="badge">running</span>` : html`<span class="badge">${node.result.status}</span>`}
<div class="muted">${node.task.length > 200 ? `${node.task.slice(0, 200)}…` : node.task}</div>${node.children.length > 0 ? renderAgentTree(node.children) : ''}</li>`,
  )}</ul>`;
}
