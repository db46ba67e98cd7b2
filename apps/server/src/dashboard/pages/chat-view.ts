import { type ApprovalRequest, approvalRendering, describeApproval } from '@assistant/actions';
import type { ChatEvent, ChatMessage, ConversationSummary } from '@assistant/chat';
import { html, type SafeHtml } from '../html.ts';
import { timeTag } from '../layout.ts';

/**
 * What the Chat pages show, as pure functions of the conversation, its events and the approvals it mentions: the
 * transcript, the turn being written (folded from the conversation's event log, pushed to the page over `/live`), and
 * approval requests with approve/reject buttons. Every text is escaped by `html`; line breaks are kept by CSS
 * (`white-space: pre-wrap`), so a reply's markdown reads as the model wrote it.
 */

/** The most messages one page shows; earlier ones are a link away. */
const messagesPerPage = 50;
/** Text of one message shown on the page; the rest is in the note. Keeps `/chat/:id` under 100 KB. */
const maxShownChars = 6_000;
/** Text of the reply being written, shown live (its end). */
const maxLiveChars = 12_000;

/** Approval ids as the action system writes them (`ap-` and 12 hex digits). */
const approvalIdPattern = /\bap-[0-9a-f]{12}\b/g;

/** The approval ids a text mentions, in order, once each. */
export function approvalIdsIn(text: string): string[] {
  return [...new Set(text.match(approvalIdPattern) ?? [])];
}

/** The approval ids the messages mention (text and tool steps), newest message first, at most `limit`. */
export function mentionedApprovals(messages: readonly ChatMessage[], limit = 30): string[] {
  const ids = new Set<string>();
  for (const message of [...messages].reverse()) {
    const text = [message.text, ...(message.steps ?? []).map((step) => step.summary)].join('\n');
    for (const id of approvalIdsIn(text)) {
      if (ids.size >= limit) return [...ids];
      ids.add(id);
    }
  }
  return [...ids];
}

/** An approval as the chat shows it: what we know of it, read from its note or from an `approval` event. */
export type ApprovalView =
  | { id: string; state: 'found'; approval: ApprovalRequest }
  | { id: string; state: 'announced'; title: string; summary: string; rendering?: string }
  | { id: string; state: 'missing' | 'broken'; problem?: string };

/**
 * An approval request inline: its title and reason, and while it is pending, Approve and Reject buttons that post
 * `decision` and `_csrf` to the Approvals page's action `POST /approvals/:id`. Markup pushed over `/live` has no
 * request to take the CSRF token from (`csrf` undefined): its form posts with htmx, which sends the token as the
 * `x-csrf-token` header (the page's `hx-headers`); pushed markup only exists where JavaScript runs.
 */
export function renderApproval(view: ApprovalView, csrf: SafeHtml | undefined): SafeHtml {
  const buttons = html`<form method="post" action="/approvals/${view.id}"${csrf ? '' : html` hx-post="/approvals/${view.id}"`} class="actions">${csrf ?? ''}
<button type="submit" name="decision" value="approve" aria-label="Approve ${view.id}">Approve</button>
<button type="submit" name="decision" value="reject" class="secondary" aria-label="Reject ${view.id}">Reject</button>
</form>`;
  if (view.state === 'announced') {
    // Pushed from the chat's event: what it will do as the event carries it, else where to read it in full.
    const what = view.rendering
      ? html`<details class="approval-rendering" open><summary>What will happen</summary><pre>${view.rendering}</pre></details>`
      : html`<p class="muted"><a href="/approvals/${view.id}">Open the request</a> to read what it will do in full.</p>`;
    return html`<div class="chat-approval" data-approval="${view.id}"><p><strong>Approval <a href="/approvals/${view.id}">${view.id}</a></strong>: ${view.title}${view.summary ? html` — ${view.summary}` : ''}</p>${what}${buttons}</div>`;
  }
  if (view.state !== 'found') {
    const why =
      view.state === 'missing' ? 'no such approval request (anymore)' : `cannot be read: ${view.problem ?? ''}`;
    return html`<div class="chat-approval" data-approval="${view.id}"><p><strong>Approval ${view.id}</strong>: <span class="muted">${why}</span></p></div>`;
  }
  const { approval } = view;
  const decided =
    approval.status === 'pending'
      ? buttons
      : html`<p class="muted">${approval.status}${approval.decided_by ? ` by ${approval.decided_by}` : ''}${approval.decided_at ? html` ${timeTag(approval.decided_at)}` : ''}</p>`;
  return html`<div class="chat-approval" data-approval="${view.id}">
<p><strong>Approval <a href="/approvals/${view.id}">${view.id}</a></strong> <span class="badge ${approval.status}">${approval.status}</span>: ${approval.kind === 'tool_call' ? `${describeApproval(approval)} for ` : ''}${approval.title}</p>
<p class="muted">${approval.reason}${approval.status === 'pending' ? html` · expires ${timeTag(approval.expires_at)}` : ''}</p>
<details class="approval-rendering"${approval.status === 'pending' ? html` open` : ''}><summary>What will happen, in full</summary><pre>${approvalRendering(approval).rendering}</pre></details>
${decided}
</div>`;
}

/** A message's text as the page shows it: at most `maxShownChars`, saying how much more the note holds. */
function shownText(text: string, limit = maxShownChars): SafeHtml {
  if (text.length <= limit) return html`${text}`;
  return html`${text.slice(0, limit)}<span class="muted"> … (${text.length - limit} more characters in the note)</span>`;
}

/** One message of the transcript, with the approvals it mentions inline. */
export function renderMessage(
  message: ChatMessage,
  approvals: ReadonlyMap<string, ApprovalView>,
  csrf: SafeHtml,
  /** The conversation a "Fork from here" form forks (absent: none, as in the notifications conversation). */
  forkOf?: string,
): SafeHtml {
  const who = message.role === 'user' ? 'You' : 'Assistant';
  const status =
    message.status === 'complete' || message.status === 'received' || message.status === 'answered'
      ? ''
      : html` · <span class="badge ${message.status === 'pending' ? 'pending' : 'bad'}">${message.status}</span>`;
  const steps = message.steps ?? [];
  const mentioned = approvalIdsIn([message.text, ...steps.map((step) => step.summary)].join('\n'))
    .map((id) => approvals.get(id))
    .filter((view): view is ApprovalView => view !== undefined);
  return html`<li class="message ${message.role}" id="message-${message.id}">
<p class="meta">${who} · ${timeTag(message.at)}${status}</p>
<div class="chat-text">${shownText(message.text)}</div>
${
  steps.length > 0
    ? html`<details class="chat-steps"><summary>${steps.length} tool step${steps.length === 1 ? '' : 's'}</summary><ul>${steps.map(
        (step) => html`<li><code>${step.tool}</code>: ${shownText(step.summary, 500)}</li>`,
      )}</ul></details>`
    : ''
}
${mentioned.map((view) => renderApproval(view, csrf))}
${
  // A message still waiting in the inbox is not in the transcript yet: nothing to fork from.
  forkOf !== undefined && message.status !== 'pending'
    ? html`<form method="post" action="/chat/${forkOf}/fork" class="chat-fork">${csrf}<input type="hidden" name="message" value="${message.id}"><button type="submit" class="secondary small" title="A new conversation with the messages up to this one; this conversation stays as it is">Fork from here</button></form>`
    : ''
}
</li>`;
}

/** Which slice of the transcript a page shows: the last `messagesPerPage` before `before` (default: the end). */
export function transcriptWindow(total: number, before: number | undefined): { start: number; end: number } {
  const end = before === undefined ? total : Math.max(0, Math.min(total, before));
  return { start: Math.max(0, end - messagesPerPage), end };
}

export interface TranscriptOptions {
  conversation: ConversationSummary & { messages: readonly ChatMessage[] };
  approvals: ReadonlyMap<string, ApprovalView>;
  csrf: SafeHtml;
  /** Show the messages before this index (an older page): not refreshed live. */
  before?: number;
}

/** The transcript list; on the latest page it refetches itself when the conversation or an approval changes. */
export function renderTranscript(options: TranscriptOptions): SafeHtml {
  const { conversation } = options;
  const { start, end } = transcriptWindow(conversation.messages.length, options.before);
  const latest = end === conversation.messages.length;
  const messages = conversation.messages.slice(start, end);
  const forkOf = conversation.channel === 'notifications' ? undefined : conversation.id;
  const live = latest
    ? // hx-sync replace: a refresh triggered while another is on its way aborts it, so an older answer that arrives
      // last (a busy server) never swaps a transcript without the newest message back in.
      html` hx-get="/chat/${conversation.id}/transcript" hx-trigger="sse:chat-refresh, live-refresh" data-live-events="approvals" hx-swap="outerHTML" hx-sync="this:replace"`
    : '';
  return html`<div id="transcript"${live}>
${start > 0 ? html`<p><a href="/chat/${conversation.id}?before=${start}">Earlier messages (${start})</a></p>` : ''}
${
  messages.length === 0
    ? html`<p class="muted">No messages yet.</p>`
    : html`<ol class="chat-log" aria-label="Messages">${messages.map((message) => renderMessage(message, options.approvals, options.csrf, forkOf))}</ol>`
}
${latest ? '' : html`<p><a href="/chat/${conversation.id}">Latest messages</a></p>`}
</div>`;
}

/** The turn being written, as the conversation's events tell it since its `turn_started`. */
export interface LiveTurn {
  open: boolean;
  turn?: string;
  text: string;
  steps: { tool: string; status: string; succeeded?: boolean }[];
  clarification?: { id: string; question: string };
  approvals: { id: string; title: string; summary: string; rendering?: string }[];
  /** The last `error` event's message (kept until the next turn starts). */
  error?: string;
}

export const idleTurn: LiveTurn = { open: false, text: '', steps: [], approvals: [] };

/**
 * One event folded into the live turn. `refresh` says the transcript changed (a message entered it, a turn ended or
 * failed): the page refetches it.
 */
export function foldChatEvent(state: LiveTurn, event: ChatEvent): { state: LiveTurn; refresh: boolean } {
  const text = (value: unknown) => (typeof value === 'string' ? value : '');
  switch (event.type) {
    case 'turn_started':
      return { state: { open: true, turn: text(event.turn), text: '', steps: [], approvals: [] }, refresh: false };
    case 'token': {
      if (event.restart === true) return { state: { ...state, text: '' }, refresh: false };
      const next = state.text + text(event.text);
      return {
        state: { ...state, text: next.length > maxLiveChars * 2 ? next.slice(-maxLiveChars) : next },
        refresh: false,
      };
    }
    case 'step': {
      const step = {
        tool: text(event.tool) || 'a tool',
        status: text(event.status),
        ...(typeof event.succeeded === 'boolean' ? { succeeded: event.succeeded } : {}),
      };
      const steps = [...state.steps];
      const last = steps.at(-1);
      if (last && last.tool === step.tool && last.status === 'started' && step.status === 'finished') steps.pop();
      steps.push(step);
      return { state: { ...state, steps: steps.slice(-20) }, refresh: false };
    }
    case 'clarification':
      return {
        state: { ...state, clarification: { id: text(event.id), question: text(event.question) } },
        refresh: false,
      };
    case 'approval': {
      const id = text(event.id);
      if (state.approvals.some((approval) => approval.id === id)) return { state, refresh: false };
      const rendering = text(event.rendering);
      const approval = {
        id,
        title: text(event.title),
        summary: text(event.summary),
        ...(rendering === '' ? {} : { rendering }),
      };
      return { state: { ...state, approvals: [...state.approvals, approval].slice(-10) }, refresh: false };
    }
    case 'error':
      return { state: { ...state, error: text(event.message) || 'the turn failed' }, refresh: true };
    case 'message': {
      const message = event.message as { role?: unknown } | undefined;
      // A message of the owner answers the question asked; a reply written ends what streams (turn_done follows).
      if (message?.role === 'user') {
        const { clarification: _answered, ...rest } = state;
        return { state: rest, refresh: true };
      }
      return { state: { ...idleTurn, ...(state.error ? { error: state.error } : {}) }, refresh: true };
    }
    case 'turn_done':
      return { state: idleTurn, refresh: true };
    default:
      return { state, refresh: false };
  }
}

/** The events of the turn still open at the end of `events`, folded (an idle turn when the last one is done). */
export function openTurn(events: readonly ChatEvent[]): LiveTurn {
  let start = -1;
  for (let index = events.length - 1; index >= 0; index -= 1) {
    const type = events[index]?.type;
    if (type === 'turn_done') break;
    if (type === 'turn_started') {
      start = index;
      break;
    }
  }
  let state = idleTurn;
  if (start === -1) {
    // No open turn; an error after the last one is still worth saying.
    const last = events.at(-1);
    return last?.type === 'error' ? foldChatEvent(state, last).state : state;
  }
  for (const event of events.slice(start)) state = foldChatEvent(state, event).state;
  return state;
}

/** The live part of a conversation page: the reply being written, its steps, a question, approvals, an error. */
export function renderLiveTurn(state: LiveTurn, csrf: SafeHtml | undefined): SafeHtml {
  const error = state.error ? html`<p class="notice bad">The reply ran into a problem: ${state.error}</p>` : '';
  if (!state.open) return html`${error}`;
  const shown = state.text.length > maxLiveChars ? `…${state.text.slice(-maxLiveChars)}` : state.text;
  const steps = state.steps.map((step) => {
    const how =
      step.status === 'started'
        ? '…'
        : step.succeeded === false
          ? ' failed'
          : step.status === 'finished'
            ? ' done'
            : '';
    return html`<li><code>${step.tool}</code>${how}</li>`;
  });
  return html`<div class="message assistant streaming">
<p class="meta">Assistant · <span role="status">${state.clarification ? 'waiting for your answer' : 'writing a reply…'}</span></p>
${shown === '' ? '' : html`<div class="chat-text">${shown}</div>`}
${steps.length > 0 ? html`<ul class="chat-live-steps" aria-label="Tool steps">${steps}</ul>` : ''}
${
  state.clarification
    ? html`<div class="chat-question"><p><strong>Question:</strong> ${state.clarification.question}</p><p class="muted">Your next message answers it.</p></div>`
    : ''
}
${state.approvals.map((approval) => renderApproval({ ...approval, state: 'announced' }, csrf))}
</div>${error}`;
}
