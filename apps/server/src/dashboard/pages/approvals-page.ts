import {
  type ApprovalRequest,
  type ApprovalsIndex,
  approvalRendering,
  decideApproval,
  describeAction,
  describeApproval,
  readApproval,
} from '@assistant/actions';
import { AssistantError } from '@assistant/errors';
import type { FastifyRequest } from 'fastify';
import type { AssistantServer } from '../../server-type.ts';
import type { DashboardContext } from '../dashboard-context.ts';
import { dashboardRoute, formField, queryField, redirectAfterPost } from '../dashboard-route.ts';
import { html, queryString, type SafeHtml } from '../html.ts';
import { type ItemSubject, itemSubjects } from '../item-subjects.ts';
import { csrfField, sendFragment, sendPage, timeTag, wantsFragment } from '../layout.ts';
import { registerApprovalsBulk, renderApprovalPick, renderBulkApprovalsForm } from './approvals-bulk.ts';

const statuses = ['pending', 'approved', 'rejected', 'expired', 'all'] as const;
type StatusFilter = (typeof statuses)[number];
// A request is about 2 KB of HTML (what, which item, why, the buttons): 20 keep a page well under 100 KB.
const pageSize = 20;
const idPattern = /^ap-[0-9a-f]{12}$/;

/** `/notes/<path>` for a note path, each segment encoded. */
function noteHref(notePath: string): string {
  return `/notes/${notePath.split('/').map(encodeURIComponent).join('/')}`;
}

interface ListState {
  status: StatusFilter;
  page: number;
  /** A request just decided here, to say so above the list. */
  decided?: string | undefined;
}

function listState(request: FastifyRequest): ListState {
  const status = queryField(request, 'status') ?? 'pending';
  if (!(statuses as readonly string[]).includes(status)) {
    throw new AssistantError('BAD_REQUEST', `unknown status \`${status}\`: one of ${statuses.join(', ')}`);
  }
  const pageText = queryField(request, 'page') ?? '1';
  const page = /^[1-9][0-9]{0,5}$/.test(pageText) ? Number(pageText) : 1;
  const decided = queryField(request, 'decided');
  return { status: status as StatusFilter, page, decided: decided && idPattern.test(decided) ? decided : undefined };
}

function listUrl(state: ListState, extra: { decided?: string } = {}): string {
  return `/approvals${queryString({
    status: state.status === 'pending' ? undefined : state.status,
    page: state.page === 1 ? undefined : state.page,
    decided: extra.decided,
  })}`;
}

/**
 * The Approvals page: each request with what it would do (the actions, with their targets) to which item (a link to
 * its note) and why (the rule, its provenance, the reason it matched, the item's classifications), and Approve and
 * Reject buttons: one form post each, decided exactly as `assistant approve` does (`decideApproval`, by `dashboard`).
 * The list refreshes when the approvals folder changes (`sse:approvals`).
 */
export function registerApprovalsPage(app: AssistantServer, context: DashboardContext): { warm: () => void } {
  const index = context.approvals;
  dashboardRoute(app, {
    method: 'GET',
    url: '/approvals',
    handler: async (request, reply) => {
      const state = listState(request);
      const list = await renderList(context, index, request, state);
      if (wantsFragment(request)) return sendFragment(reply, list);
      const filters = html`<nav aria-label="Approval status"><ul class="filters">${statuses.map(
        (status) =>
          html`<li><a href="${listUrl({ status, page: 1 })}"${status === state.status ? html` aria-current="page"` : ''}>${status}</a></li>`,
      )}</ul></nav>`;
      return sendPage(reply, {
        request,
        title: 'Approvals',
        section: 'approvals',
        body: html`<p class="muted">Actions that wait for a person. Approving enqueues them at once (each is still taken only once per item); rejecting drops them. The same as <code>assistant approve ID</code> and <code>assistant reject ID</code>.</p>
${filters}
${renderBulkApprovalsForm(request)}
${list}`,
        live: '/live?topics=approvals',
      });
    },
  });

  // One request on its own page: where every surface that cannot show a request in full links to.
  dashboardRoute(app, {
    method: 'GET',
    url: '/approvals/:id',
    handler: async (request, reply) => {
      const { id } = request.params as { id: string };
      if (!idPattern.test(id)) throw new AssistantError('BAD_REQUEST', `\`${id}\` is not an approval id`);
      const found = await readApproval(context.notes, id);
      if (!found) throw new AssistantError('NOT_FOUND', `no approval request ${id}`);
      const [classifications] = await Promise.all([itemClassifications(context, found.item)]);
      return sendPage(reply, {
        request,
        title: `Approval ${id}`,
        section: 'approvals',
        body: html`<p><a href="/approvals">All approvals</a></p>
<div id="approvals-list" hx-get="/approvals/${id}" hx-trigger="live-refresh" data-live-events="approvals" hx-select="#approvals-list" hx-swap="outerHTML">
<ul class="approvals plain">${renderApproval(request, found, classifications, Date.now(), { status: 'all', page: 1 }, (await itemSubjects(context).lookup([found.item])).get(found.item))}</ul>
</div>`,
        live: '/live?topics=approvals',
      });
    },
  });

  // A decision syncs with the list's live refreshes (hx-sync on the list): a refresh swapped in while the post is on its
  // way would leave the post's answer, the notice of the decision, to land in a list no longer on the page.
  // The form other pages show inline (a chat's approval prompt): `decision` in the body. A plain post goes back to the
  // page the button was on (its same-origin Referer), else to the list; htmx gets 204, and the page's live parts show
  // the decision (`sse:approvals`).
  dashboardRoute(app, {
    method: 'POST',
    url: '/approvals/:id',
    handler: async (request, reply) => {
      const { id } = request.params as { id: string };
      if (!idPattern.test(id)) throw new AssistantError('BAD_REQUEST', `\`${id}\` is not an approval id`);
      const decision = formField(request, 'decision');
      if (decision !== 'approve' && decision !== 'reject') {
        throw new AssistantError('BAD_REQUEST', `decision must be approve or reject, got \`${decision ?? ''}\``);
      }
      await decideApproval({
        notes: context.notes,
        queue: context.queue(),
        humanLog: context.humanLog,
        id,
        decision,
        by: 'dashboard',
        inShadow: (name) => context.config.integrations.some((entry) => entry.name === name && entry.shadow),
      });
      if (request.headers['hx-request'] === 'true') return reply.code(204).send();
      return reply.redirect(sameOriginPath(request) ?? listUrl({ status: 'pending', page: 1 }, { decided: id }), 303);
    },
  });

  registerApprovalsBulk(app, context);
  for (const decision of ['approve', 'reject'] as const) {
    dashboardRoute(app, {
      method: 'POST',
      url: `/approvals/:id/${decision}`,
      handler: async (request, reply) => {
        const { id } = request.params as { id: string };
        if (!idPattern.test(id)) throw new AssistantError('BAD_REQUEST', `\`${id}\` is not an approval id`);
        await decideApproval({
          notes: context.notes,
          queue: context.queue(),
          humanLog: context.humanLog,
          id,
          decision,
          by: 'dashboard',
          inShadow: (name) => context.config.integrations.some((entry) => entry.name === name && entry.shadow),
        });
        const state = { ...listState(request), decided: id };
        // htmx swaps the list in place, with the decision above it; a plain form post gets the page again (303).
        if (wantsFragment(request)) return sendFragment(reply, await renderList(context, index, request, state));
        return redirectAfterPost(request, reply, listUrl(state, { decided: id }));
      },
    });
  }
  return {
    // Reads every request note once, in the background, so the first view of the page is not the one that waits.
    warm: () => {
      index.list().catch(() => {});
    },
  };
}

async function renderList(
  context: DashboardContext,
  index: ApprovalsIndex,
  request: FastifyRequest,
  state: ListState,
): Promise<SafeHtml> {
  const { requests: all, broken } = await index.list(state.status === 'all' ? undefined : state.status);
  const pages = Math.max(1, Math.ceil(all.length / pageSize));
  const page = Math.min(state.page, pages);
  const shown = all.slice((page - 1) * pageSize, page * pageSize);
  const classifications = await Promise.all(shown.map((approval) => itemClassifications(context, approval.item)));
  // The item by its subject and sender (a mail's, a pull request's title and author), beside its note's path.
  const subjects = await itemSubjects(context).lookup(shown.map((approval) => approval.item));
  const nowMs = Date.now();
  const decided = state.decided ? await decidedNotice(context, state.decided) : '';
  // The live refresh keeps the notice of a decision just made (a refresh follows every decision: the folder changed).
  const self = listUrl({ ...state, page }, state.decided ? { decided: state.decided } : {});
  const pager =
    pages > 1
      ? html`<nav class="pager" aria-label="Pages">${page > 1 ? html`<a href="${listUrl({ ...state, page: page - 1 })}">Newer</a>` : ''}<span>Page ${page} of ${pages}</span>${page < pages ? html`<a href="${listUrl({ ...state, page: page + 1 })}">Older</a>` : ''}</nav>`
      : '';
  return html`<div id="approvals-list" hx-get="${self}" hx-trigger="live-refresh" data-live-events="approvals" hx-swap="outerHTML">
${decided}
${
  broken.length > 0
    ? html`<div class="notice warn"><p>Request notes that cannot be read (fix them by hand):</p><ul>${broken.map((message) => html`<li>${message}</li>`)}</ul></div>`
    : ''
}
${
  shown.length === 0
    ? html`<p>No ${state.status === 'all' ? '' : `${state.status} `}approval requests.</p>`
    : html`<p class="muted">${all.length} ${state.status === 'all' ? '' : `${state.status} `}request${all.length === 1 ? '' : 's'}, newest first.</p>
<ul class="approvals plain">${shown.map((approval, index) => renderApproval(request, approval, classifications[index], nowMs, state, subjects.get(approval.item), true))}</ul>`
}
${pager}
</div>`;
}

async function decidedNotice(context: DashboardContext, id: string): Promise<SafeHtml | string> {
  const request = await readApproval(context.notes, id).catch(() => undefined);
  if (!request) return '';
  const what = describeApproval(request);
  const tasks = request.tasks ?? [];
  return html`<p class="notice ok" role="status">${request.id} ${request.status}${request.decided_by ? ` by ${request.decided_by}` : ''}: ${
    request.status === 'approved'
      ? request.kind === 'tool_call'
        ? html`the waiting agent loop runs ${what}`
        : tasks.length > 0
          ? html`${what} enqueued (${tasks.map((task, index) => html`${index > 0 ? ', ' : ''}<a href="/tasks/${encodeURIComponent(task)}">task ${task}</a>`)})`
          : html`every action was taken already`
      : html`${what} will not be done`
  }.</p>`;
}

/** The item note's classifications (the LLM's answers and confidences), or why there are none to show. */
async function itemClassifications(
  context: DashboardContext,
  item: string,
): Promise<Record<string, unknown> | { missing: string }> {
  try {
    const note = await context.notes.read(item);
    if (!note) return { missing: 'the item note is gone' };
    const value = (note.data as Record<string, unknown>).classifications;
    if (value === null || typeof value !== 'object' || Array.isArray(value)) return {};
    return value as Record<string, unknown>;
  } catch (error) {
    return { missing: `the item note cannot be read: ${error instanceof Error ? error.message : String(error)}` };
  }
}

function shown(value: unknown): string {
  if (typeof value === 'number') return Number.isInteger(value) ? String(value) : value.toFixed(2);
  return typeof value === 'string' ? value : (JSON.stringify(value) ?? String(value));
}

/**
 * What became of what the request allowed, beside its status: an approval says a person said yes, not that it
 * happened. A failure names its code and reason.
 */
function outcomeBadge(approval: ApprovalRequest): SafeHtml | string {
  if (approval.outcome === undefined) return '';
  const when = approval.outcome_at ? html` <span class="muted">at ${timeTag(approval.outcome_at)}</span>` : '';
  if (approval.outcome === 'done') return html` <span class="badge done">done</span>${when}`;
  return html` <span class="badge failed">failed</span>${when}${approval.outcome_reason ? html` <span class="outcome-reason">${approval.outcome_reason}</span>` : ''}${approval.outcome_task ? html` <a href="/tasks/${encodeURIComponent(approval.outcome_task)}">task</a>` : ''}`;
}

function renderApproval(
  request: FastifyRequest,
  approval: ApprovalRequest,
  classifications: Record<string, unknown> | { missing: string } | undefined,
  nowMs: number,
  state: ListState,
  subject?: ItemSubject,
  /** In the list: a checkbox for the bulk form. */
  selectable = false,
): SafeHtml {
  const what = describeApproval(approval);
  const lapsed = approval.status === 'pending' && Date.parse(approval.expires_at) <= nowMs;
  const headingId = `${approval.id}-title`;
  const classified =
    classifications === undefined
      ? ''
      : 'missing' in classifications && typeof classifications.missing === 'string'
        ? html`<span class="muted">${classifications.missing}</span>`
        : Object.keys(classifications).length === 0
          ? html`<span class="muted">none on the item</span>`
          : html`<ul class="plain">${Object.entries(classifications).map(
              ([name, value]) => html`<li><code>${name}</code>: ${shown(value)}</li>`,
            )}</ul>`;
  const status = lapsed ? 'expired' : approval.status;
  const back = listUrl(state);
  const buttons =
    approval.status === 'pending' && !lapsed
      ? html`<div class="actions">${selectable ? renderApprovalPick(approval, `${what} for ${approval.title}`) : ''}${(
          ['approve', 'reject'] as const
        ).map(
          (decision) =>
            html`<form method="post" action="/approvals/${approval.id}/${decision}${queryString({ status: state.status === 'pending' ? undefined : state.status, page: state.page === 1 ? undefined : state.page })}" hx-post="/approvals/${approval.id}/${decision}${queryString({ status: state.status === 'pending' ? undefined : state.status, page: state.page === 1 ? undefined : state.page })}" hx-target="#approvals-list" hx-swap="outerHTML" hx-sync="closest #approvals-list:replace" hx-disabled-elt="find button">${csrfField(request)}<button type="submit"${decision === 'reject' ? html` class="secondary"` : ''}>${decision === 'approve' ? 'Approve' : 'Reject'}<span class="visually-hidden"> ${what} for ${approval.title}</span></button></form>`,
        )}</div>`
      : '';
  return html`<li><article class="approval card" id="${approval.id}" aria-labelledby="${headingId}">
<h2 id="${headingId}">${what} <span class="muted">for</span> ${approval.title}</h2>
<p><span class="badge ${status}">${status}</span>${outcomeBadge(approval)}${approval.shadow ? html` <span class="badge">shadow mode</span> <span class="muted">what ${approval.instance}'s rules would have done; nothing was done (<code>assistant shadow report</code>)</span>` : ''}${lapsed ? html` <span class="muted">(past its expiry; nobody can approve it now)</span>` : ''}${approval.decided_at ? html` <span class="muted">by ${approval.decided_by ?? 'someone'} at ${timeTag(approval.decided_at)}</span>` : ''}</p>
<table class="kv">
<tbody>
<tr><th scope="row">Item</th><td>${subject?.subject ? html`${subject.where ? html`<span class="muted">${subject.where}</span> ` : ''}“${subject.subject}”${subject.sender ? html` <span class="muted">from</span> <span class="item-sender">${subject.sender}</span>` : ''}<br>` : ''}<a href="${noteHref(approval.item)}">${approval.item}</a> <span class="muted">(${approval.instance}/${approval.platform})</span></td></tr>
${
  approval.tool_call
    ? html`<tr><th scope="row">Would call</th><td><code>${approval.tool_call.tool}</code> <span class="badge">${approval.tool_call.tier.replace('_', ' ')}</span></td></tr>
<tr><th scope="row">Loop</th><td>${approval.tool_call.loop} <span class="muted">of</span> <a href="/tasks/${encodeURIComponent(approval.tool_call.task)}">task ${approval.tool_call.task}</a>${approval.tool_ran_at ? html` <span class="muted">(ran at ${timeTag(approval.tool_ran_at)})</span>` : ''}</td></tr>`
    : html`<tr><th scope="row">Would do</th><td><ul class="plain">${(
        approval.hook_firing?.tasks.map((task) => ({
          text: task.summary,
          tier: task.tier,
          yolo: task.yolo === true,
        })) ??
          approval.actions.map((action) => ({ text: describeAction(action), tier: action.tier, yolo: action.yolo }))
      ).map(
        (action) =>
          html`<li>${action.text} <span class="badge">${action.tier.replace('_', ' ')}</span>${action.yolo ? html` <span class="badge">!yolo</span>` : ''}</li>`,
      )}</ul></td></tr>`
}
${renderingRow(approval)}
<tr><th scope="row">Rule</th><td>${approval.kind === 'tool_call' ? 'the tool gate' : approval.kind === 'hook' ? html`hook “${approval.rule}”` : approval.provenance === 'manual' ? 'asked for by hand' : html`“${approval.rule}”${approval.rule_index === undefined ? '' : html` <span class="muted">(automation ${approval.rule_index + 1})</span>`}`}</td></tr>
<tr><th scope="row">Provenance</th><td>${approval.provenance}</td></tr>
<tr><th scope="row">Why</th><td>${approval.reason}</td></tr>
<tr><th scope="row">Classification</th><td>${classified}</td></tr>
<tr><th scope="row">Created</th><td>${timeTag(approval.created_at)}</td></tr>
<tr><th scope="row">Expires</th><td>${timeTag(approval.expires_at)}</td></tr>
${approval.tasks && approval.tasks.length > 0 ? html`<tr><th scope="row">Tasks</th><td>${approval.tasks.map((task, index) => html`${index > 0 ? ', ' : ''}<a href="/tasks/${encodeURIComponent(task)}">${task}</a>`)}</td></tr>` : ''}
</tbody>
</table>
${buttons}
<p class="muted small"><a href="${noteHref(`approvals/${approval.id}.md`)}">The request note</a> · <a href="/approvals/${approval.id}">Link to this request</a> · <a href="${back}#${approval.id}">In the list</a></p>
</article></li>`;
}

/**
 * What the request will do, in full: every input, the whole text to be sent, all of a tool call's arguments. The
 * approval binds to it; nothing in it is cut. A request made before approvals were bound says it cannot be approved.
 */
function renderingRow(approval: ApprovalRequest): SafeHtml {
  const { rendering, bound } = approvalRendering(approval);
  return html`<tr><th scope="row">What will happen</th><td><pre class="approval-rendering">${rendering}</pre>${
    bound
      ? html`<span class="muted small">Approving binds to exactly this (${approval.digest ?? ''}): if what would run differs, it is refused.</span>`
      : html`<span class="notice warn">Made before approvals were bound to what they show: it cannot be approved. Reject it to be asked again.</span>`
  }</td></tr>`;
}

/** The path of the page a form was posted from, when the browser says and it is this server's; never elsewhere. */
function sameOriginPath(request: FastifyRequest): string | undefined {
  const referer = request.headers.referer;
  if (referer === undefined) return undefined;
  try {
    const url = new URL(referer);
    if (url.host !== request.headers.host) return undefined;
    return `${url.pathname}${url.search}`;
  } catch {
    return undefined;
  }
}
