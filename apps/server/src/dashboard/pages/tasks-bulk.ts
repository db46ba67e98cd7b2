import { AssistantError } from '@assistant/errors';
import { type BulkTaskAction, bulkTaskActions, runBulkTaskAction, taskIdPattern } from '@assistant/queue';
import type { FastifyRequest } from 'fastify';
import type { AssistantServer } from '../../server-type.ts';
import type { DashboardContext } from '../dashboard-context.ts';
import { dashboardRoute, formField } from '../dashboard-route.ts';
import { html, type SafeHtml } from '../html.ts';
import { csrfField, sendFragment, wantsFragment } from '../layout.ts';

/** The page's element the answer of a bulk action goes to: outside the results, which refresh themselves. */
export const bulkNoticeId = 'bulk-notice';
/** A page shows at most 50 rows; a hand-made post is refused beyond this. */
const bulkIdsLimit = 1_000;

/**
 * The Tasks page's bulk buttons: retry or delete the failed tasks the page shows (with its filters), each sent by id, so
 * the post acts on exactly the rows on screen. They sit in the results and refresh with them, so the ids are always
 * those of the rows shown. Delete asks first (`hx-confirm`).
 */
export function renderBulkTaskForms(
  request: FastifyRequest,
  options: { query: string; failedIds: string[] },
): SafeHtml {
  const count = options.failedIds.length;
  if (count === 0) return html``;
  const what = `${count} failed task${count === 1 ? '' : 's'} shown`;
  const form = (action: BulkTaskAction, label: string, extra: SafeHtml) =>
    html`<form method="post" action="/tasks/bulk${options.query}" hx-post="/tasks/bulk${options.query}" hx-target="#${bulkNoticeId}" hx-swap="innerHTML" hx-disabled-elt="find button"${extra}>${csrfField(request)}<input type="hidden" name="action" value="${action}"><input type="hidden" name="ids" value="${options.failedIds.join(' ')}"><button type="submit"${action === 'delete' ? html` class="secondary"` : ''}>${label}</button></form>`;
  return html`<div class="toolbar bulk" role="group" aria-label="Bulk actions on the failed tasks shown"><span>${what}:</span>
${form('retry', `Retry the ${what}`, html``)}
${form('delete', `Delete the ${what}`, html` hx-confirm="Delete the ${what} for good?"`)}
</div>`;
}

/** What a bulk post asks for, or a BAD_REQUEST naming what was received. */
function parseBulkTaskForm(field: (name: string) => string | undefined): {
  action: BulkTaskAction;
  ids: string[];
} {
  const action = field('action') ?? '';
  if (!(bulkTaskActions as readonly string[]).includes(action)) {
    throw new AssistantError('BAD_REQUEST', `action must be one of ${bulkTaskActions.join(', ')}, got \`${action}\``);
  }
  const ids = (field('ids') ?? '').split(/\s+/).filter((id) => id !== '');
  if (ids.length === 0) throw new AssistantError('BAD_REQUEST', 'ids lists no task: nothing to do');
  if (ids.length > bulkIdsLimit) {
    throw new AssistantError('BAD_REQUEST', `ids lists ${ids.length} tasks; at most ${bulkIdsLimit} at once`);
  }
  const bad = ids.find((id) => !taskIdPattern.test(id));
  if (bad !== undefined) throw new AssistantError('BAD_REQUEST', `\`${bad.slice(0, 40)}\` in ids is not a task id`);
  return { action: action as BulkTaskAction, ids };
}

/**
 * `POST /tasks/bulk`: the bulk buttons' post, done as `POST /api/tasks/bulk` does it. htmx gets a notice of what was
 * done and what was refused and why (the results refresh on their own as the queue changes); a plain post goes back
 * to the page with the same filters.
 */
export function registerTasksBulk(app: AssistantServer, context: DashboardContext): void {
  dashboardRoute(app, {
    method: 'POST',
    url: '/tasks/bulk',
    handler: async (request, reply) => {
      const { action, ids } = parseBulkTaskForm((name) => formField(request, name));
      const outcome = await runBulkTaskAction({ queue: context.queue(), action, ids });
      if (!wantsFragment(request)) {
        const search = request.url.includes('?') ? request.url.slice(request.url.indexOf('?')) : '';
        return reply.redirect(`/tasks${search}`, 303);
      }
      const past = action === 'retry' ? 'Retried' : 'Deleted';
      const done = outcome.done.length;
      return sendFragment(
        reply,
        html`<div class="notice ${outcome.refused.length === 0 ? 'ok' : 'warn'}" role="status"><p>${past} ${done} task${done === 1 ? '' : 's'}${action === 'retry' ? ': pending again' : ''}.${outcome.refused.length > 0 ? ` ${outcome.refused.length} left as they were:` : ''}</p>${
          outcome.refused.length > 0
            ? html`<ul>${outcome.refused.map((refused) => html`<li><a href="/tasks/${refused.id}">${refused.id}</a>: ${context.paths.scrub(refused.reason)}</li>`)}</ul>`
            : ''
        }</div>`,
      );
    },
  });
}
