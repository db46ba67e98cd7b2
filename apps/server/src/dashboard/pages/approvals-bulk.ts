import { decideApprovals, type ShownApproval } from '@assistant/actions';
import { AssistantError } from '@assistant/errors';
import type { FastifyRequest } from 'fastify';
import type { AssistantServer } from '../../server-type.ts';
import type { DashboardContext } from '../dashboard-context.ts';
import { dashboardRoute } from '../dashboard-route.ts';
import { html, type SafeHtml } from '../html.ts';
import { csrfField, sendFragment, wantsFragment } from '../layout.ts';

const formId = 'bulk-approvals';
const noticeId = 'approvals-bulk-notice';
/** A checkbox's name: the request's id after this prefix; its value, the digest the request was shown with. */
const pickPrefix = 'pick.';
const idPattern = /^ap-[0-9a-f]{12}$/;
/** A page shows 20 requests; a hand-made post is refused beyond this. */
const bulkLimit = 200;

/**
 * The bulk form: Approve selected and Reject selected, above the list. It stays out of the list, which refreshes itself,
 * and the list's checkboxes belong to it through their `form` attribute. A refresh unticks them (never ticks one).
 */
export function renderBulkApprovalsForm(request: FastifyRequest): SafeHtml {
  return html`<form id="${formId}" method="post" action="/approvals/bulk" hx-post="/approvals/bulk" hx-target="#${noticeId}" hx-swap="innerHTML" hx-disabled-elt="find button" class="toolbar bulk" aria-label="Decide the selected requests">${csrfField(request)}<span>Selected requests:</span> <button type="submit" name="decision" value="approve">Approve selected</button> <button type="submit" name="decision" value="reject" class="secondary">Reject selected</button></form>
<div id="${noticeId}"></div>`;
}

/**
 * A pending request's checkbox: it carries the digest of the rendering shown beside it, so approving in bulk binds to
 * what the owner saw (decision 0017); a request that differs by then is refused alone.
 */
export function renderApprovalPick(approval: { id: string; digest?: string | undefined }, label: string): SafeHtml {
  return html`<label class="pick"><input type="checkbox" form="${formId}" name="${pickPrefix}${approval.id}" value="${approval.digest ?? ''}"> Select<span class="visually-hidden"> ${label}</span></label>`;
}

/** The decision and the requests a bulk post names, each with the digest it was shown with; BAD_REQUEST otherwise. */
function parseBulkApprovalsForm(body: unknown): { decision: 'approve' | 'reject'; approvals: ShownApproval[] } {
  const fields = body !== null && typeof body === 'object' ? (body as Record<string, unknown>) : {};
  const decision = fields.decision;
  if (decision !== 'approve' && decision !== 'reject') {
    throw new AssistantError('BAD_REQUEST', `decision must be approve or reject, got \`${String(decision ?? '')}\``);
  }
  const approvals: ShownApproval[] = [];
  for (const [name, value] of Object.entries(fields)) {
    if (!name.startsWith(pickPrefix) || typeof value !== 'string') continue;
    const id = name.slice(pickPrefix.length);
    if (!idPattern.test(id)) throw new AssistantError('BAD_REQUEST', `\`${id.slice(0, 40)}\` is not an approval id`);
    approvals.push({ id, digest: value });
  }
  if (approvals.length === 0) throw new AssistantError('BAD_REQUEST', 'no request is selected: nothing to decide');
  if (approvals.length > bulkLimit) {
    throw new AssistantError('BAD_REQUEST', `${approvals.length} requests selected; at most ${bulkLimit} at once`);
  }
  return { decision, approvals };
}

/**
 * `POST /approvals/bulk`: decides the selected requests as `POST /api/approvals/bulk` does, each bound to the digest
 * it was shown with. htmx gets a notice of what was decided and of each refusal with its reason; the list refreshes
 * itself (the approvals folder changed). A plain post goes back to the list.
 */
export function registerApprovalsBulk(app: AssistantServer, context: DashboardContext): void {
  dashboardRoute(app, {
    method: 'POST',
    url: '/approvals/bulk',
    handler: async (request, reply) => {
      const { decision, approvals } = parseBulkApprovalsForm(request.body);
      const outcome = await decideApprovals({
        notes: context.notes,
        queue: context.queue(),
        humanLog: context.humanLog,
        decision,
        approvals,
        by: 'dashboard',
        inShadow: (name) => context.config.integrations.some((entry) => entry.name === name && entry.shadow),
      });
      if (!wantsFragment(request)) return reply.redirect('/approvals', 303);
      const past = decision === 'approve' ? 'Approved' : 'Rejected';
      const refused = outcome.refused;
      return sendFragment(
        reply,
        html`<div class="notice ${refused.length === 0 ? 'ok' : 'bad'}" role="status"><p>${past} ${outcome.decided.length} request${outcome.decided.length === 1 ? '' : 's'}${outcome.decided.length > 0 ? html` (${outcome.decided.map((decided, index) => html`${index > 0 ? ', ' : ''}<a href="/approvals/${decided.id}">${decided.id}</a>`)})` : ''}.${refused.length > 0 ? ` Refused ${refused.length}:` : ''}</p>${
          refused.length > 0
            ? html`<ul>${refused.map((item) => html`<li><a href="/approvals/${item.id}">${item.id}</a>: ${item.reason}</li>`)}</ul>`
            : ''
        }</div>`,
      );
    },
  });
}
