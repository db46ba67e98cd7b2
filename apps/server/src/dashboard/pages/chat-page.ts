import { randomBytes } from 'node:crypto';
import { readApproval } from '@assistant/actions';
import { type ChatEvent, type ChatMessage, type ChatService, chatModes, parseChatMode } from '@assistant/chat';
import { AssistantError } from '@assistant/errors';
import type { FastifyRequest } from 'fastify';
import type { AssistantServer } from '../../server-type.ts';
import type { DashboardContext } from '../dashboard-context.ts';
import { dashboardRoute, formField, queryField, redirectAfterPost } from '../dashboard-route.ts';
import { html, type SafeHtml } from '../html.ts';
import { csrfField, sendFragment, sendPage, timeTag } from '../layout.ts';
import {
  type ApprovalView,
  foldChatEvent,
  type LiveTurn,
  mentionedApprovals,
  openTurn,
  renderLiveTurn,
  renderTranscript,
  transcriptWindow,
} from './chat-view.ts';

/** Conversations made in the dashboard are the owner's: it answers only to the login or the API token. */
const dashboardChannel = 'dashboard';
const dashboardPeer = 'owner';
const conversationsPerPage = 50;
/** How much of the end of a conversation's event log is read to find the turn still open. */
const tailBytes = 256 * 1024;
/** At most this often a client gets the reply being written again (the whole of it, so a lost push loses nothing). */
const livePushMs = 100;

const conversationIdPattern = /^[a-z0-9][a-z0-9-]{0,63}$/;

function conversationId(request: FastifyRequest): string {
  const id = (request.params as { id?: string }).id ?? '';
  if (!conversationIdPattern.test(id)) throw new AssistantError('NOT_FOUND', 'No such conversation');
  return id;
}

/** The events of the turn still open (from the last `turn_started` in the log's tail up to `end`), folded. */
async function currentTurn(chat: ChatService, id: string, end: number): Promise<LiveTurn> {
  const { entries } = await chat.events.read(id, Math.max(0, end - tailBytes));
  const events: ChatEvent[] = entries.filter((entry) => entry.offset <= end).map((entry) => entry.event);
  return openTurn(events);
}

/** The approvals the shown messages mention, read from their notes. */
async function approvalViews(
  context: DashboardContext,
  messages: readonly ChatMessage[],
): Promise<Map<string, ApprovalView>> {
  const views = new Map<string, ApprovalView>();
  for (const id of mentionedApprovals(messages)) {
    try {
      const approval = await readApproval(context.notes, id);
      views.set(id, approval ? { id, state: 'found', approval } : { id, state: 'missing' });
    } catch (error) {
      views.set(id, { id, state: 'broken', problem: error instanceof Error ? error.message : String(error) });
    }
  }
  return views;
}

/** The message form: a fresh client id each time it is drawn, so a double submit is one message. */
function messageForm(request: FastifyRequest, id: string, notice?: string): SafeHtml {
  return html`<form id="message-form" class="chat-form" method="post" action="/chat/${id}" hx-post="/chat/${id}" hx-target="this" hx-swap="outerHTML">
${csrfField(request)}
<input type="hidden" name="client_id" value="${`web-${randomBytes(12).toString('base64url')}`}">
<div class="field"><label for="message-text">Message</label>
<textarea id="message-text" name="text" rows="3" required maxlength="32768" data-submit-on-ctrl-enter aria-describedby="message-hint"></textarea>
<p id="message-hint" class="muted small">Ctrl+Enter (⌘+Enter) sends.</p></div>
<div class="actions"><button type="submit">Send message</button>
${notice ? html`<span class="muted" role="status">${notice}</span>` : ''}</div>
</form>`;
}

/** `/chat` (conversations, a new one) and `/chat/:id` (the transcript, sending, the reply streaming in live). */
export function registerChatPage(app: AssistantServer, context: DashboardContext): void {
  // The per-client live topic: `/live?chat=<id>` follows the conversation's event log from where it is now, and
  // pushes the reply being written (`chat-live`, HTML for sse-swap) and `chat-refresh` when the transcript changed.
  context.live.registerTopic('chat', async ({ param, send, signal }) => {
    const chat = context.chat();
    await chat.get(param);
    const end = await chat.end(param);
    let state = await currentTurn(chat, param, end);
    let timer: NodeJS.Timeout | undefined;
    const push = () => {
      timer = undefined;
      send('chat-live', renderLiveTurn(state, undefined).toString());
    };
    const schedule = () => {
      timer ??= setTimeout(push, livePushMs);
    };
    // What happened between drawing the page and this connection (or while it was away) is caught up at once.
    push();
    send('chat-refresh', param);
    try {
      for await (const entry of chat.follow(param, { fromOffset: end, signal })) {
        const folded = foldChatEvent(state, entry.event);
        state = folded.state;
        if (folded.refresh) {
          clearTimeout(timer);
          push();
          send('chat-refresh', param);
        } else schedule();
      }
    } finally {
      clearTimeout(timer);
    }
  });

  dashboardRoute(app, {
    method: 'GET',
    url: '/chat',
    handler: async (request, reply) => {
      // A page from the conversation index (never every note), from `cursor` (the "More" link of the page before).
      const cursor = queryField(request, 'cursor');
      const {
        chats: shown,
        broken,
        nextCursor,
      } = await context.chat().page({
        limit: conversationsPerPage,
        ...(cursor === undefined || cursor === '' ? {} : { cursor }),
      });
      const rows = shown.map(
        (conversation) => html`<tr>
<th scope="row"><a href="/chat/${conversation.id}">${conversation.title || conversation.id}</a></th>
<td>${conversation.channel}</td><td>${conversation.mode}</td><td>${timeTag(conversation.updated)}</td></tr>`,
      );
      const body = html`<section aria-labelledby="new-conversation" class="card">
<h2 id="new-conversation">New conversation</h2>
<form method="post" action="/chat" class="toolbar">${csrfField(request)}
<label for="chat-title">Title (optional)<input id="chat-title" name="title" type="text" maxlength="200"></label>
<label for="chat-mode">Mode<select id="chat-mode" name="mode">${chatModes.map((mode) => html`<option value="${mode}">${mode}</option>`)}</select></label>
<button type="submit">Start conversation</button>
</form></section>
<section aria-labelledby="conversations"><h2 id="conversations">Conversations</h2>
${
  rows.length === 0
    ? html`<p class="muted">No conversation yet.</p>`
    : html`<div class="table-wrap"><table><caption class="visually-hidden">Conversations, newest first</caption>
<thead><tr><th scope="col">Title</th><th scope="col">Channel</th><th scope="col">Mode</th><th scope="col">Updated</th></tr></thead>
<tbody>${rows}</tbody></table></div>`
}
${
  cursor || nextCursor
    ? html`<nav class="pager" aria-label="Pages of conversations">${cursor ? html`<a href="/chat">Newest</a>` : ''}${nextCursor ? html`<a href="/chat?cursor=${encodeURIComponent(nextCursor)}">More (older)</a>` : ''}</nav>`
    : ''
}
${broken.length > 0 ? html`<p class="notice warn">${broken.length} conversation note(s) cannot be read: ${broken.slice(0, 5).join('; ')}</p>` : ''}
</section>`;
      return sendPage(reply, { request, title: 'Chat', section: 'chat', body });
    },
  });

  dashboardRoute(app, {
    method: 'POST',
    url: '/chat',
    handler: async (request, reply) => {
      const title = (formField(request, 'title') ?? '').trim();
      if (title.length > 200 || /\p{Cc}/u.test(title)) {
        throw new AssistantError('BAD_REQUEST', 'A title is one line of at most 200 characters');
      }
      const mode = formField(request, 'mode');
      const created = await context.chat().create({
        channel: dashboardChannel,
        peer: dashboardPeer,
        ...(title === '' ? {} : { title }),
        ...(mode === undefined || mode === '' ? {} : { mode: parseChatMode(mode) }),
      });
      return redirectAfterPost(request, reply, `/chat/${created.id}`);
    },
  });

  const conversationPage = async (request: FastifyRequest) => {
    const id = conversationId(request);
    const chat = context.chat();
    const conversation = await chat.get(id);
    const beforeText = queryField(request, 'before');
    const before = beforeText === undefined || !/^\d{1,9}$/.test(beforeText) ? undefined : Number(beforeText);
    const { start, end } = transcriptWindow(conversation.messages.length, before);
    const approvals = await approvalViews(context, conversation.messages.slice(start, end));
    return { id, chat, conversation, before, approvals };
  };

  dashboardRoute(app, {
    method: 'GET',
    url: '/chat/:id/transcript',
    handler: async (request, reply) => {
      const { conversation, approvals } = await conversationPage(request);
      return sendFragment(reply, renderTranscript({ conversation, approvals, csrf: csrfField(request) }));
    },
  });

  dashboardRoute(app, {
    method: 'GET',
    url: '/chat/:id',
    handler: async (request, reply) => {
      const { id, chat, conversation, before, approvals } = await conversationPage(request);
      const csrf = csrfField(request);
      const turn = await currentTurn(chat, id, await chat.end(id));
      const notifications = conversation.channel === 'notifications';
      const problems = conversation.problems.map(
        (problem) => html`<li><code>${problem.path}:${problem.line}</code>: ${problem.message}</li>`,
      );
      const forkedFrom = conversation.forked_from
        ? html` · forked from <a href="/chat/${conversation.forked_from.conversation}#message-${conversation.forked_from.message}">${conversation.forked_from.conversation}</a>`
        : '';
      const body = html`<p class="muted">${conversation.channel} · mode ${conversation.mode} · started ${timeTag(conversation.created)}${forkedFrom} · <a href="/notes/${conversation.path}">the note</a> · <a href="/chat">all conversations</a></p>
${problems.length > 0 ? html`<div class="notice warn"><p>Parts of the note cannot be read and are skipped:</p><ul>${problems}</ul></div>` : ''}
${renderTranscript({ conversation, approvals, csrf, ...(before === undefined ? {} : { before }) })}
<div id="chat-live" class="chat-live" sse-swap="chat-live">${renderLiveTurn(turn, csrf)}</div>
${
  notifications
    ? html`<p class="notice">This conversation holds what waits for you (approvals, questions of tasks, failures); it takes no messages. Decide approvals with their buttons.</p>`
    : html`${messageForm(request, id)}
<form method="post" action="/chat/${id}/stop" class="chat-stop">${csrf}<button type="submit" class="secondary">Stop the reply being written</button></form>`
}`;
      return sendPage(reply, {
        request,
        title: conversation.title || conversation.id,
        section: 'chat',
        body,
        live: `/live?topics=approvals&chat=${encodeURIComponent(id)}`,
      });
    },
  });

  dashboardRoute(app, {
    method: 'POST',
    url: '/chat/:id',
    handler: async (request, reply) => {
      const id = conversationId(request);
      const text = formField(request, 'text') ?? '';
      if (text.trim() === '') throw new AssistantError('BAD_REQUEST', 'The message is empty');
      const clientId = formField(request, 'client_id');
      const posted = await context.chat().post(id, {
        text,
        ...(clientId === undefined || clientId === '' ? {} : { clientId: clientId.slice(0, 200) }),
      });
      if (request.headers['hx-request'] === 'true') {
        const notice = posted.duplicate ? 'Already sent.' : `Sent (${posted.delivery.replace('_', ' ')}).`;
        return sendFragment(reply, messageForm(request, id, notice));
      }
      return redirectAfterPost(request, reply, `/chat/${id}#message-form`);
    },
  });

  // "Fork from here" on a message: a new dashboard conversation with the messages up to it (docs/chat.md, "Forking").
  dashboardRoute(app, {
    method: 'POST',
    url: '/chat/:id/fork',
    handler: async (request, reply) => {
      const id = conversationId(request);
      const message = formField(request, 'message') ?? '';
      const fork = await context.chat().fork({
        conversation: id,
        message,
        channel: dashboardChannel,
        peer: dashboardPeer,
      });
      return redirectAfterPost(request, reply, `/chat/${fork.id}#message-form`);
    },
  });

  dashboardRoute(app, {
    method: 'POST',
    url: '/chat/:id/stop',
    handler: async (request, reply) => {
      const id = conversationId(request);
      const chat = context.chat();
      await chat.get(id);
      await chat.stop(id, 'stopped from the dashboard');
      return redirectAfterPost(request, reply, `/chat/${id}`);
    },
  });
}
