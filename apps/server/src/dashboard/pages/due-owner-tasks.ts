import { type OwnerTask, tasksDue } from '@assistant/memory';
import type { FastifyRequest } from 'fastify';

import type { DashboardContext } from '../dashboard-context.ts';
import { html, type SafeHtml } from '../html.ts';
import { csrfField } from '../layout.ts';

/** Listed in "Needs you"; the My tasks page has all of them. */
const listed = 5;

export interface DueOwnerTasks {
  tasks: OwnerTask[];
  nowMs: number;
  /** Why the tasks could not be read, if they could not (shown rather than hiding a due task silently). */
  failure?: string;
}

/**
 * The owner's open tasks (`tasks/*.md`) due by the end of today in `owner.timezone`, overdue ones first. A tasks
 * folder that cannot be read leaves the rest of "Needs you" standing and says so.
 */
export async function dueOwnerTasks(context: DashboardContext, nowMs = Date.now()): Promise<DueOwnerTasks> {
  try {
    const { tasks } = await context.memory.stores.tasks.list({ status: 'open' });
    return { tasks: tasksDue({ tasks, due: 'today', nowMs, timeZone: context.config.owner.timeZone }), nowMs };
  } catch (error) {
    return { tasks: [], nowMs, failure: error instanceof Error ? error.message : String(error) };
  }
}

/** The "Needs you" group of due tasks, each with a Done button, linked to the My tasks page. */
export function renderDueTasks(request: FastifyRequest, context: DashboardContext, due: DueOwnerTasks): SafeHtml {
  const count = due.tasks.length;
  const today = (task: OwnerTask) =>
    tasksDue({ tasks: [task], due: 'overdue', nowMs: due.nowMs, timeZone: context.config.owner.timeZone }).length === 0;
  return html`<section aria-labelledby="needs-owner-tasks"><h3 id="needs-owner-tasks">${count} task${count === 1 ? '' : 's'} of yours due</h3>
${due.failure === undefined ? '' : html`<p class="notice bad">Your tasks could not be read: ${due.failure}</p>`}
<ul class="plain">${due.tasks
    .slice(0, listed)
    .map(
      (task) =>
        html`<li><form method="post" action="/my-tasks/${encodeURIComponent(task.id)}/done">${csrfField(request)}${today(task) ? html`<strong>today</strong>` : html`<strong class="bad">overdue</strong>`} <time datetime="${task.due ?? ''}">${task.due ?? ''}</time> ${task.title} <button type="submit" class="secondary">Done</button></form></li>`,
    )}</ul>
<p><a href="/my-tasks">All your tasks</a></p></section>`;
}

/** Whether there is anything for "Needs you" to show: due tasks, or a failure to read them. */
export function hasDueTasks(due: DueOwnerTasks): boolean {
  return due.tasks.length > 0 || due.failure !== undefined;
}
